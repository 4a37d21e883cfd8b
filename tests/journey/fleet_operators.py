"""Issue 32's fourth cluster: workloads that operators and deployment tools own.

A LeaderWorkerSet, a JobSet, a RayCluster, two KServe InferenceServices (raw deployment mode)
and two Deployments, one a Helm release's and one an Argo CD application's, on a GKE-style
cluster of four pools (H100, A100, and two L4 pools of one node each). One InferenceService
serves a Hugging Face model without a `runtimeVersion`: KServe picks its image by its GPU limit,
so convert blocks it and cutover must leave it (and an L4 node for it) on the device plugin.

What each operator makes of its object is written here as data, from each project's source
(docs/facts.md, "The operators' children"): the stand-in controllers of the journey
(tests/journey/operators.py) create exactly these children, and the export tests build a
live cluster's objects from them.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.controlplane.nvidia import A100_80GB, H100_80GB, L4, Product
from tests.journey.fleets import ADMISSION, IMAGE, Fleet, Pool, deployment

LWS_GROUP, JOBSET_GROUP, RAY_GROUP, KSERVE_GROUP = (
    "leaderworkerset.x-k8s.io", "jobset.x-k8s.io", "ray.io", "serving.kserve.io")
# (group, version, plural, kind) of each operator's CRD, as each project serves it
CRD_TYPES = ((LWS_GROUP, "v1", "leaderworkersets", "LeaderWorkerSet"),
             (JOBSET_GROUP, "v1alpha2", "jobsets", "JobSet"),
             (RAY_GROUP, "v1", "rayclusters", "RayCluster"),
             (KSERVE_GROUP, "v1beta1", "inferenceservices", "InferenceService"))
API_VERSIONS = {kind: f"{group}/{version}" for group, version, _, kind in CRD_TYPES}

# The labels each operator puts on what it creates (read by the stand-ins to find them again)
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"
RAY_CLUSTER = "ray.io/cluster"
RAY_NODE_TYPE = "ray.io/node-type"
RAY_GROUP_LABEL = "ray.io/group"
ISVC_LABEL = "serving.kserve.io/inferenceservice"
# Fields of a KServe component that are not the pod's (ComponentExtensionSpec and friends)
KSERVE_COMPONENT_FIELDS = frozenset({
    "minReplicas", "maxReplicas", "scaleTarget", "scaleMetric", "scaleMetricType",
    "containerConcurrency", "timeout", "canaryTrafficPercent", "logger", "batcher", "labels",
    "annotations", "deploymentStrategy", "autoScaling", "model", "workerSpec", "storageUri",
    "storage"})


def crd(group: str, version: str, plural: str, kind: str) -> dict[str, Any]:
    """A structural CRD that keeps whatever its objects hold (the stand-ins read them)."""
    keep = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                               "listKind": f"{kind}List"},
                     "versions": [{"name": version, "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {
                                       "type": "object",
                                       "properties": {"spec": keep, "status": keep}}}}]}}


CRDS = tuple(crd(*entry) for entry in CRD_TYPES)


def _gpu_spec(product: Product, gpus: int, name: str = "main") -> dict[str, Any]:
    return {"nodeSelector": {"nvidia.com/gpu.product": product.label},
            "containers": [{"name": name, "image": IMAGE,
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}


def _meta(namespace: str, name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, **extra}


def leaderworkerset(namespace: str, name: str, replicas: int, size: int,
                    spec: dict[str, Any]) -> dict[str, Any]:
    """One worker template (the leader runs it too, as lws does without a leaderTemplate)."""
    return {"apiVersion": API_VERSIONS["LeaderWorkerSet"], "kind": "LeaderWorkerSet",
            "metadata": _meta(namespace, name),
            "spec": {"replicas": replicas, "leaderWorkerTemplate": {
                "size": size, "workerTemplate": {"metadata": {"labels": {"app": name}},
                                                 "spec": spec}}}}


def jobset(namespace: str, name: str, job: str, replicas: int, spec: dict[str, Any]
           ) -> dict[str, Any]:
    return {"apiVersion": API_VERSIONS["JobSet"], "kind": "JobSet",
            "metadata": _meta(namespace, name),
            "spec": {"replicatedJobs": [{"name": job, "replicas": replicas, "template": {
                "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0,
                         "template": {"spec": {**spec, "restartPolicy": "Never"}}}}}]}}


def raycluster(namespace: str, name: str, group: str, replicas: int, spec: dict[str, Any]
               ) -> dict[str, Any]:
    # The head asks for no GPU; it tolerates the GPU nodes' taint to run on one of them.
    head = {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.41.0"}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                             "effect": "NoSchedule"}]}
    return {"apiVersion": API_VERSIONS["RayCluster"], "kind": "RayCluster",
            "metadata": _meta(namespace, name),
            "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": head}},
                     "workerGroupSpecs": [{"groupName": group, "replicas": replicas,
                                           "minReplicas": replicas, "maxReplicas": replicas,
                                           "rayStartParams": {},
                                           "template": {"spec": spec}}]}}


def inferenceservice(namespace: str, name: str, predictor: dict[str, Any]) -> dict[str, Any]:
    """Raw deployment mode (KServe makes a Deployment, not a Knative Service)."""
    return {"apiVersion": API_VERSIONS["InferenceService"], "kind": "InferenceService",
            "metadata": _meta(namespace, name, annotations={
                "serving.kserve.io/deploymentMode": "RawDeployment"}),
            "spec": {"predictor": {"minReplicas": 1, "maxReplicas": 1, **predictor}}}


def helm_managed(obj: dict[str, Any], release: str) -> dict[str, Any]:
    """As `helm install` leaves an object it renders."""
    meta = obj["metadata"]
    meta.setdefault("labels", {})["app.kubernetes.io/managed-by"] = "Helm"
    meta.setdefault("annotations", {}).update({"meta.helm.sh/release-name": release,
                                               "meta.helm.sh/release-namespace":
                                                   meta["namespace"]})
    return obj


def argo_managed(obj: dict[str, Any], app: str) -> dict[str, Any]:
    """As Argo CD leaves an object it syncs with annotation tracking."""
    meta = obj["metadata"]
    meta.setdefault("labels", {})["app.kubernetes.io/instance"] = app
    meta.setdefault("annotations", {})["argocd.argoproj.io/tracking-id"] = (
        f"{app}:apps/{obj['kind']}:{meta['namespace']}/{meta['name']}")
    return obj


# --- what each operator creates ------------------------------------------------------------

def owner_reference(parent: dict[str, Any]) -> dict[str, Any]:
    """A controller reference to `parent` (it must carry its uid, as read back)."""
    return {"apiVersion": parent["apiVersion"], "kind": parent["kind"],
            "name": parent["metadata"]["name"], "uid": parent["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}


def _child(api_version: str, kind: str, parent: dict[str, Any], name: str,
           labels: dict[str, str], spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": parent["metadata"]["namespace"],
                         "labels": labels, "ownerReferences": [owner_reference(parent)]},
            "spec": spec}


def _with_labels(template: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    template = copy.deepcopy(template)
    template.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
    return template


def jobset_jobs(js: dict[str, Any]) -> list[dict[str, Any]]:
    """jobset constructJob: `<jobset>-<replicatedJob>-<index>` per replica, the replicated
    Job's template with the JobSet's labels on the Job and its pod template, controlled by the
    JobSet."""
    jobs = []
    for rjob in js["spec"]["replicatedJobs"]:
        for index in range(rjob.get("replicas", 1)):
            labels = {JOBSET_NAME: js["metadata"]["name"], REPLICATED_JOB: rjob["name"],
                      JOB_INDEX: str(index)}
            spec = copy.deepcopy(rjob["template"]["spec"])
            spec["template"] = _with_labels(spec["template"], labels)
            jobs.append(_child("batch/v1", "Job", js,
                               f"{js['metadata']['name']}-{rjob['name']}-{index}", labels, spec))
    return jobs


def _statefulset_spec(replicas: int, labels: dict[str, str], template: dict[str, Any],
                      service: str) -> dict[str, Any]:
    return {"replicas": replicas, "serviceName": service, "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": labels}, "template": _with_labels(template, labels)}


def lws_template(lws: dict[str, Any], role: str) -> dict[str, Any]:
    """The leader's template (the worker template when there is no leader template)."""
    lwt = lws["spec"]["leaderWorkerTemplate"]
    return lwt.get(f"{role}Template") or lwt["workerTemplate"]


