"""Which `resource.k8s.io` versions and kinds a Kubernetes release has, which it serves by
default, and what an admin must turn on for the others.

Facts:
- Versions in each release and serving: docs/dra-reference.md section 1.1 (kubernetes/api tags,
  KEP-4381 `kep.yaml` and README: "Only the v1 version is served by default"; beta API groups are
  off by default since KEP-3136). 1.32 and 1.33 serve nothing until the `DynamicResourceAllocation`
  gate is on for every component and `--runtime-config` enables the version.
- Kinds per version per release: the strict OpenAPI schemas of kubernetes-validate 1.37.0
  (`x-kubernetes-group-version-kind` of each schema, one directory per release); the test suite
  compares this table with them when kubernetes-validate is installed.
- The NVIDIA DRA driver's prerequisites give the same 1.32/1.33 recipe (v1beta1 on 1.32; v1beta1
  and v1beta2 on 1.33): kubernetes-sigs/dra-driver-nvidia-gpu @ v0.4.1, docs/prerequisites.md.
- DeviceTaintRule gates: docs/dra-reference.md section 6 and facts-turn2 section 4 (DRADeviceTaints
  alpha 1.33-1.35; DRADeviceTaintRules alpha 1.35, beta off 1.36, GA on 1.37).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpudra.dra.versions import TargetVersion

GROUP = "resource.k8s.io"
CORE_KINDS = frozenset({"DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"})
DRA_GATE = "DynamicResourceAllocation"
DRA_COMPONENTS = "kube-apiserver, kube-controller-manager, kube-scheduler and every kubelet"


_TAINT = frozenset({"DeviceTaintRule"})
_POOL_STATUS = frozenset({"ResourcePoolStatusRequest"})

# minor -> version -> top-level kinds (List kinds left out).
_KINDS: dict[int, dict[str, frozenset[str]]] = {
    32: {"v1beta1": CORE_KINDS, "v1alpha3": CORE_KINDS},
    33: {"v1beta2": CORE_KINDS, "v1beta1": CORE_KINDS, "v1alpha3": CORE_KINDS | _TAINT},
    34: {"v1": CORE_KINDS, "v1beta2": CORE_KINDS, "v1beta1": CORE_KINDS, "v1alpha3": _TAINT},
    35: {"v1": CORE_KINDS, "v1beta2": CORE_KINDS, "v1beta1": CORE_KINDS, "v1alpha3": _TAINT},
    36: {"v1": CORE_KINDS, "v1beta2": CORE_KINDS | _TAINT, "v1beta1": CORE_KINDS,
         "v1alpha3": _TAINT | _POOL_STATUS},
    37: {"v1": CORE_KINDS | _TAINT, "v1beta2": CORE_KINDS | _TAINT, "v1beta1": CORE_KINDS,
         "v1alpha3": _TAINT | _POOL_STATUS},
}

_TAINT_GATES: dict[int, tuple[str, ...]] = {
    33: ("DRADeviceTaints",), 34: ("DRADeviceTaints",),
    35: ("DRADeviceTaints", "DRADeviceTaintRules"), 36: ("DRADeviceTaintRules",),
}


@dataclass(frozen=True, slots=True)
class ApiAvailability:
    """How one `apiVersion`/`kind` stands in one release."""

    api_version: str
    kind: str
    target: TargetVersion
    exists: bool
    served_by_default: bool
    runtime_config: str | None = None  # the kube-apiserver flag that serves the version
    gates: tuple[str, ...] = ()  # feature gates that must be on as well

    def how_to_enable(self) -> str:
        """What the admin must do before objects of this kind and version are accepted."""
        if self.served_by_default:
            return "nothing: served by default"
        if not self.exists:
            versions = ", ".join(f"{GROUP}/{v}" for v in versions_with_kind(self.target,
                                                                            self.kind))
            return f"not in Kubernetes {self.target}; use one of: {versions or 'none'}"
        steps = [f"start kube-apiserver with {self.runtime_config}"]
        if self.gates:
            steps.append(f"enable feature gate {', '.join(g + '=true' for g in self.gates)} "
                         f"on {DRA_COMPONENTS}")
        return " and ".join(steps)


def versions_with_kind(target: TargetVersion, kind: str) -> tuple[str, ...]:
    """The resource.k8s.io versions of `target` that define `kind`, newest first."""
    return tuple(v for v, kinds in _KINDS[target.minor].items() if kind in kinds)


def default_versions(target: TargetVersion) -> tuple[str, ...]:
    """Versions served without any flag: v1 from 1.34, nothing before."""
    return ("v1",) if target.served_by_default else ()


def runtime_config_for(versions: tuple[str, ...]) -> str:
    return "--runtime-config=" + ",".join(f"{GROUP}/{v}=true" for v in versions)


def enable_versions(target: TargetVersion) -> tuple[str, ...]:
    """The beta versions to turn on in a release that does not serve DRA by default (1.32:
    v1beta1; 1.33: v1beta1 and v1beta2), as the NVIDIA driver's recipe does."""
    return ("v1beta1",) if target.minor == 32 else ("v1beta1", "v1beta2")


def dra_enable_recipe(target: TargetVersion) -> str:
    """What turns DRA on in a release that does not serve it by default (1.32, 1.33)."""
    return (f"enable feature gate {DRA_GATE}=true on {DRA_COMPONENTS}, and start kube-apiserver "
            f"with {runtime_config_for(enable_versions(target))}")


def availability(target: TargetVersion, api_version: str, kind: str) -> ApiAvailability:
    """Whether `kind` exists at `api_version` in `target` and what serving it takes."""
    group, _, version = api_version.rpartition("/")
    if group != GROUP:
        raise ValueError(f"{api_version} is not a {GROUP} version")
    kinds = _KINDS[target.minor].get(version, frozenset())
    if kind not in kinds:
        return ApiAvailability(api_version, kind, target, False, False)
    if version in default_versions(target):
        return ApiAvailability(api_version, kind, target, True, True)
    gates: tuple[str, ...] = ()
    if kind in CORE_KINDS and not target.served_by_default:
        gates = (DRA_GATE,)
    elif kind in _TAINT:
        gates = _TAINT_GATES.get(target.minor, ())
    return ApiAvailability(api_version, kind, target, True, False,
                           runtime_config_for((version,)), gates)
