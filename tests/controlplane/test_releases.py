"""Each release's module file pins one Kubernetes release throughout (k8s.io/kubernetes and
every staging module it replaces), so a binary named for a release is that release. No Go
needed: these read the module files."""

from __future__ import annotations

import re

import pytest

from tests.controlplane import build
from tests.controlplane.releases import RELEASES, Release

_REPLACED = re.compile(r"^\s*(k8s\.io/\S+) => k8s\.io/\S+ (v\S+)\s*$", re.MULTILINE)


@pytest.mark.parametrize("release", RELEASES, ids=lambda r: r.name)
def test_the_module_file_pins_the_release_everywhere(release: Release) -> None:
    kubernetes = build.kubernetes_version(release)
    major, minor, patch = kubernetes.lstrip("v").split(".")
    assert f"{major}.{minor}" == release.name
    text = (build.SOURCE / release.modfile).read_text()
    replaced = dict(_REPLACED.findall(text))
    assert replaced, f"{release.modfile} replaces no staging module"
    assert {module: version for module, version in replaced.items()
            if version != f"v0.{minor}.{patch}"} == {}
    assert (build.SOURCE / release.sumfile).is_file()


@pytest.mark.parametrize("release", [r for r in RELEASES if r.resource_version != "v1"],
                         ids=lambda r: r.name)
def test_a_beta_release_turns_dra_on_and_serves_the_version_the_tests_write(
        release: Release) -> None:
    # v1 is served by default from 1.34; an older release serves only what --runtime-config
    # names, and only with the DynamicResourceAllocation gate on
    served = {entry.partition("=")[0].rpartition("/")[2]
              for entry in release.runtime_config.split(",")}
    assert release.resource_version in served
    assert "DynamicResourceAllocation=true" in release.feature_gates.split(",")


def test_releases_are_built_and_cached_apart() -> None:
    assert len({r.name for r in RELEASES}) == len({r.modfile for r in RELEASES}) == len(RELEASES)
