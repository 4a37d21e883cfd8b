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

from gpudra.kustomize.build import Build, Resource
from gpudra.workloads import WorkloadTable

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


def has_references(build: Build, r: Resource, upto: str) -> bool:
    """Whether a kustomization on `r`'s way up to `upto` (inclusive) configures claim name
    references."""
    for kfile in r.via:
        k = next((k for k in build.tree.kustomizations.values() if k.file == kfile), None)
        if k is not None and any(os.path.basename(c) == NAME_REFERENCES or
                                 "ResourceClaimTemplate" in _text(c) for c in k.configurations):
            return True
        if kfile == upto:
            break
    return False


def _text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return ""
