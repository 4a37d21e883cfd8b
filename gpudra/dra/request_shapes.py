"""The shape of a DeviceRequest in each `resource.k8s.io` version: the one table that audit
rules, convert's repairs, the planner and TargetVersion read (docs/dra-reference.md section 2)."""

from __future__ import annotations

# Versions whose DeviceRequest carries the class, count and selectors itself (1.31-1.33 shapes),
# and those that wrap them in `exactly:` (1.33+ v1beta2, 1.34+ v1); the fields that move.
FLAT_VERSIONS = frozenset({"v1alpha3", "v1beta1"})
WRAPPED_VERSIONS = frozenset({"v1beta2", "v1"})
EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess",
                "tolerations", "capacity")