def lws_leader_statefulset(lws: dict[str, Any]) -> dict[str, Any]:
    """lws SSAWithStatefulset: the leader StatefulSet `<lws>`, spec.replicas leaders,
    controlled by the LeaderWorkerSet."""
    name = lws["metadata"]["name"]
    labels = {LWS_NAME: name, "leaderworkerset.sigs.k8s.io/worker-index": "0"}
    return _child("apps/v1", "StatefulSet", lws, name, {LWS_NAME: name},
                  _statefulset_spec(lws["spec"]["replicas"], labels,
                                    lws_template(lws, "leader"), name))


def lws_worker_statefulset(lws: dict[str, Any], leader: dict[str, Any]) -> dict[str, Any]:
    """lws pod controller: per leader pod `<lws>-<group>` (the leader pod's name), `size - 1`
    workers (ordinals from 1), controlled by the leader Pod."""
    name = lws["metadata"]["name"]
    group = leader["metadata"]["name"].rsplit("-", 1)[1]
    labels = {LWS_NAME: name, LWS_GROUP_INDEX: group}
    spec = _statefulset_spec(lws["spec"]["leaderWorkerTemplate"]["size"] - 1, labels,
                             lws_template(lws, "worker"), name)
    spec["ordinals"] = {"start": 1}
    return _child("apps/v1", "StatefulSet", leader, leader["metadata"]["name"], labels, spec)


