"""The official client is imported only to talk to a cluster: `gpudra --version` and file
audits never pay for it (about 0.5 s and 35 MB). Nor does a one-file audit of a plain Pod pay
for the machinery only some trees need: the kustomize model (a tree with a kustomization),
the CEL checker (a DRA object with a selector), convert (issue 18: start-up)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MANIFEST = """\
apiVersion: v1
kind: Pod
metadata: {name: trainer}
spec:
  containers:
    - name: main
      image: pytorch
      resources: {limits: {nvidia.com/gpu: 1}}
"""

PROBE = """
import json, sys
import gpudra.cli
sys.argv = ["gpudra", *sys.argv[1:]]
try:
    gpudra.cli.main()
except SystemExit as exit:
    code = exit.code
else:
    code = 0
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("kubernetes", "urllib3"))
print(json.dumps({"code": code, "heavy": heavy, "modules": sorted(sys.modules)}),
      file=sys.stderr)
"""


def run_cli(*args: str) -> dict:
    result = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=REPO, text=True,
                            capture_output=True, timeout=120, check=False)
    return json.loads(result.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("args", [("--version",), ("audit", "{manifest}", "-o", "json")],
                         ids=["version", "file-audit"])
def test_no_kubernetes_import(tmp_path: Path, args: tuple[str, ...]) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(MANIFEST)
    outcome = run_cli(*(arg.format(manifest=manifest) for arg in args))
    assert outcome["heavy"] == []
    assert outcome["code"] == (1 if "audit" in args else 0)  # the audit did find the GPU


# Loaded only when the tree or the command needs them.
ON_DEMAND = ("gpudra.kustomize.build", "gpudra.kustomize.tree", "gpudra.kustomize.patches",
             "gpudra.dra.selector_check", "gpudra.dra.cel_lint", "gpudra.dra.cel",
             "gpudra.convert", "gpudra.plan", "gpudra.preflight", "gpudra.yamledit", "rich",
             "hashlib")


def test_a_one_file_audit_loads_only_what_it_needs(tmp_path: Path) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(MANIFEST)
    outcome = run_cli("audit", str(manifest), "-o", "json")
    assert outcome["code"] == 1
    loaded = [m for m in outcome["modules"]
              if any(m == name or m.startswith(name + ".") for name in ON_DEMAND)]
    assert loaded == []


def test_importing_the_cluster_package_is_cheap() -> None:
    code = ("import sys, gpudra.cluster; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('kubernetes', 'urllib3')))")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, text=True,
                            capture_output=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"


def test_convert_check_leaves_out_what_only_writing_needs(tmp_path: Path) -> None:
    """hashlib maps OpenSSL's libcrypto (3.4 MB): the journal of a convert that writes needs
    it, a --check (the CI gate) does not (issue 18: convert's memory)."""
    for name in ("a", "b"):  # two files written: a journal
        (tmp_path / f"{name}.yaml").write_text(MANIFEST.replace("trainer", name))
    checked = run_cli("convert", str(tmp_path), "--check")
    assert checked["code"] == 1  # the Pods would change
    assert "hashlib" not in checked["modules"]
    written = run_cli("convert", str(tmp_path))
    assert written["code"] == 0
    assert "hashlib" in written["modules"]


OVERLAY_MACHINERY = ("gpudra.convert.overlays", "gpudra.convert.treeview",
                     "gpudra.kustomize.build", "gpudra.kustomize.patches")


def test_the_overlay_planner_is_loaded_for_kustomize_trees_only(tmp_path: Path) -> None:
    (tmp_path / "pod.yaml").write_text(MANIFEST)
    plain = run_cli("convert", str(tmp_path), "--check")
    assert plain["code"] == 1
    assert [m for m in OVERLAY_MACHINERY if m in plain["modules"]] == []
    (tmp_path / "kustomization.yaml").write_text("resources:\n- pod.yaml\n")
    kustomized = run_cli("convert", str(tmp_path), "--check")
    assert kustomized["code"] == 1
    assert [m for m in OVERLAY_MACHINERY if m in kustomized["modules"]] == list(OVERLAY_MACHINERY)


# Not on `gpudra --help`'s start-up: the catalogue's records (2 ms) load when a catalogue is
# listed, the diagnostic record's (2 ms) when a finding is viewed as one, base64 when
# redaction meets a `Basic` word (issue 35: no command slower by 5%).
@pytest.mark.parametrize("module", ["gpudra.catalogue", "gpudra.results.diagnostic", "base64"])
def test_help_does_not_load(module: str) -> None:
    outcome = run_cli("--help")
    assert outcome["code"] == 0
    assert module not in outcome["modules"]


def test_listing_a_catalogue_loads_it() -> None:
    outcome = run_cli("rules", "-o", "json")
    assert outcome["code"] == 0
    assert "gpudra.catalogue" in outcome["modules"]
