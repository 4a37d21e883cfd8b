"""Claim references by name, and whether kustomize will rename them.

kustomize's built-in name-reference table (kustomize v5.5.0) does not know
`resourceClaimTemplateName` or `resourceClaimName`: `namePrefix`/`nameSuffix` rename a
ResourceClaimTemplate but leave the pods pointing at its old name. A `configurations:` file
with nameReference entries fixes that; kustomize merges a base's configurations into the
overlays that include it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from gpudra.errors import UnreadableInputError
from gpudra.kustomize.build import Resource
from gpudra.kustomize.tree import Tree
from gpudra.sources.file_bytes import read_regular
from gpudra.k8s.workloads import WorkloadTable

NAME_REFERENCES = "gpudra-name-references.yaml"
REFERENCE_FIELDS = (("resourceClaimTemplateName", "ResourceClaimTemplate"),
                    ("resourceClaimName", "ResourceClaim"))


def reference_specs(r: Resource, data: Mapping[str, Any],
                    table: WorkloadTable) -> list[tuple[str, str, str, str, str]]:
    """(claim kind, workload group, workload kind, fieldSpec path, referenced name) for each
    claim reference in the object's pod specs."""
    out = []
    for spec in table.pod_specs(r.group, r.kind, data):
        for entry in spec.data.get("resourceClaims") or []:
            if not isinstance(entry, Mapping):
                continue
            for field_name, kind in REFERENCE_FIELDS:
                if entry.get(field_name):
                    path = "/".join(str(p) for p in spec.path if not isinstance(p, int))
                    path = "/".join(x for x in (path, "resourceClaims", field_name) if x)
                    out.append((kind, r.group, r.kind, path, str(entry[field_name])))
    return list(dict.fromkeys(out))


class ReferenceConfigs:
    """Which kustomizations of a tree configure claim name references (gpudra's file, or a
    configurations file that mentions ResourceClaimTemplate). Found once, on the first
    question: most trees rename nothing and never ask."""

    def __init__(self, tree: Tree) -> None:
        self._tree = tree
        self._files: frozenset[str] | None = None

    def has_references(self, r: Resource, upto: str) -> bool:
        """Whether a kustomization on `r`'s way up to `upto` (inclusive) configures claim name
        references."""
        if self._files is None:
            self._files = frozenset(
                k.file for k in self._tree.kustomizations.values()
                if any(os.path.basename(c) == NAME_REFERENCES or "ResourceClaimTemplate" in _text(c)
                       for c in k.configurations))
        for kfile in r.via:
            if kfile in self._files:
                return True
            if kfile == upto:
                break
        return False


def _text(path: str) -> str:
    try:
        return read_regular(path).decode("utf-8")
    except (OSError, UnicodeDecodeError, UnreadableInputError):
        return ""
