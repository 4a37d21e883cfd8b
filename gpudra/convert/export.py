"""Live workloads as manifests a person would write: for `gpudra convert --from-cluster`.

The API server adds to every object what nobody writes in Git: `status`, `managedFields`,
identity and bookkeeping metadata, generated labels and selectors (Jobs), and defaults for
every field left out. Exported manifests drop all of it, so they can be reviewed, converted and
applied (`kubectl apply` recreates the defaults). A field is dropped only when it holds exactly
the value the API server would have set; anything the user chose is kept.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from gpudra.k8s.objects import PathT, as_mapping, dig
import io

_METADATA_DROP = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
                  "selfLink", "ownerReferences", "deletionTimestamp", "deletionGracePeriodSeconds")
_ANNOTATIONS_DROP = ("kubectl.kubernetes.io/last-applied-configuration",
                     "deployment.kubernetes.io/revision",
                     "deprecated.daemonset.template.generation")
# Labels and selector keys the Job controller generates (batch/v1).
_JOB_GENERATED = ("controller-uid", "batch.kubernetes.io/controller-uid", "job-name",
                  "batch.kubernetes.io/job-name")

# Pod-spec and container defaults (core/v1 SetDefaults_*), dropped where equal.
_POD_DEFAULTS: dict[str, Any] = {
    "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler", "securityContext": {},
    "terminationGracePeriodSeconds": 30, "enableServiceLinks": True,
    "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
}
_CONTAINER_DEFAULTS: dict[str, Any] = {
    "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
    "resources": {},
}
_PROBE_DEFAULTS = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                   "failureThreshold": 3}
# Workload spec defaults per kind (apps/v1, batch/v1 SetDefaults_*).
_SPEC_DEFAULTS: dict[str, dict[str, Any]] = {
    "Deployment": {"revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                   "strategy": {"type": "RollingUpdate",
                                "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}},
    "StatefulSet": {"revisionHistoryLimit": 10, "podManagementPolicy": "OrderedReady",
                    "updateStrategy": {"type": "RollingUpdate",
                                       "rollingUpdate": {"partition": 0}},
                    "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain",
                                                             "whenScaled": "Retain"}},
    "DaemonSet": {"revisionHistoryLimit": 10,
                  "updateStrategy": {"type": "RollingUpdate",
                                     "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}},
    "Job": {"backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False,
            "manualSelector": None, "podReplacementPolicy": "TerminatingOrFailed"},
    "CronJob": {"concurrencyPolicy": "Allow", "suspend": False,
                "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1},
}
_RESTART_ALWAYS_KINDS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet",
                                   "ReplicationController", "Pod"})
# What admission and the scheduler add to a pod: the ServiceAccount admission plugin's token
# volume (`kube-api-access-<suffix>`, mounted in every container), and DefaultTolerationSeconds'
# two NoExecute tolerations (node.kubernetes.io/not-ready and /unreachable, 300 s).
_API_ACCESS_PREFIX = "kube-api-access-"
# Node labels the PodTopologyLabels admission plugin copies onto a pod at binding.
BINDING_LABELS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region")
_DEFAULT_TOLERATIONS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
_DEFAULT_TOLERATION_SECONDS = 300


def clean(obj: Mapping[str, Any], pod_spec_paths: list[PathT]) -> dict[str, Any]:
    """A copy of the live object without server-set state and defaults. `pod_spec_paths` are
    where its pod specs are (gpudra.k8s.workloads), to drop their defaults too."""
    out = copy.deepcopy(dict(obj))
    out.pop("status", None)
    kind = str(out.get("kind", ""))
    _clean_metadata(out.get("metadata"))
    spec = out.get("spec")
    if isinstance(spec, dict):
        _drop_defaults(spec, _SPEC_DEFAULTS.get(kind, {}))
        if kind == "Job":
            _clean_job(spec)
        if kind == "CronJob":
            job = dig(spec, "jobTemplate", "spec")
            if isinstance(job, dict):
                _drop_defaults(job, _SPEC_DEFAULTS["Job"])
                _clean_job(job)
    if kind == "Pod" and isinstance(spec, dict):
        if spec.get("nodeName"):
            _drop_binding_labels(out.get("metadata"))
        _clean_admitted_pod(spec)
    for path in pod_spec_paths:
        pod = dig(out, *path)
        if isinstance(pod, dict):
            _clean_pod_spec(pod, restart_always=kind in _RESTART_ALWAYS_KINDS)
            template = dig(out, *path[:-1]) if path and path[-1] == "spec" else None
            if isinstance(template, dict):
                _clean_metadata(template.get("metadata"))
                if template.get("metadata") == {}:
                    del template["metadata"]
    return out


def _clean_metadata(metadata: Any) -> None:
    if not isinstance(metadata, dict):
        return
    for key in _METADATA_DROP:
        metadata.pop(key, None)
    if metadata.get("name") and metadata.get("generateName"):
        del metadata["generateName"]
    annotations = metadata.get("annotations")
    if isinstance(annotations, dict):
        for key in _ANNOTATIONS_DROP:
            annotations.pop(key, None)
        if not annotations:
            del metadata["annotations"]
    labels = metadata.get("labels")
    if isinstance(labels, dict):
        for key in ("pod-template-hash", *_JOB_GENERATED):
            labels.pop(key, None)
        if not labels:
            del metadata["labels"]


def _drop_binding_labels(metadata: Any) -> None:
    """A bound pod's labels without those the API server copied from its node when it was
    bound (PodTopologyLabels, on by default from 1.35: docs/facts.md): the pod created again
    from the export gets its new node's."""
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    if not isinstance(labels, dict):
        return
    for key in BINDING_LABELS:
        labels.pop(key, None)
    if not labels:
        del metadata["labels"]