def ray_pod_specs(rc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(generateName, group, pod template) of every pod KubeRay runs for the cluster: the head
    `<cluster>-head-`, each worker `<cluster>-<group>-worker-` (utils.PodName)."""
    name = rc["metadata"]["name"]
    pods = [(f"{name}-head-", "headgroup", rc["spec"]["headGroupSpec"]["template"])]
    for group in rc["spec"].get("workerGroupSpecs", []):
        pods += [(f"{name}-{group['groupName']}-worker-", group["groupName"],
                  group["template"])] * group.get("replicas", 1)
    return pods


def ray_pod(rc: dict[str, Any], generate_name: str, group: str, template: dict[str, Any]
            ) -> dict[str, Any]:
    labels = {RAY_CLUSTER: rc["metadata"]["name"], RAY_GROUP_LABEL: group,
              RAY_NODE_TYPE: "head" if group == "headgroup" else "worker"}
    pod = _child("v1", "Pod", rc, "", labels, copy.deepcopy(template["spec"]))
    del pod["metadata"]["name"]
    pod["metadata"]["generateName"] = generate_name
    return pod


def kserve_predictor_deployment(isvc: dict[str, Any]) -> dict[str, Any]:
    """KServe raw deployment: the Deployment `<isvc>-predictor` (PredictorServiceName),
    controlled by the InferenceService, whose pod is the predictor's PodSpec; a `model`
    predictor runs a `kserve-container` of the runtime KServe picks (here the Hugging Face
    server's GPU image, picked by the GPU limit)."""
    name = isvc["metadata"]["name"]
    predictor = isvc["spec"]["predictor"]
    pod = {k: copy.deepcopy(v) for k, v in predictor.items()
           if k not in KSERVE_COMPONENT_FIELDS}
    model = predictor.get("model")
    if model is not None:
        container = {"name": "kserve-container",
                     "image": "kserve/huggingfaceserver:v0.15.0-gpu",
                     "resources": copy.deepcopy(model.get("resources", {}))}
        pod["containers"] = [container, *pod.get("containers", [])]
    labels = {ISVC_LABEL: name, "app": f"isvc.{name}-predictor"}
    return _child("apps/v1", "Deployment", isvc, f"{name}-predictor", {ISVC_LABEL: name},
                  {"replicas": predictor.get("minReplicas", 1),
                   "selector": {"matchLabels": labels},
                   "template": {"metadata": {"labels": labels}, "spec": pod}})


# --- the fleet ------------------------------------------------------------------------------

def _operators() -> Fleet:
    pools = (Pool("h100", H100_80GB, 2, 4), Pool("a100", A100_80GB, 2, 4),
             Pool("l4", L4, 1, 4), Pool("l4-spare", L4, 1, 4))
    custom = _gpu_spec(H100_80GB, 1, "kserve-container")
    hf_model = {"nodeSelector": {"nvidia.com/gpu.product": L4.label},
                "model": {"modelFormat": {"name": "huggingface"},
                          "storageUri": "hf://example/summarizer",
                          "resources": {"limits": {"nvidia.com/gpu": "1"}}}}
    objects = (
        leaderworkerset("serving", "llm", 1, 2, _gpu_spec(H100_80GB, 2)),
        inferenceservice("serving", "chat", custom),
        inferenceservice("serving", "summarize", hf_model),
        jobset("batch", "pretrain", "workers", 2, _gpu_spec(A100_80GB, 2)),
        raycluster("research", "ray", "gpu", 2, _gpu_spec(A100_80GB, 1, "ray-worker")),
        helm_managed(deployment("web", "embed", 2, _gpu_spec(H100_80GB, 1)), "embed"),
        argo_managed(deployment("web", "rerank", 2, _gpu_spec(L4, 1)), "rerank"),
    )
    running = {("serving", "LeaderWorkerSet", "llm"): 2,
               ("serving", "InferenceService", "chat"): 1,
               ("serving", "InferenceService", "summarize"): 1,
               ("batch", "JobSet", "pretrain"): 2, ("research", "RayCluster", "ray"): 2,
               ("web", "Deployment", "embed"): 2, ("web", "Deployment", "rerank"): 2}
    return Fleet(pools, ("serving", "batch", "research", "web"), objects, running, ADMISSION)


OPERATORS = _operators()
# The workload convert blocks (KServe reads the limit it would remove), and why
BLOCKED = ("serving", "InferenceService", "summarize")
