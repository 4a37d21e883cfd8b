"""Round-trip edits of kustomization files: only the edited keys' lines change."""

from __future__ import annotations

import difflib

import pytest
import yaml

from gpudra.kustomize.kfile import KustomizationEdit, edit_kustomization
from gpudra.yamledit.textedit import LayoutError

COUNT = {"target": {"group": "resource.k8s.io", "kind": "ResourceClaimTemplate", "name": "t"},
         "patch": "- op: add\n  path: /spec/spec/devices/requests/0/exactly/count\n  value: 4"}


def _changed(old: str, new: str) -> list[str]:
    return [line for line in difflib.ndiff(old.splitlines(), new.splitlines())
            if line.startswith("- ")]


CASES = {
    "mixed-sequence-styles": (
        ("# overlay\nnamespace: \"prod\"  # quoted\nresources:\n  - ../../base\n"
         "images:\n- name: x\n  newTag: \"1.0\"\npatches:\n  - path: a.yaml   # first\n"),
        KustomizationEdit(add_patches=(COUNT,))),
    "new-patches-key": ("resources:\n- ../base\n", KustomizationEdit(add_patches=(COUNT,))),
    "flow-patches": ("resources: [../base]\npatches: [{path: a.yaml}]\n",
                     KustomizationEdit(add_patches=(COUNT,))),
    "inline-edit-keeps-comments": (
        ("resources:\n- ../base\npatches:\n# keep me\n- patch: |-\n    - op: replace\n"
         "      path: /spec/replicas\n      value: 2\n  target: {kind: Deployment}\n"),
        KustomizationEdit(inline=((("patches", 0), ("- op: replace\n  path: /spec/replicas\n"
                                                     "  value: 3")),))),
    "remove-last-entry": (("resources:\n- ../base\npatchesJson6902:\n- path: ops.yaml\n"
                           "  target: {kind: Job, name: j}\nnamePrefix: x-\n"),
                          KustomizationEdit(remove=(("patchesJson6902", 0),))),
    "configurations": ("resources:\n    - a.yaml\n", KustomizationEdit(
        add_configurations=("gpudra-name-references.yaml",))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_edit_changes_only_edited_lines(name: str) -> None:
    old, edit = CASES[name]
    new = edit_kustomization(old.encode(), edit).decode()
    data = yaml.safe_load(new)
    before = yaml.safe_load(old)
    removed = _changed(old, new)
    if edit.add_patches:
        assert data["patches"][-1]["patch"] == COUNT["patch"]
        assert data["patches"][:-1] == (before.get("patches") or [])
        assert all("patches" in line or "path: a.yaml" in line for line in removed), removed
    if edit.inline:
        assert data["patches"][0]["patch"].endswith("value: 3")
        assert "# keep me" in new
    if edit.remove:
        assert "patchesJson6902" not in data and data["namePrefix"] == "x-"
    if edit.add_configurations:
        assert data["configurations"] == ["gpudra-name-references.yaml"]
        assert not removed
    for key in before:
        if key not in ("patches", "patchesJson6902", "configurations"):
            assert data[key] == before[key]


def test_crlf_and_bom_are_kept() -> None:
    old = "\ufeffresources:\r\n- ../base\r\n".encode()
    new = edit_kustomization(old, KustomizationEdit(add_patches=(COUNT,)))
    assert new.startswith(b"\xef\xbb\xbf")
    assert b"\n" not in new.replace(b"\r\n", b"")


def test_a_layout_that_cannot_be_kept_is_refused() -> None:
    with pytest.raises(LayoutError):
        edit_kustomization(b"{resources: [../base]}\n", KustomizationEdit(add_patches=(COUNT,)))