def _clean_admitted_pod(spec: dict[str, Any]) -> None:
    """A bare pod as its author wrote it: without the node the scheduler bound it to, the
    service-account token volume and mounts admission added, the default service account and
    DefaultTolerationSeconds' tolerations."""
    spec.pop("nodeName", None)
    if spec.get("serviceAccountName") == "default":
        del spec["serviceAccountName"]
    if spec.get("serviceAccount") in ("default", None):
        spec.pop("serviceAccount", None)
    volumes = spec.get("volumes")
    if isinstance(volumes, list):
        injected = {v.get("name") for v in volumes if isinstance(v, dict)
                    and str(v.get("name", "")).startswith(_API_ACCESS_PREFIX)
                    and "projected" in v}
        spec["volumes"] = [v for v in volumes
                           if not (isinstance(v, dict) and v.get("name") in injected)]
        for key in ("initContainers", "containers"):
            for container in spec.get(key) or ():
                mounts = container.get("volumeMounts") if isinstance(container, dict) else None
                if isinstance(mounts, list):
                    container["volumeMounts"] = [m for m in mounts if not (
                        isinstance(m, dict) and m.get("name") in injected)]
                    if not container["volumeMounts"]:
                        del container["volumeMounts"]
        if not spec["volumes"]:
            del spec["volumes"]
    tolerations = spec.get("tolerations")
    if isinstance(tolerations, list):
        spec["tolerations"] = [t for t in tolerations if not (
            isinstance(t, dict) and t.get("key") in _DEFAULT_TOLERATIONS
            and t.get("operator") == "Exists" and t.get("effect") == "NoExecute"
            and t.get("tolerationSeconds") == _DEFAULT_TOLERATION_SECONDS)]
        if not spec["tolerations"]:
            del spec["tolerations"]


def _clean_job(spec: dict[str, Any]) -> None:
    """The Job controller writes a selector on its generated uid and matching template labels;
    they must go, or the manifest cannot be applied again."""
    if spec.get("manualSelector"):
        return
    selector = spec.get("selector")
    labels = dig(selector, "matchLabels") if isinstance(selector, dict) else None
    if isinstance(labels, dict) and set(labels) <= set(_JOB_GENERATED):
        del spec["selector"]


