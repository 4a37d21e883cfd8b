"""The check catalogue: every check is registered, documented, and rendered into docs/checks.md;
the resource.k8s.io serving table matches the release schemas."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpudra.dra.served import CORE_KINDS, GROUP, availability, versions_with_kind
from gpudra.dra.versions import TargetVersion
from gpudra.preflight import catalogue
from gpudra.preflight.docs import checks_markdown
from gpudra.preflight.check_records import Tier


def test_catalogue_has_every_tier() -> None:
    checks = catalogue()
    assert [i.id for i in checks.in_tier(Tier.CLUSTER)] == [f"CLUSTER{n:03d}" for n in range(1, 17)]
    assert [i.id for i in checks.in_tier(Tier.MANIFESTS)] == [f"MANIFEST{n:03d}" for n in
                                                              range(1, 5)]
    assert checks.in_tier(Tier.NODE)



def test_the_device_plugin_matcher_loads_no_preflight_module() -> None:
    # The audit's cluster rules and the cluster source use the device-plugin matcher; it sits
    # below preflight, so an audit never loads the preflight checks (about 100 ms at start-up).
    code = ("import sys\n"
            "from gpudra.k8s.plugin_daemonsets import device_plugin_daemonsets\n"
            "print(sorted(m for m in sys.modules if m.startswith('gpudra.preflight')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("info", list(catalogue().values()), ids=lambda i: i.id)
def test_every_check_documents_its_outcomes(info) -> None:
    assert info.title and info.summary and len(info.explanation) > 200
    assert "**Why it matters.**" in info.explanation
    assert "**Outcomes.**" in info.explanation
    outcomes_part = info.explanation.split("**Outcomes.**", 1)[1]
    for outcome in info.outcomes:
        assert f"*{outcome.value}*" in outcomes_part, (info.id, outcome)
    assert "**Fix.**" in info.explanation


def test_checks_markdown_links_resolve_to_headings() -> None:
    text = checks_markdown()
    headings = set(re.findall(r"^### (\S+)$", text, flags=re.M))
    assert headings == set(catalogue())
    for info in catalogue().values():
        assert f"](#{info.docs_anchor})" in text
        # GitHub makes `### CLUSTER001` into the anchor `cluster001`, the one docs_url uses
        assert info.docs_url == f"docs/checks.md#{info.id.lower()}"
    assert text.endswith("\n") and not text.endswith("\n\n")
    assert text.index("## Cluster checks") < text.index("## Node checks") < \
        text.index("## Manifest checks")


def test_checks_markdown_of_a_subset() -> None:
    one = catalogue()["CLUSTER001"]
    text = checks_markdown([one])
    assert "### CLUSTER001" in text and "Node checks" not in text


def test_serving_table_matches_the_release_schemas() -> None:
    """gpudra/dra/served.py against kubernetes-validate's strict schemas of each release."""
    kv = pytest.importorskip("kubernetes_validate")
    root = Path(kv.__file__).parent / "kubernetes-json-schema"
    for target in TargetVersion.all():
        directory = root / f"v1.{target.minor}.0-local-strict"
        if not directory.is_dir():
            continue
        in_schemas: set[tuple[str, str]] = set()
        for path in directory.glob("*-resource-*.json"):
            for gvk in json.loads(path.read_text()).get("x-kubernetes-group-version-kind", []):
                if gvk["group"] == GROUP and not gvk["kind"].endswith("List"):
                    in_schemas.add((gvk["version"], gvk["kind"]))
        kinds = {kind for _, kind in in_schemas}
        in_table = {(v, kind) for kind in kinds for v in versions_with_kind(target, kind)}
        assert in_table == in_schemas, target


@pytest.mark.parametrize(("minor", "version", "default", "flag"), [
    (32, "v1beta1", False, "--runtime-config=resource.k8s.io/v1beta1=true"),
    (33, "v1beta2", False, "--runtime-config=resource.k8s.io/v1beta2=true"),
    (34, "v1", True, None),
    (36, "v1beta1", False, "--runtime-config=resource.k8s.io/v1beta1=true"),
])
def test_availability_of_core_kinds(minor: int, version: str, default: bool,
                                    flag: str | None) -> None:
    for kind in CORE_KINDS:
        found = availability(TargetVersion(minor), f"{GROUP}/{version}", kind)
        assert found.exists and found.served_by_default is default
        assert found.runtime_config == flag
        assert ("DynamicResourceAllocation" in found.gates) is (minor < 34)


def test_availability_rejects_other_groups() -> None:
    with pytest.raises(ValueError):
        availability(TargetVersion(34), "apps/v1", "Deployment")


def test_docs_checks_md_is_current() -> None:
    committed = Path(__file__).resolve().parents[2] / "docs" / "checks.md"
    assert committed.read_text() == checks_markdown(), \
        "docs/checks.md is stale: regenerate it from gpudra.preflight.docs.checks_markdown()"
