"""`gpudra convert --from-cluster`: the cluster's GPU workloads (bare pods included), the claims
and templates they use, and GPU quotas, exported as clean manifests under --output-dir, which
convert then converts in place."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpudra.convert.records import ConvertRequest, WorkloadResult
from gpudra.convert.writer import write_under
from gpudra.errors import UsageError
from gpudra.results.model import ClusterRead, InputError
from gpudra.k8s.objects import ClusterObject, PathT, dig
from gpudra.k8s.workloads import WorkloadTable
from gpudra.convert.export import clean, dump, file_name
from gpudra.convert.tolerations import has_gpu_taint
from gpudra.sources.live_session import cluster_session, triage


def _export_dir(request: ConvertRequest) -> Path:
    """--output-dir of a --from-cluster run, which must be new or empty."""
    out = request.output_dir
    if request.paths or out is None or request.diff or request.check or request.claims_file:
        raise UsageError("--from-cluster needs --output-dir DIR and no PATH, --diff, --check "
                         "or --claims-file")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"--output-dir {out}: must be a new or empty directory for "
                         "--from-cluster")
    return out


def _exported_pod_specs(item: ClusterObject, table: WorkloadTable) -> list[PathT] | None:
    """The pod spec paths of a live object to export (its GPU use, cleaned), or None when it
    is not exported: no GPU use or GPU quota, or a claim its pod's template generated."""
    from gpudra.k8s.gpu_use import quota_keys, read_object

    if item.group == "resource.k8s.io":
        # Claims the pods' templates generated belong to their pods, not to Git.
        return None if dig(item.data, "metadata", "ownerReferences") else []
    use = read_object(table, item.group, item.kind, item.data)
    if not (use.device_plugin or use.dra or any(
            q.device.is_nvidia_device_plugin for q in quota_keys(item.data))):
        return None
    return [p.spec.path for p in use.pods]


def export_cluster(request: ConvertRequest, table: WorkloadTable,
                   reads: list[ClusterRead] | None = None
                   ) -> tuple[tuple[InputError, ...], tuple[WorkloadResult, ...], int, bool, Any]:
    """Write the cluster's GPU workloads (bare pods included), the claims and templates they
    use, and GPU quotas, as clean manifests under --output-dir. Returns what could not be read,
    the GPU pods left out (with why), how many files were written, and whether a node carries
    the `nvidia.com/gpu` NoSchedule taint, and the cluster's version (gpudra.cluster
    ServerVersion); which cluster and when, into `reads`. Raises a ClusterError when the
    cluster cannot be read at all."""
    from gpudra.k8s.gpu_use import read_object
    from gpudra.sources.live import ClusterSource

    out = _export_dir(request)
    errors: list[InputError] = []
    written: set[str] = set()
    skipped: list[WorkloadResult] = []
    tainted = False
    with cluster_session(request.context.cluster) as session:
        if reads is not None:
            reads.append(session.read)
        version = session.cluster.server_version()
        # one object at a time: each is written, then let go; what was not read is no error
        items = ClusterSource(session.cluster, table, command="export").items()
        for item in triage(items, errors, unread_is_error=False):
            if not isinstance(item, ClusterObject):
                continue
            if item.kind == "Node" and item.group == "":
                tainted = tainted or has_gpu_taint(item.data)
                continue
            if item.kind == "Pod" and item.group == "":
                reason = _not_exported(item)
                if reason is not None:
                    pod = read_object(table, "", "Pod", item.data)
                    if pod.device_plugin or pod.dra:
                        skipped.append(WorkloadResult(
                            "(not exported)", "Pod", item.name, item.namespace, "manual",
                            reason))
                    continue
            paths = _exported_pod_specs(item, table)
            if paths is None:
                continue
            name = file_name(item.data)
            if name is None:
                errors.append(InputError(None, "the cluster sent an object whose namespace, "
                                         "name or kind is not a valid Kubernetes name; it was "
                                         "left out", object=_shown(item.data)))
                continue
            if name in written:
                errors.append(InputError(None, f"two objects would be written to {name}; "
                                         "the second was left out", object=name))
                continue
            written.add(name)
            write_under(out, name, dump(clean(item.data, paths)).encode("utf-8"))
    return tuple(errors), tuple(skipped), len(written), tainted, version


def _not_exported(pod: Any) -> str | None:
    """Why a GPU pod the cluster source reports at itself is not written as a manifest; None
    for a bare pod, or one whose controller no longer exists (it is bare now)."""
    if pod.cluster is not None and pod.cluster.controller_gone:
        return None
    for ref in dig(pod.data, "metadata", "ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller"):
            kind, name = ref.get("kind"), ref.get("name")
            if kind == "Node":
                return (f"a static pod: the kubelet of node {name} runs it from a manifest file "
                        "on that node; convert that file")
            return (f"controlled by {kind} {name}, which gpudra does not read: export or convert "
                    f"that object (or add its kind under workloads: in .gpudra.yaml)")
    return None


def _shown(data: Any) -> str:
    """An object's kind, namespace and name as the server sent them, escaped and cut short."""
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    text = repr(f"{data.get('kind')}/{meta.get('namespace')}/{meta.get('name')}")
    return text if len(text) <= 120 else text[:117] + "..."
