"""What the cluster tier judges: one read of the cluster, as plain data (`ClusterSnapshot`).

The cluster client (gpudra/cluster/) fills this record; the checks never talk to the API server.
Objects are plain dicts exactly as the API returns them (list items carry no `kind` or
`apiVersion`; the checks do not need them).

Reading contract, per resource (`RESOURCES` names what to list, at which group and versions):

- listed: `objects[key]` holds the items (an empty tuple when there are none);
- could not be read (403, 5xx, timeout, a 404 although discovery listed it): `unavailable[key]`
  holds a one-line reason, e.g. `403: deviceclasses.resource.k8s.io is forbidden: User "x"
  cannot list ...`; the checks that need it then say `unavailable` with that reason, never pass;
- not served (its group/version is absent from discovery): leave it out of both. For a custom
  resource this means "not installed" (no Karpenter, no Kueue), which checks may pass on;
  `api_groups` must then be known, or the checks cannot tell the two apart and say unavailable.

`/version` and discovery follow the same rule with the pseudo-keys `VERSION` and `DISCOVERY` in
`unavailable`. `scopes[key]` says when a list was deliberately narrowed (pods of the driver
namespaces only), so messages do not claim more than was read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from gpudra.preflight.check_records import CheckInfo, CheckOutcome, CheckResult, result
from gpudra.preflight.cluster.nodes import NodeFacts
from gpudra.preflight.cluster.nodes import node_facts as facts_of
from gpudra.preflight.runtime import Version, parse_version

VERSION = "version"
DISCOVERY = "discovery"


@dataclass(frozen=True, slots=True)
class ResourceRef:
    """One resource the cluster tier reads. `versions` are the acceptable ones, preferred first;
    `custom` marks a CRD, whose absence from discovery means "not installed"; `kind` is the
    object kind (`Node`)."""

    key: str
    group: str
    versions: tuple[str, ...]
    plural: str
    namespaced: bool
    custom: bool = False
    kind: str = ""

    @property
    def label(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


NODES = ResourceRef("nodes", "", ("v1",), "nodes", False, kind="Node")
DAEMONSETS = ResourceRef("daemonsets", "apps", ("v1",), "daemonsets", True, kind="DaemonSet")
DEPLOYMENTS = ResourceRef("deployments", "apps", ("v1",), "deployments", True, kind="Deployment")
# Pods are read only in the namespaces of the device-plugin and DRA driver DaemonSets
# (read.py; `scopes` says so).
PODS = ResourceRef("pods", "", ("v1",), "pods", True, kind="Pod")
# Pods of every namespace that hold device-plugin GPUs on a node publishing gpu.nvidia.com
# devices (CLUSTER008): read cluster-wide, only when a node publishes, and kept only when they
# hold such GPUs there (read.py), so a large cluster's pods are never held.
GPU_HOLDERS = ResourceRef("gpuholders", "", ("v1",), "pods", True, kind="Pod")
RESOURCEQUOTAS = ResourceRef("resourcequotas", "", ("v1",), "resourcequotas", True,
                             kind="ResourceQuota")
DEVICECLASSES = ResourceRef("deviceclasses", "resource.k8s.io", ("v1", "v1beta2", "v1beta1"),
                            "deviceclasses", False, kind="DeviceClass")
RESOURCESLICES = ResourceRef("resourceslices", "resource.k8s.io", ("v1", "v1beta2", "v1beta1"),
                             "resourceslices", False, kind="ResourceSlice")
# Claims tell which pods the KEP-5004 bridge serves (the scheduler's annotated claims).
RESOURCECLAIMS = ResourceRef("resourceclaims", "resource.k8s.io", ("v1", "v1beta2", "v1beta1"),
                             "resourceclaims", True, kind="ResourceClaim")
PROMETHEUSRULES = ResourceRef("prometheusrules", "monitoring.coreos.com", ("v1",),
                              "prometheusrules", True, custom=True, kind="PrometheusRule")
CLUSTERPOLICIES = ResourceRef("clusterpolicies", "nvidia.com", ("v1",), "clusterpolicies", False,
                              custom=True, kind="ClusterPolicy")
GPUCLUSTERS = ResourceRef("gpuclusters", "nvidia.com", ("v1alpha1",), "gpuclusters", False,
                          custom=True, kind="GPUCluster")
CLUSTERQUEUES = ResourceRef("clusterqueues", "kueue.x-k8s.io", ("v1beta2", "v1beta1"),
                            "clusterqueues", False, custom=True, kind="ClusterQueue")
# The Kueue manager's ConfigMap: kueue-system/kueue-manager-config (key
# controller_manager_config.yaml) unless installed elsewhere.
KUEUE_CONFIG = ResourceRef("kueueconfig", "", ("v1",), "configmaps", True, kind="ConfigMap")
NODEPOOLS = ResourceRef("nodepools", "karpenter.sh", ("v1", "v1beta1"), "nodepools", False,
                        custom=True, kind="NodePool")

RESOURCES: tuple[ResourceRef, ...] = (
    NODES, DAEMONSETS, DEPLOYMENTS, PODS, GPU_HOLDERS, RESOURCEQUOTAS, DEVICECLASSES,
    RESOURCESLICES, RESOURCECLAIMS, PROMETHEUSRULES, CLUSTERPOLICIES, GPUCLUSTERS, CLUSTERQUEUES,
    KUEUE_CONFIG, NODEPOOLS)

# Groups every API server serves (at v1): their resources can be read, and "served" be taken
# for granted, even when discovery cannot be read.
ALWAYS_SERVED_GROUPS = frozenset({"", "apps"})


@dataclass(frozen=True, slots=True)
class Listing:
    """One resource as the checks see it: items, or why there are none to look at.

    `items` is None when the resource could not be read; `served` is False when discovery says
    the API does not exist (then `items` is empty), None when that is unknown.
    """

    items: tuple[Mapping[str, Any], ...] | None
    reason: str | None = None
    served: bool | None = True
    scope: str | None = None

    @property
    def readable(self) -> bool:
        return self.items is not None


@dataclass(frozen=True)
class ClusterSnapshot:
    """One read-only look at a cluster; see the module docstring for the reading contract.

    `server_version` is `/version`'s `gitVersion` (`v1.34.2-eks-4f3c1b2`); `api_groups` maps
    each served API group (`""` for core) to its served versions, preferred first, from
    discovery (None when discovery could not be read).
    """

    server_version: str | None = None
    api_groups: Mapping[str, tuple[str, ...]] | None = None
    objects: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    unavailable: Mapping[str, str] = field(default_factory=dict)
    scopes: Mapping[str, str] = field(default_factory=dict)

    @property
    def version(self) -> Version | None:
        """The parsed server version; None when unknown or unparsable."""
        return parse_version(self.server_version) if self.server_version else None

    def version_problem(self) -> str | None:
        """Why there is no usable server version, or None."""
        if self.server_version is None:
            return self.unavailable.get(VERSION, "/version was not read")
        if self.version is None:
            return f"cannot read a Kubernetes version in {self.server_version!r}"
        return None

    def discovery_problem(self) -> str | None:
        if self.api_groups is None:
            return self.unavailable.get(DISCOVERY, "API discovery was not read")
        return None

    def served_versions(self, group: str) -> tuple[str, ...] | None:
        """Served versions of `group` (empty when not served); None when discovery is unknown."""
        if self.api_groups is None:
            return None
        return tuple(self.api_groups.get(group, ()))

    def serves(self, ref: ResourceRef) -> bool | None:
        if ref.group in ALWAYS_SERVED_GROUPS:
            return True
        versions = self.served_versions(ref.group)
        if versions is None:
            return None
        return any(v in versions for v in ref.versions)

    def listing(self, ref: ResourceRef) -> Listing:
        scope = self.scopes.get(ref.key)
        if ref.key in self.objects:
            return Listing(tuple(self.objects[ref.key]), None, True, scope)
        if ref.key in self.unavailable:
            return Listing(None, self.unavailable[ref.key], self.serves(ref), scope)
        served = self.serves(ref)
        if served is False:
            return Listing((), f"{ref.label} is not served by this cluster", False, scope)
        if served is None:
            return Listing(None, f"{ref.label} was not read, and discovery could not tell "
                                 f"whether it is served ({self.discovery_problem()})", None, scope)
        return Listing(None, f"{ref.label} was not read", True, scope)

    # cached_property stores into the instance __dict__: fine on a frozen dataclass, which is
    # why this one is not slotted.
    @cached_property
    def node_facts(self) -> tuple[NodeFacts, ...] | None:
        """What the cluster tier knows about each node (GPU evidence, device-plugin resources,
        devices in slices), worked out once for all checks; None when nodes could not be read."""
        nodes = self.listing(NODES).items
        if nodes is None:
            return None
        return facts_of(nodes, self.listing(RESOURCESLICES).items)


# What serves resource.k8s.io (docs/dra-reference.md §1.1); CLUSTER001 says which applies.
SERVE_DRA = ("serve the DRA API: upgrade to Kubernetes 1.34+ (resource.k8s.io/v1, on by "
             "default), or on 1.32/1.33 enable the DynamicResourceAllocation feature gate and "
             "--runtime-config=resource.k8s.io/v1beta1=true (1.32) or v1beta2 (1.33); see "
             "CLUSTER001")


def unreadable(info: CheckInfo, what: str, listing: Listing, grant: str) -> CheckResult:
    """`unavailable`: the check's input could not be read, with the server's reason and what
    would let gpudra look: the permission (`grant list on <grant>`), or, for an API the
    cluster does not serve, serving it (no permission helps there)."""
    fix = f"grant list on {grant}"
    if listing.served is False:
        fix = SERVE_DRA if "resource.k8s.io" in grant else \
            f"{what} are not served by this cluster: install what serves them, or --skip {info.id}"
    return result(info, CheckOutcome.UNAVAILABLE, f"cannot read {what}: {listing.reason}", fix)
