"""What the convert planner takes and gives: options, per-object plans and per-workload results."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpudra.dra.versions import TargetVersion
from gpudra.k8s.objects import PathT, as_mapping
from gpudra.run_context import RunContext
from gpudra.results.vouches import VouchSet
from gpudra.results.waivers import WaiverSet
from gpudra.yamledit.ops import Op


class ClaimMode(enum.StrEnum):
    """--claim-mode: a ResourceClaimTemplate per pod, or one ResourceClaim all pods share."""

    TEMPLATE = "template"
    SHARED = "shared"


class Strategy(enum.StrEnum):
    """--strategy of convert and cutover: rewrite the workloads to claims, or leave plain
    nvidia.com/gpu workloads to a DeviceClass's extendedResourceName (the bridge)."""

    REWRITE = "rewrite"
    BRIDGE = "bridge"

    @classmethod
    def aliases(cls) -> dict[str, Strategy]:
        # "claims" is the same strategy under the name guard, the runbooks and the docs give it
        # (what the workloads end on), so `--strategy claims` works wherever --strategy does.
        return {"claims": cls.REWRITE}

    @classmethod
    def _missing_(cls, value: object) -> Strategy | None:
        return cls.aliases().get(value) if isinstance(value, str) else None


@dataclass(frozen=True)
class ConvertOptions:
    target: TargetVersion
    claim_mode: str = "template"      # template | shared
    strategy: str = "rewrite"         # rewrite | bridge
    keep_node_selectors: bool = False
    add_toleration: bool = True       # where the original requested nvidia.com/gpu
    keep_device_plugin_quota: bool = False
    # device-plugin names whose quota keys stay even so: pods the bridge serves still ask them
    keep_quota_names: frozenset[str] = frozenset()
    selectors: tuple[str, ...] = ()   # extra CEL for every converted request (already compiled)
    min_memory: str | None = None     # whole GPUs only: a MIG device's memory is its slice
    product: str | None = None        # product-name prefix, for every request
    admin_access: bool = False        # monitoring DaemonSets get admin-access claims (KEP-5018)
    waivers: WaiverSet | None = None  # .gpudra.yaml waivers: what they cover is left alone
    # .gpudra.yaml vouches: kinds outside the controller registry that convert may convert
    vouches: VouchSet | None = None


@dataclass(frozen=True)
class ContainerClaim:
    """One DRA request a converted container references: what kustomize overlays (and anyone
    else) need to follow a container to its count."""

    pod_spec: PathT               # path of the pod spec in the object
    container: str                # the container's name (or label)
    pod_claim: str                # the pod's resourceClaims[].name
    kind: str                     # ResourceClaimTemplate | ResourceClaim
    object: str                   # that object's name
    request: str | None           # the request's name; None: the whole claim
    index: int                    # the request's position in the object's requests


@dataclass(frozen=True)
class WorkloadResult:
    file: str
    kind: str
    name: str | None
    namespace: str | None
    strategy: str  # rewrite | repair | bridge | quota | manual | ignored | blocked
    reason: str | None = None
    notes: tuple[str, ...] = ()
    created: tuple[str, ...] = ()
    claims: tuple[ContainerClaim, ...] = ()  # rewrite: what each container references now


@dataclass
class ObjectPlan:
    ops: list[Op] = field(default_factory=list)
    new_objects: list[tuple[dict[str, Any], str | None]] = field(default_factory=list)
    result: WorkloadResult | None = None


class Blocked(Exception):
    """This workload must be migrated by hand; the message says why."""


def result_for(file: str, data: Mapping[str, Any], strategy: str, *, reason: str | None = None,
               notes: tuple[str, ...] = (), created: tuple[str, ...] = (),
               claims: tuple[ContainerClaim, ...] = ()) -> WorkloadResult:
    metadata = as_mapping(data.get("metadata"))
    name = metadata.get("name") or metadata.get("generateName")
    namespace = metadata.get("namespace")
    return WorkloadResult(file, str(data.get("kind", "")), str(name) if name else None,
                          str(namespace) if namespace else None, strategy, reason, notes, created,
                          claims)


@dataclass(frozen=True)
class ConvertRequest:
    """What `gpudra convert` was asked to do, every option parsed (cutover asks the same)."""

    paths: tuple[str, ...]
    # its target: None for DEFAULT, or under --from-cluster the release the cluster runs; its
    # config: the CLI's (the nearest .gpudra.yaml to the paths, each covered path dropped
    # first: distinct_paths); its cluster: --from-cluster's (None: convert files); its day:
    # the one waivers are judged on
    context: RunContext = field(default_factory=RunContext)
    diff: bool = False
    check: bool = False
    output_dir: Path | None = None
    claim_mode: ClaimMode = ClaimMode.TEMPLATE
    strategy: Strategy = Strategy.REWRITE
    keep_node_selectors: bool = False
    add_toleration: bool | None = None  # None: files yes; --from-cluster: if GPU nodes are tainted
    keep_device_plugin_quota: bool = False
    keep_quota_names: frozenset[str] = frozenset()  # ConvertOptions.keep_quota_names
    selectors: tuple[str, ...] = ()
    min_memory: str | None = None
    product: str | None = None
    claims_file: str | None = None
    admin_access: bool = False
    excludes: tuple[str, ...] = ()
    # How the run is shown (the summary's format, -q, -v) is the CLI's: gpudra.cli.convert.
