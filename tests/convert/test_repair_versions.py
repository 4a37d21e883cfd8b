"""repair_dra_object moves an object to the target's resource.k8s.io version only when the
target's API has every field the object uses; otherwise it leaves the object and names the
field (issue 32 item 8: what the 1.33 API server refuses, tests/controlplane/
test_dry_run_1_33.py)."""

from __future__ import annotations

from typing import Any

import pytest

from gpudra.convert.repair import repair_dra_object
from gpudra.dra.versions import TargetVersion
from gpudra.yamledit.ops import Replace


def _class(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": "c"},
            "spec": {"selectors": [{"cel": {"expression": "true"}}], **spec}}


def _template(request: dict[str, Any], version: str = "v1") -> dict[str, Any]:
    return {"apiVersion": f"resource.k8s.io/{version}", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "t", "namespace": "ml"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", **request}]}}}}


EXACT = {"deviceClassName": "gpu.nvidia.com"}
CAPACITY = {"exactly": {**EXACT, "capacity": {"requests": {"memory": "40Gi"}}}}
TOLERATIONS = {"exactly": {**EXACT, "tolerations": [{"key": "k", "operator": "Exists"}]}}
FIRST_AVAILABLE = {"firstAvailable": [{"name": "a", **EXACT}]}

# (case, object, target minor, the apiVersion written or None when left, what is said if left)
CASES = [
    ("extended resource, 1.33", _class(extendedResourceName="nvidia.com/gpu"), 33, None,
     "has no spec.extendedResourceName"),
    ("extended resource, 1.32", _class(extendedResourceName="nvidia.com/gpu"), 32, None,
     "has no spec.extendedResourceName"),
    ("extended resource, 1.34 keeps v1", _class(extendedResourceName="nvidia.com/gpu"), 34,
     "resource.k8s.io/v1", None),
    ("plain class, 1.33", _class(), 33, "resource.k8s.io/v1beta2", None),
    ("plain template, 1.32", _template({**EXACT, "count": 1}), 32, "resource.k8s.io/v1beta1",
     None),
    ("capacity request, 1.33", _template(CAPACITY), 33, None, "has no request field capacity"),
    ("firstAvailable, 1.33: alpha, off", _template(FIRST_AVAILABLE), 33, None,
     "has request field firstAvailable only behind the alpha feature gate DRAPrioritizedList"),
    ("firstAvailable, 1.32", _template(FIRST_AVAILABLE), 32, None,
     "has no request field firstAvailable"),
    ("tolerations, 1.33: alpha, off", _template(TOLERATIONS), 33, None,
     "has request field tolerations only behind the alpha feature gate DRADeviceTaints"),
    ("tolerations, 1.32", _template(TOLERATIONS), 32, None, "has no request field tolerations"),
    ("capacity in an alternative, 1.33",
     _template({"firstAvailable": [{"name": "a", **EXACT,
                                    "capacity": {"requests": {"memory": "1Gi"}}}]}), 33, None,
     "has no request field capacity"),
    # moving up within a release changes no gate: the field works in v1 as it did in v1beta2
    ("v1beta2 capacity up to 1.37", _template(CAPACITY, "v1beta2"), 37, "resource.k8s.io/v1",
     None),
    ("v1beta2 tolerations up to 1.34 (alpha there)", _template(TOLERATIONS, "v1beta2"), 34,
     "resource.k8s.io/v1", None),
]


@pytest.mark.parametrize(("obj", "minor", "written", "said"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_moved_only_where_the_target_has_every_field(obj: dict[str, Any], minor: int,
                                                    written: str | None,
                                                    said: str | None) -> None:
    repair = repair_dra_object(obj, (), TargetVersion(minor))
    versions = [op.value for op in repair.ops
                if isinstance(op, Replace) and op.path == ("apiVersion",)]
    if said is None:  # moved, or already in a version the target serves by default
        assert (versions[0] if versions else obj["apiVersion"]) == written
        assert not [line for line in repair.left if "not done" in line]
    else:  # left as it is, the field named
        assert written is None and repair.ops == []
        [line] = repair.left
        assert f"not done: Kubernetes 1.{minor} " in line and said in line