def _clean_pod_spec(pod: dict[str, Any], *, restart_always: bool) -> None:
    _drop_defaults(pod, _POD_DEFAULTS)
    if restart_always and pod.get("restartPolicy") == "Always":
        del pod["restartPolicy"]
    if pod.get("serviceAccount") == pod.get("serviceAccountName"):
        pod.pop("serviceAccount", None)  # the deprecated twin the server fills in
    for key in ("initContainers", "containers"):
        for container in pod.get(key) or ():
            if isinstance(container, dict):
                _clean_container(container)
    for volume in pod.get("volumes") or ():
        for source in volume.values() if isinstance(volume, dict) else ():
            if isinstance(source, dict) and source.get("defaultMode") == 420:
                del source["defaultMode"]


def _clean_container(container: dict[str, Any]) -> None:
    _drop_defaults(container, _CONTAINER_DEFAULTS)
    image = str(container.get("image", ""))
    latest = ":" not in image.rpartition("/")[2] or image.endswith(":latest")
    if container.get("imagePullPolicy") == ("Always" if latest else "IfNotPresent"):
        del container["imagePullPolicy"]
    for port in container.get("ports") or ():
        if isinstance(port, dict) and port.get("protocol") == "TCP":
            del port["protocol"]
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        value = container.get(probe)
        if isinstance(value, dict):
            _drop_defaults(value, _PROBE_DEFAULTS)
            handler = value.get("httpGet")
            if isinstance(handler, dict) and handler.get("scheme") == "HTTP":
                del handler["scheme"]


def _drop_defaults(mapping: dict[str, Any], defaults: Mapping[str, Any]) -> None:
    for key, value in defaults.items():
        if key in mapping and mapping[key] == value:
            del mapping[key]


# What the API server accepts (k8s.io/apimachinery/pkg/util/validation): a namespace is a DNS
# label (RFC 1123, at most 63 characters), the objects exported are named by DNS subdomains
# (at most 253), and kinds and groups are identifiers. Nothing else may reach a file name: a
# hostile server's `namespace: ../../x` would otherwise write outside --output-dir.
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]{0,62}")


def file_name(obj: Mapping[str, Any]) -> str | None:
    """`<namespace>/<kind>-<name>.yaml`, lower case, as exported files are laid out; kinds of
    other API groups carry their group (`job.batch.volcano.sh-train.yaml`), so a Volcano Job
    and a batch Job of one name do not collide. None when the namespace, name, kind or group
    is not one the API server would accept."""
    meta = as_mapping(obj.get("metadata"))
    namespace = meta.get("namespace")
    name = meta.get("name")
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    kind = obj.get("kind")
    if not (isinstance(name, str) and _DNS_SUBDOMAIN.fullmatch(name) and len(name) <= 253
            and isinstance(kind, str) and _KIND.fullmatch(kind)
            and (not group or (_DNS_SUBDOMAIN.fullmatch(group) and len(group) <= 253))
            and (namespace is None or (isinstance(namespace, str)
                                       and _DNS_LABEL.fullmatch(namespace)))):
        return None
    kind = kind.lower()
    if group not in ("", "apps", "batch"):
        kind = f"{kind}.{group}"
    return f"{namespace or '_cluster'}/{kind}-{name}.yaml"


def dump(obj: Mapping[str, Any]) -> str:
    """One document as block YAML that kubectl reads back as exactly `obj`: strings that a
    YAML 1.1 reader would take for something else (`yes`, `on`, `0777`, `1e3`) are quoted."""

    from ruamel.yaml import YAML
    from ruamel.yaml.representer import SafeRepresenter

    from gpudra.yamledit.render import scalar

    class _Representer(SafeRepresenter):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # keys in the object's order, not sorted (YAML's own switch for this is typed None)
            self.sort_base_mapping_type_on_output = False

        def represent_str(self, data: str) -> Any:
            style = None if scalar(data) == data else '"'
            return self.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    _Representer.add_representer(str, _Representer.represent_str)
    yaml = YAML(typ="safe", pure=True)
    yaml.Representer = _Representer
    yaml.default_flow_style = False
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=2, offset=0)
    out = io.StringIO()
    yaml.dump(dict(obj), out)
    return out.getvalue()
