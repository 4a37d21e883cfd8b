"""Kubernetes releases gpudra can emit DRA objects for, and what each one offers.

gpudra writes objects for one target release at a time, because the request shape changed under
users' feet: `resource.k8s.io/v1beta1` (1.32) puts `deviceClassName`/`count` directly on the
request, v1beta2 (1.33) and v1 (1.34+) wrap them in `exactly:`. A flat request sent to a v1
apiserver is rejected by strict decoding and silently emptied by lenient clients, so the target
decides the shape, never a guess.

Facts: docs/dra-reference.md sections 1.1 (versions and serving), 5 (DRAExtendedResource) and 6
(feature gates), read from kubernetes/api, kubernetes/kubernetes feature-gate tables and the KEPs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpudra.dra.request_shapes import FLAT_VERSIONS
from gpudra.errors import UsageError

MIN_MINOR = 32
"""1.32 is the first release with structured parameters (`resource.k8s.io/v1beta1`)."""
MAX_MINOR = 37
"""The newest release whose API and feature gates gpudra has been checked against."""
DRA_DRIVER = "kubernetes-sigs/dra-driver-nvidia-gpu"
DRA_DRIVER_CHECKED = ("v0.4.1", "v0.5.0 (main 9593204)")
"""The NVIDIA DRA driver releases whose attributes gpudra's selectors and rules were read
from (docs/facts.md records each with its source)."""


def checked_against() -> str:
    """What `gpudra --version` says gpudra was checked against."""
    return (f"Kubernetes 1.{MIN_MINOR} to 1.{MAX_MINOR} (resource.k8s.io v1beta1, v1beta2, v1)\n"
            f"NVIDIA DRA driver {DRA_DRIVER}: {' and '.join(DRA_DRIVER_CHECKED)}\n")

_VERSION_RE = re.compile(
    r"^v?(?P<major>\d+)\.(?P<minor>\d+)(?:\.(?P<patch>\d+))?"
    r"(?:[-+][0-9A-Za-z.+-]*)?$"  # build/vendor suffix as in `kubectl version`: -gke.1200, +k3s1
)


@dataclass(frozen=True, slots=True)
class FeatureSupport:
    """Whether a DRA feature can be used on a target, and what the cluster admin must do for it.

    `available` means the API field exists in the target's served types; `default_on` means it
    works without touching feature gates. A field that is available but not on by default is
    dropped by the apiserver unless `gate` is enabled on the control plane.
    """

    feature: str
    available: bool
    gate: str | None
    stage: str | None  # "alpha", "beta", "GA"; None when not in the release
    default_on: bool
    note: str = ""


@dataclass(frozen=True, slots=True)
class _GateRow:
    stage: str
    default_on: bool
    locked: bool = False


# Per feature: the gate name, the first minor where the API field exists, the stage per minor
# (docs/dra-reference.md sections 5 and 6) and a note shown to users.
_GATES: dict[str, tuple[str, int, dict[int, _GateRow], str]] = {
    "firstAvailable": (
        "DRAPrioritizedList",
        33,
        {
            33: _GateRow("alpha", False),
            34: _GateRow("beta", True),
            35: _GateRow("beta", True),
            36: _GateRow("GA", True),
            37: _GateRow("GA", True, locked=True),
        },
        "prioritized list of subrequests (KEP-4816); at most 8 alternatives, no adminAccess",
    ),
    "extendedResourceName": (
        "DRAExtendedResource",
        34,
        {
            34: _GateRow("alpha", False),
            35: _GateRow("alpha", False),
            36: _GateRow("beta", True),
            37: _GateRow("GA", True, locked=True),
        },
        (
            "DeviceClass.spec.extendedResourceName lets unmodified nvidia.com/gpu pods run on "
            "DRA nodes (KEP-5004); with the gate off the apiserver drops the field"
        ),
    ),
    "adminAccess": (
        "DRAAdminAccess",
        MIN_MINOR,
        {
            32: _GateRow("alpha", False),
            33: _GateRow("alpha", False),
            34: _GateRow("beta", True),
            35: _GateRow("beta", True),
            36: _GateRow("GA", True, locked=True),
            37: _GateRow("GA", True, locked=True),
        },
        (
            "monitoring access to in-use devices (KEP-5018); from 1.33 the namespace also "
            "needs the label resource.kubernetes.io/admin-access: \"true\""
        ),
    ),
    # The gates plan's allocator models (kubernetes v1.37.2 pkg/features/kube_features.go).
    "allowMultipleAllocations": (
        "DRAConsumableCapacity",
        34,
        {
            34: _GateRow("alpha", False),
            35: _GateRow("alpha", False),
            36: _GateRow("beta", True),
            37: _GateRow("beta", True),
        },
        "consumable capacity (KEP-5075): devices shared by several claims, capacity requests",
    ),
    "sharedCounters": (
        "DRAPartitionableDevices",
        33,
        {
            33: _GateRow("alpha", False),
            34: _GateRow("alpha", False),
            35: _GateRow("alpha", False),
            36: _GateRow("beta", True),
            37: _GateRow("beta", True),
        },
        "partitionable devices (KEP-4815): devices that consume a pool's shared counters",
    ),
    "taints": (
        "DRADeviceTaints",
        33,
        {
            33: _GateRow("alpha", False),
            34: _GateRow("alpha", False),
            35: _GateRow("alpha", False),
            36: _GateRow("beta", True),
            37: _GateRow("GA", True),
        },
        "device taints and tolerations (KEP-5055)",
    ),
}

FEATURES: tuple[str, ...] = tuple(_GATES)


@dataclass(frozen=True, slots=True, order=True)
class TargetVersion:
    """One Kubernetes minor release between 1.32 and 1.37 (the major is always 1)."""

    minor: int

    def __post_init__(self) -> None:
        if not MIN_MINOR <= self.minor <= MAX_MINOR:
            raise UsageError(_out_of_range(f"1.{self.minor}"))

    @classmethod
    def parse(cls, text: str) -> TargetVersion:
        """Accept what users paste: "1.34", "v1.34", "1.34.2", "v1.34.2-gke.1200"."""
        match = _VERSION_RE.match(text.strip())
        if match is None:
            raise UsageError(
                f"{text!r} is not a Kubernetes version: write it as 1.34, v1.34 or 1.34.2"
            )
        if int(match["major"]) != 1:
            raise UsageError(_out_of_range(text.strip()))
        return cls(int(match["minor"]))

    @classmethod
    def all(cls) -> tuple[TargetVersion, ...]:
        return tuple(cls(minor) for minor in range(MIN_MINOR, MAX_MINOR + 1))

    def __str__(self) -> str:
        return f"1.{self.minor}"

    @property
    def resource_api_version(self) -> str:
        """The newest resource.k8s.io version the release has, i.e. the one users should write."""
        if self.minor == 32:
            return "resource.k8s.io/v1beta1"
        if self.minor == 33:
            return "resource.k8s.io/v1beta2"
        return "resource.k8s.io/v1"

    @property
    def flat_requests(self) -> bool:
        """v1beta1 puts deviceClassName/count/selectors directly on each request (no `exactly:`)."""
        return self.resource_api_version.rpartition("/")[2] in FLAT_VERSIONS

    @property
    def served_by_default(self) -> bool:
        """Before 1.34 no resource.k8s.io version is served until the admin enables it.

        1.32/1.33 need the DynamicResourceAllocation gate on every component plus
        `--runtime-config=resource.k8s.io/<version>=true` (dra-reference section 1.1).
        """
        return self.minor >= 34

    def supports(self, feature: str) -> FeatureSupport:
        """How `feature` (an API field name, see FEATURES) stands in this release."""
        try:
            gate, since, rows, note = _GATES[feature]
        except KeyError:
            raise UsageError(
                f"unknown DRA feature {feature!r}; known: {', '.join(FEATURES)}"
            ) from None
        row = rows.get(self.minor)
        if self.minor < since or row is None:
            return FeatureSupport(feature, False, gate, None, False, f"not in Kubernetes {self}")
        locked = " (locked on)" if row.locked else ""
        off = "" if row.default_on else f"; enable feature gate {gate}"
        return FeatureSupport(
            feature, True, gate, row.stage, row.default_on, f"{row.stage}{locked}{off}: {note}"
        )


def introduced(feature: str) -> TargetVersion:
    """The first release whose API has `feature` (see FEATURES)."""
    return TargetVersion(_GATES[feature][1])


OLDEST = TargetVersion(MIN_MINOR)


def live_target(minor: int, version_text: str) -> TargetVersion:
    """The release a command that writes for a live cluster targets when not told otherwise:
    the cluster's own, or the newest gpudra knows for a newer cluster (it serves what that one
    does). An older cluster is a usage error: what gpudra writes would not exist there."""
    if minor < MIN_MINOR:
        raise UsageError(f"the cluster runs Kubernetes {version_text}, older than the 1.{MIN_MINOR} "
                         f"gpudra writes for; pass --target-version to write for another release")
    return TargetVersion(min(minor, MAX_MINOR))
DEFAULT = TargetVersion(MAX_MINOR)  # the newest release checked: every command's default target
SUPPORTED_RANGE = f"{OLDEST}..{DEFAULT}"  # as --target-version shows it


def _out_of_range(text: str) -> str:
    return (
        f"Kubernetes {text} is not a supported target: gpudra targets 1.{MIN_MINOR} to "
        f"1.{MAX_MINOR} (DRA structured parameters start at 1.{MIN_MINOR}; 1.{MAX_MINOR} is "
        f"the newest release checked)"
    )
