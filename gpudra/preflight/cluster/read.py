"""One read of a live cluster for the cluster tier: fills a ClusterSnapshot through gpudra.cluster.

Follows the snapshot's reading contract (snapshot.py): what was listed goes to `objects`, what
could not be read to `unavailable` with the server's reason, what the cluster does not serve is
left out. Pods are read only in the namespaces of the device-plugin and DRA driver DaemonSets
(what the checks look at), not across a large cluster; of the other namespaces' pods only those
holding device-plugin GPUs on a node that publishes DRA devices are kept (`GPU_HOLDERS`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpudra.cluster.errors import ClusterRequestError
from gpudra.cluster.records import ResourceType
from gpudra.dra.emit import NVIDIA_DRIVER
from gpudra.k8s.objects import plural
from gpudra.k8s.plugin_daemonsets import device_plugin_daemonsets
from gpudra.preflight.cluster.driver import driver_daemonsets
from gpudra.preflight.cluster.nodes import slice_devices_by_node
from gpudra.preflight.cluster.snapshot import (
    ALWAYS_SERVED_GROUPS,
    DAEMONSETS,
    DISCOVERY,
    GPU_HOLDERS,
    KUEUE_CONFIG,
    PODS,
    RESOURCES,
    RESOURCESLICES,
    VERSION,
    ClusterSnapshot,
    ResourceRef,
)
from gpudra.sources.live import device_plugin_holding

if TYPE_CHECKING:
    from gpudra.cluster.client import Cluster
    from gpudra.cluster.listing import ProgressHook
    from gpudra.cluster.records import ResourceError

KUEUE_NAMESPACE = "kueue-system"
KUEUE_CONFIGMAP = "kueue-manager-config"


def read_snapshot(cluster: Cluster, on_page: ProgressHook | None = None) -> ClusterSnapshot:
    """Read what the cluster checks need. Raises gpudra.cluster.ClusterError when the cluster
    cannot be read at all (unreachable, credentials rejected)."""
    objects: dict[str, tuple[dict[str, Any], ...]] = {}
    unavailable: dict[str, str] = {}
    version: str | None = None
    try:
        version = cluster.server_version().git_version
    except ClusterRequestError as exc:  # the server answered, with an error: read the rest
        unavailable[VERSION] = _reason(exc)
    try:
        groups = {name: group.versions for name, group in cluster.discovery.groups().items()}
    except Exception as exc:  # noqa: BLE001 - the checks say unavailable with this reason
        groups = None
        unavailable[DISCOVERY] = _reason(exc)
    # Without discovery, asking the cluster where a resource is served would ask for the
    # discovery documents again (and raise); read what every server serves, leave the rest out.
    locate = _locate if groups is not None else _locate_without_discovery
    for ref in RESOURCES:
        if ref is PODS or ref is GPU_HOLDERS:
            continue  # below, narrowed to what the checks look at
        if ref is KUEUE_CONFIG:
            if groups is not None:
                _read_kueue_config(cluster, objects, unavailable)
            continue
        _read(cluster, locate(cluster, ref), ref, None, objects, unavailable, on_page)
    scopes: dict[str, str] = {}
    daemonsets = objects.get(DAEMONSETS.key)
    if daemonsets is not None:
        watched = [*device_plugin_daemonsets(daemonsets),
                   *(d.obj for d in driver_daemonsets(daemonsets))]
        namespaces = sorted({str((d.get("metadata") or {}).get("namespace") or "")
                             for d in watched} - {""})
        pods: list[dict[str, Any]] = []
        for namespace in namespaces:
            part: dict[str, tuple[dict[str, Any], ...]] = {}
            _read(cluster, locate(cluster, PODS), PODS, namespace, part, unavailable, on_page)
            pods += part.get(PODS.key, ())
        if PODS.key not in unavailable:
            objects[PODS.key] = tuple(pods)
        scopes[PODS.key] = ("namespaces " + ", ".join(namespaces)) if namespaces \
            else "no device-plugin or DRA driver namespace"
    _read_gpu_holders(cluster, locate(cluster, GPU_HOLDERS), objects, unavailable, scopes,
                      on_page)
    return ClusterSnapshot(version, groups, objects, unavailable, scopes)


def _read_gpu_holders(cluster: Cluster, resource: ResourceType | None,
                      objects: dict[str, tuple[dict[str, Any], ...]],
                      unavailable: dict[str, str], scopes: dict[str, str],
                      on_page: ProgressHook | None) -> None:
    """The pods that hold device-plugin GPUs on nodes that publish gpu.nvidia.com devices: all
    pods are listed page by page, and only those are kept. Nothing is listed when no node
    publishes (before the first wave), or when slices could not be read (CLUSTER008 says
    unavailable for the slices then)."""
    slices = objects.get(RESOURCESLICES.key)
    if slices is None or resource is None:
        return
    publishing = {node for node, count in (slice_devices_by_node(slices) or {}).items()
                  if count}
    if not publishing:
        objects[GPU_HOLDERS.key] = ()
        scopes[GPU_HOLDERS.key] = f"none listed: no node publishes {NVIDIA_DRIVER} devices"
        return
    listing = cluster.list(resource, namespace=None, on_page=on_page)
    kept = tuple(pod for page in listing for pod in page
                 if (holding := device_plugin_holding(pod)) is not None
                 and holding[0] in publishing)
    if listing.error is not None:
        unavailable[GPU_HOLDERS.key] = _reason(listing.error)
    elif not listing.not_served:
        objects[GPU_HOLDERS.key] = kept
    scopes[GPU_HOLDERS.key] = (f"pods of every namespace, kept when they hold device-plugin "
                               f"GPUs on one of the {plural(len(publishing), 'node')} that publish "
                               f"{NVIDIA_DRIVER} devices")


def _locate(cluster: Cluster, ref: ResourceRef) -> ResourceType | None:
    return cluster.resource(ref.group, ref.plural, ref.versions)


def _locate_without_discovery(cluster: Cluster, ref: ResourceRef) -> ResourceType | None:
    if ref.group not in ALWAYS_SERVED_GROUPS:
        return None  # unknown whether served: the checks say so with the discovery reason
    return ResourceType(ref.group, ref.versions[0], ref.plural, ref.kind, ref.namespaced)


def _read(cluster: Cluster, resource: ResourceType | None, ref: ResourceRef,
          namespace: str | None, objects: dict[str, tuple[dict[str, Any], ...]],
          unavailable: dict[str, str], on_page: ProgressHook | None) -> None:
    if resource is None:
        return  # not served: the checks read "not installed" from discovery
    listing = cluster.list(resource, namespace=namespace, on_page=on_page)
    items = [item for page in listing for item in page]
    if listing.error is not None:
        unavailable[ref.key] = _reason(listing.error)
    elif not listing.not_served:
        objects[ref.key] = tuple(items)


def _read_kueue_config(cluster: Cluster, objects: dict[str, tuple[dict[str, Any], ...]],
                       unavailable: dict[str, str]) -> None:
    if cluster.resource("kueue.x-k8s.io", "clusterqueues") is None:
        return  # no Kueue: nothing to read
    configmaps = cluster.resource("", "configmaps", "v1")
    before = len(cluster.errors)
    found = cluster.get(configmaps, KUEUE_CONFIGMAP, KUEUE_NAMESPACE) if configmaps else None
    if len(cluster.errors) > before:
        unavailable[KUEUE_CONFIG.key] = _reason(cluster.errors[-1])
    else:
        objects[KUEUE_CONFIG.key] = (found,) if found is not None else ()


def _reason(error: ResourceError | Exception) -> str:
    """`403: <the server's message>`, as the snapshot's contract has it (a ResourceError has
    the server's words in `message`, a ClusterRequestError in `server_message`)."""
    status = getattr(error, "status", None)
    message = (getattr(error, "message", "") or getattr(error, "server_message", "")
               or getattr(error, "reason", "") or str(error))
    message = " ".join(str(message).split())
    return f"{status}: {message}" if status else message
