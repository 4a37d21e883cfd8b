#!/usr/bin/env python3
"""Generate a deterministic, realistic cluster state for the fake API server (tests/fakeapi).

    python benchmarks/gen_cluster.py OUT.json [--seed 1] [--deployments 2000] [--replicas 10]
                                     [--nodes 500] [--gpu-nodes 100] [--dra-nodes 20]
                                     [--gpu-percent 5] [--claim-percent 0] [--version 1.34.2]

or in Python: ``build_state(seed=1)`` returns the state dict for ``FakeCluster(state)``.

Contents (defaults): 40 team namespaces; 2,000 Deployments, each with one ReplicaSet (owner
reference to the Deployment) and 10 pods (owner reference to the ReplicaSet): 20,000 pods of
~3 KB JSON each, with managedFields, status, projected service-account volume and probes. 5% of
the Deployments (so 5% of the pods) request `nvidia.com/gpu` in limits (1, 2 or 4); their pods
run on the device-plugin GPU nodes while GPUs are free, the rest stay Pending (Unschedulable).
500 nodes, 100 of them GPU nodes (8 GPUs, GFD labels, `nvidia.com/gpu=present:NoSchedule`
taint). The last `--dra-nodes` GPU nodes run the NVIDIA DRA driver instead of the device plugin:
no `nvidia.com/gpu` allocatable, one ResourceSlice each (8 devices, resource.k8s.io/v1).
Also: DaemonSets (nvidia-device-plugin-daemonset, gpu-feature-discovery, kube-proxy,
node-exporter), StatefulSets, Jobs and CronJobs (some with GPUs, no pods), a ResourceQuota per
namespace (GPU teams: `requests.nvidia.com/gpu`), DeviceClasses gpu.nvidia.com and
mig.nvidia.com, the clusterpolicies.nvidia.com CRD with one ClusterPolicy.

`--claim-percent P` (default 0: none) makes the cluster one in mid-migration: P% of the GPU
Deployments are already converted. Their pod template names a ResourceClaimTemplate
(`<app>-gpu`, one ExactCount request of 1, 2 or 4 `gpu.nvidia.com` devices) instead of
`nvidia.com/gpu`, and every pod has its generated ResourceClaim (owned by the pod, named in
its status.resourceClaimStatuses). While devices are free on the DRA nodes a pod runs there,
Ready, and its claim is allocated (status.allocation.devices.results from that node's
ResourceSlice, reservedFor the pod); the rest stay Pending with an unallocated claim. With the
option, every Pending GPU pod (device plugin or claims) also has the scheduler's
FailedScheduling Event (core/v1, involvedObject the pod). With P = 0 the output is exactly
what it was before the option existed (no random draw depends on it).

The generator writes JSON (the fake loads 60 MB of JSON in about a second; YAML would take
half a minute). Only the standard library is used; equal arguments give byte-identical output.
OUT.meta (JSON) counts what was generated, for benchmark correctness checks.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import uuid
from typing import Any

TEAMS = ["payments", "checkout", "search", "ranking", "ads", "identity", "billing", "catalog",
         "inventory", "shipping", "notifications", "analytics", "platform", "observability",
         "data-eng", "ml-research", "ml-serving", "fraud", "growth", "support", "mobile-api",
         "media", "recommendations", "security", "llm-serving", "vision", "speech", "forecast",
         "pricing", "ledger", "reporting", "crm", "maps", "messaging", "storage", "edge",
         "ml-training", "risk", "content", "partners"]
APPS = ["order-api", "user-worker", "cart-gateway", "price-svc", "event-consumer", "feed-indexer",
        "report-sync", "image-proxy", "token-cache", "profile-backend", "query-frontend",
        "stream-processor", "audit-exporter", "route-batch", "email-scheduler", "geo-api"]
GPU_APPS = ["llm-inference", "embedding-server", "triton", "vllm", "trainer", "reranker"]
IMAGES = ["registry.internal.example.com/{team}/{app}:1.{minor}.{patch}",
          "ghcr.io/example-corp/{app}:v2.{minor}.{patch}"]
GPU_IMAGES = ["nvcr.io/nvidia/tritonserver:24.05-py3", "vllm/vllm-openai:v0.5.0",
              "nvcr.io/nvidia/pytorch:24.05-py3"]
GPU_MODELS = [  # product label, DRA productName, family, compute capability, machine, memory MiB
    ("NVIDIA-A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", "ampere", (8, 0), "p4de.24xlarge", 81920),
    ("NVIDIA-H100-80GB-HBM3", "NVIDIA H100 80GB HBM3", "hopper", (9, 0), "p5.48xlarge", 81559),
]
DRIVER = (570, 124, 6)
CUDA = (12, 8)
KUBE_API_ACCESS_SOURCES = [
    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
    {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
    {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1",
                                             "fieldPath": "metadata.namespace"},
                                "path": "namespace"}]}},
]
BASE_TOLERATIONS = [
    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
     "tolerationSeconds": 300},
    {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
     "tolerationSeconds": 300},
]
GPU_TOLERATION = {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}
GPUS_PER_NODE = 8


class Generator:
    def __init__(self, seed: int, version: str) -> None:
        self.rng = random.Random(seed)
        self.version = version
        self.rv = 5000

    # --- small deterministic values --------------------------------------------------------

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def hexstr(self, length: int) -> str:
        return f"{self.rng.getrandbits(4 * length):0{length}x}"

    def suffix(self, length: int) -> str:
        return "".join(self.rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(length))

    def time(self, day_min: int = 1, day_max: int = 28) -> str:
        return (f"2026-0{self.rng.randint(1, 9)}-{self.rng.randint(day_min, day_max):02d}T"
                f"{self.rng.randint(0, 23):02d}:{self.rng.randint(0, 59):02d}:"
                f"{self.rng.randint(0, 59):02d}Z")

    def ip(self, prefix: str) -> str:
        return f"{prefix}.{self.rng.randint(0, 255)}.{self.rng.randint(1, 254)}"

    def next_rv(self) -> str:
        self.rv += self.rng.randint(1, 40)
        return str(self.rv)

    # --- nodes -----------------------------------------------------------------------------

    def node(self, name: str, gpu_model: tuple | None, dra: bool) -> dict[str, Any]:
        created = self.time(1, 5)
        labels = {
            "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "topology.kubernetes.io/region": "us-east-1",
            "topology.kubernetes.io/zone": self.rng.choice(["us-east-1a", "us-east-1b",
                                                            "us-east-1c"]),
        }
        capacity = {"cpu": "32", "ephemeral-storage": "209702892Ki", "hugepages-1Gi": "0",
                    "hugepages-2Mi": "0", "memory": "130451960Ki", "pods": "110"}
        taints: list[dict[str, Any]] = []
        if gpu_model is not None:
            product, _, family, (major, minor), machine, memory = gpu_model
            labels.update({
                "node.kubernetes.io/instance-type": machine,
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": product,
                "nvidia.com/gpu.count": str(GPUS_PER_NODE),
                "nvidia.com/gpu.memory": str(memory),
                "nvidia.com/gpu.family": family,
                "nvidia.com/gpu.compute.major": str(major),
                "nvidia.com/gpu.compute.minor": str(minor),
                "nvidia.com/gpu.machine": machine,
                "nvidia.com/gpu.mode": "compute",
                "nvidia.com/gpu.replicas": "1",
                "nvidia.com/gpu.sharing-strategy": "none",
                "nvidia.com/cuda.driver-version.major": str(DRIVER[0]),
                "nvidia.com/cuda.driver-version.minor": str(DRIVER[1]),
                "nvidia.com/cuda.driver-version.revision": f"{DRIVER[2]:02d}",
                "nvidia.com/cuda.driver-version.full": f"{DRIVER[0]}.{DRIVER[1]}.{DRIVER[2]:02d}",
                "nvidia.com/cuda.runtime-version.major": str(CUDA[0]),
                "nvidia.com/cuda.runtime-version.minor": str(CUDA[1]),
                "nvidia.com/cuda.runtime-version.full": f"{CUDA[0]}.{CUDA[1]}",
                "nvidia.com/mig.capable": "true",
                "nvidia.com/mps.capable": "false",
                "nvidia.com/gfd.timestamp": str(1767600000 + self.rng.randint(0, 10 ** 6)),
                "nvidia.com/gpu.deploy.device-plugin": "false" if dra else "true",
                "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
            })
            capacity.update(cpu="96", memory="1056858908Ki")
            if not dra:
                capacity["nvidia.com/gpu"] = str(GPUS_PER_NODE)
            taints.append({"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "present"})
        else:
            labels["node.kubernetes.io/instance-type"] = "m6i.8xlarge"
        allocatable = dict(capacity, cpu=str(int(capacity["cpu"]) * 1000 - 190) + "m",
                           memory=str(int(capacity["memory"][:-2]) - 4_000_000) + "Ki")
        node: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {
                "name": name, "uid": self.uid(), "resourceVersion": self.next_rv(),
                "creationTimestamp": created, "labels": labels,
                "annotations": {
                    "node.alpha.kubernetes.io/ttl": "0",
                    "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
            "spec": {"providerID": f"aws:///us-east-1a/i-0{self.hexstr(16)}"},
            "status": {
                "addresses": [{"address": self.ip("10.20"), "type": "InternalIP"},
                              {"address": name, "type": "Hostname"}],
                "allocatable": allocatable, "capacity": capacity,
                "conditions": [
                    {"lastHeartbeatTime": "2026-11-30T12:00:00Z", "lastTransitionTime": created,
                     "message": message, "reason": reason, "status": status, "type": kind}
                    for kind, status, reason, message in (
                        ("MemoryPressure", "False", "KubeletHasSufficientMemory",
                         "kubelet has sufficient memory available"),
                        ("DiskPressure", "False", "KubeletHasNoDiskPressure",
                         "kubelet has no disk pressure"),
                        ("PIDPressure", "False", "KubeletHasSufficientPID",
                         "kubelet has sufficient PID available"),
                        ("Ready", "True", "KubeletReady", "kubelet is posting ready status"))],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {
                    "architecture": "amd64", "bootID": self.uid(),
                    "containerRuntimeVersion": "containerd://2.0.5",
                    "kernelVersion": "6.1.141-155.222.amzn2023.x86_64",
                    "kubeProxyVersion": f"v{self.version}", "kubeletVersion": f"v{self.version}",
                    "machineID": self.hexstr(32), "operatingSystem": "linux",
                    "osImage": "Amazon Linux 2023.7.20250609", "systemUUID": self.uid()},
            },
        }
        if taints:
            node["spec"]["taints"] = taints
        return node

    def resource_slice(self, node: dict[str, Any], gpu_model: tuple) -> dict[str, Any]:
        name = node["metadata"]["name"]
        _, product, family, (major, minor), _, memory = gpu_model
        devices = []
        for index in range(GPUS_PER_NODE):
            devices.append({
                "name": f"gpu-{index}",
                "attributes": {
                    "type": {"string": "gpu"},
                    "uuid": {"string": f"GPU-{self.uid()}"},
                    "productName": {"string": product},
                    "brand": {"string": "Nvidia"},
                    "architecture": {"string": family.capitalize()},
                    "cudaComputeCapability": {"version": f"{major}.{minor}.0"},
                    "driverVersion": {"version": ".".join(map(str, DRIVER))},
                    "cudaDriverVersion": {"version": f"{CUDA[0]}.{CUDA[1]}.0"},
                    "resource.kubernetes.io/pciBusID": {
                        "string": f"0000:{16 + index * 16:02x}:00.0"},
                    "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{index // 2:02x}"},
                },
                "capacity": {"memory": {"value": f"{memory}Mi"}},
            })
        return {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {
                "name": f"{name}-gpu.nvidia.com-{self.suffix(5)}", "uid": self.uid(),
                "resourceVersion": self.next_rv(), "creationTimestamp": self.time(5, 9),
                "generateName": f"{name}-gpu.nvidia.com-",
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name,
                                     "uid": node["metadata"]["uid"], "controller": True}]},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": name,
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices},
        }

    # --- workloads -------------------------------------------------------------------------

    def container(self, team: str, app: str, gpus: int, on_claims: bool = False
                  ) -> dict[str, Any]:
        image = (self.rng.choice(GPU_IMAGES) if gpus else self.rng.choice(IMAGES).format(
            team=team, app=app, minor=self.rng.randint(0, 40), patch=self.rng.randint(0, 9)))
        limits: dict[str, Any] = {"memory": f"{self.rng.choice([1, 2, 4, 8])}Gi"}
        if gpus and not on_claims:
            limits["nvidia.com/gpu"] = str(gpus)
        log_level = self.rng.choice(["info", "warn", "debug"])  # drawn before the requests
        resources: dict[str, Any] = {
            "limits": limits, "requests": {"cpu": f"{self.rng.choice([100, 250, 500, 1000])}m",
                                           "memory": limits["memory"]}}
        if on_claims:
            resources["claims"] = [{"name": "gpu"}]
        return {
            "name": app, "image": image, "imagePullPolicy": "IfNotPresent",
            "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
            "env": [{"name": "APP_ENV", "value": "production"},
                    {"name": "LOG_LEVEL", "value": log_level}],
            "resources": resources,
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http",
                                           "scheme": "HTTP"}, "periodSeconds": 10},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        }

    def pod_template(self, team: str, app: str, gpus: int, template_name: str | None = None
                     ) -> dict[str, Any]:
        """With `template_name`, the GPUs come from that ResourceClaimTemplate (entry `gpu`)."""
        labels = {"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": team}
        spec: dict[str, Any] = {
            "containers": [self.container(team, app, gpus, template_name is not None)],
            "dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
            "schedulerName": "default-scheduler", "securityContext": {},
            "terminationGracePeriodSeconds": 30}
        if gpus:
            spec["tolerations"] = [GPU_TOLERATION]
            spec["nodeSelector"] = {"nvidia.com/gpu.present": "true"}
        if template_name:
            spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template_name}]
        return {"metadata": {"labels": labels}, "spec": spec}

    # --- DRA claims and scheduler events -------------------------------------------------

    def claim_template(self, namespace: str, name: str, gpus: int) -> dict[str, Any]:
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": name, "namespace": namespace, "uid": self.uid(),
                             "resourceVersion": self.next_rv(),
                             "creationTimestamp": self.time(1, 9)},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                    "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount",
                    "count": gpus}}]}}}}

    def resource_claim(self, pod: dict[str, Any], template: dict[str, Any],
                       node: str | None, devices: list[str]) -> dict[str, Any]:
        """The claim the resourceclaim controller made for `pod` from `template`; allocated
        (`devices` on `node`'s pool) and reserved for the pod when the pod was scheduled."""
        meta = pod["metadata"]
        status: dict[str, Any] = {}
        if node is not None:
            status["allocation"] = {
                "devices": {"results": [{"request": "gpu", "driver": "gpu.nvidia.com",
                                         "pool": node, "device": device}
                                        for device in devices]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{
                    "key": "metadata.name", "operator": "In", "values": [node]}]}]}}
            status["reservedFor"] = [{"resource": "pods", "name": meta["name"],
                                      "uid": meta["uid"]}]
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": pod["status"]["resourceClaimStatuses"][0]
                             ["resourceClaimName"],
                             "generateName": f"{meta['name']}-gpu-",
                             "namespace": meta["namespace"], "uid": self.uid(),
                             "resourceVersion": self.next_rv(),
                             "creationTimestamp": meta["creationTimestamp"],
                             "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Pod",
                                                  "name": meta["name"], "uid": meta["uid"],
                                                  "controller": True,
                                                  "blockOwnerDeletion": True}]},
                "spec": template["spec"]["spec"], "status": status}

    def failed_scheduling(self, pod: dict[str, Any]) -> dict[str, Any]:
        """The scheduler's Event for a Pending pod, with its PodScheduled condition's message."""
        meta = pod["metadata"]
        message = next(c["message"] for c in pod["status"]["conditions"]
                       if c["type"] == "PodScheduled")
        first = meta["creationTimestamp"]
        return {"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": f"{meta['name']}.{self.hexstr(16)}",
                             "namespace": meta["namespace"], "uid": self.uid(),
                             "resourceVersion": self.next_rv(), "creationTimestamp": first},
                "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                   "namespace": meta["namespace"], "uid": meta["uid"],
                                   "resourceVersion": meta["resourceVersion"]},
                "reason": "FailedScheduling", "type": "Warning", "message": message,
                "source": {"component": "default-scheduler"},
                "reportingComponent": "default-scheduler", "reportingInstance": "",
                "firstTimestamp": first, "lastTimestamp": "2026-11-30T11:58:00Z",
                "count": self.rng.randint(20, 400), "eventTime": None}

    def managed_fields(self, manager: str, time: str, fields: dict[str, Any],
                       subresource: str = "", api_version: str = "v1") -> dict[str, Any]:
        entry = {"apiVersion": api_version, "fieldsType": "FieldsV1", "fieldsV1": fields,
                 "manager": manager, "operation": "Update", "time": time}
        if subresource:
            entry["subresource"] = subresource
        return entry

    def pod(self, namespace: str, rs: dict[str, Any], template: dict[str, Any], gpus: int,
            node: str | None, pod_hash: str, unschedulable: str | None = None
            ) -> dict[str, Any]:
        """`gpus` through the device plugin, or through the template's resourceClaims (then
        the pod's generated claim is named in its status). `unschedulable`: the PodScheduled
        message of a Pending pod."""
        rs_name = rs["metadata"]["name"]
        created = self.time(10, 28)
        container = dict(template["spec"]["containers"][0])
        on_claims = bool(template["spec"].get("resourceClaims"))
        if gpus and not on_claims:  # the API server defaults requests to limits (extended)
            container["resources"] = {
                "limits": container["resources"]["limits"],
                "requests": dict(container["resources"]["requests"], **{
                    "nvidia.com/gpu": str(gpus)})}
        volume_name = f"kube-api-access-{self.suffix(5)}"
        container["volumeMounts"] = [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                      "name": volume_name, "readOnly": True}]
        spec = dict(template["spec"], containers=[container],
                    enableServiceLinks=True, preemptionPolicy="PreemptLowerPriority",
                    priority=0, serviceAccount="default", serviceAccountName="default",
                    tolerations=BASE_TOLERATIONS + template["spec"].get("tolerations", []),
                    volumes=[{"name": volume_name, "projected": {
                        "defaultMode": 420, "sources": KUBE_API_ACCESS_SOURCES}}])
        labels = dict(template["metadata"]["labels"], **{"pod-template-hash": pod_hash})
        metadata = {
            "name": f"{rs_name}-{self.suffix(5)}", "generateName": f"{rs_name}-",
            "namespace": namespace, "uid": self.uid(), "resourceVersion": self.next_rv(),
            "creationTimestamp": created, "labels": labels,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": rs_name, "uid": rs["metadata"]["uid"],
                                 "controller": True, "blockOwnerDeletion": True}],
        }
        if node is None:
            status = {"phase": "Pending", "qosClass": "Burstable", "conditions": [{
                "lastProbeTime": None, "lastTransitionTime": created,
                "message": unschedulable or (
                    "0/500 nodes are available: 80 Insufficient nvidia.com/gpu, 420 "
                    "node(s) didn't match Pod's node affinity/selector."),
                "reason": "Unschedulable", "status": "False", "type": "PodScheduled"}]}
        else:
            spec["nodeName"] = node
            pod_ip, host_ip = self.ip("10.100"), self.ip("10.20")
            started = created
            status = {
                "phase": "Running", "qosClass": "Burstable", "startTime": started,
                "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
                "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
                "conditions": [{"lastProbeTime": None, "lastTransitionTime": created,
                                "status": "True", "type": kind} for kind in (
                    "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                    "PodScheduled")],
                "containerStatuses": [{
                    "containerID": f"containerd://{self.hexstr(64)}",
                    "image": container["image"],
                    "imageID": f"{container['image'].split(':')[0]}@sha256:{self.hexstr(64)}",
                    "lastState": {}, "name": container["name"], "ready": True,
                    "restartCount": self.rng.choice([0, 0, 0, 1, 3]), "started": True,
                    "state": {"running": {"startedAt": started}}}],
            }
        metadata["managedFields"] = [
            self.managed_fields("kube-controller-manager", created, {
                "f:metadata": {"f:generateName": {}, "f:labels": {
                    ".": {}, **{f"f:{key}": {} for key in labels}},
                    "f:ownerReferences": {".": {}, f'k:{{"uid":"{rs["metadata"]["uid"]}"}}': {}}},
                "f:spec": {"f:containers": {f'k:{{"name":"{container["name"]}"}}': {
                    ".": {}, "f:env": {}, "f:image": {}, "f:name": {}, "f:ports": {},
                    "f:resources": {}}}, "f:dnsPolicy": {}, "f:restartPolicy": {}}}),
            self.managed_fields("kubelet", created, {"f:status": {
                "f:conditions": {}, "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {},
                "f:phase": {}, "f:podIP": {}, "f:podIPs": {}, "f:startTime": {}}},
                subresource="status"),
        ]
        if on_claims:  # the resourceclaim controller names the claim it made for the entry
            status["resourceClaimStatuses"] = [{
                "name": "gpu", "resourceClaimName": f"{metadata['name']}-gpu-{self.suffix(5)}"}]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec,
                "status": status}

    def deployment(self, namespace: str, team: str, app: str, replicas: int,
                   template: dict[str, Any]) -> dict[str, Any]:
        created = self.time(1, 9)
        selector = {"matchLabels": {"app.kubernetes.io/name": app}}
        return {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {
                "name": app, "namespace": namespace, "uid": self.uid(),
                "resourceVersion": self.next_rv(), "generation": 3, "creationTimestamp": created,
                "labels": {"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": team},
                "annotations": {"deployment.kubernetes.io/revision": "3"},
                "managedFields": [self.managed_fields("argocd-controller", created, {
                    "f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {}}},
                    api_version="apps/v1")]},
            "spec": {"replicas": replicas, "revisionHistoryLimit": 10, "selector": selector,
                     "progressDeadlineSeconds": 600,
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {
                         "maxSurge": "25%", "maxUnavailable": "25%"}},
                     "template": template},
            "status": {"replicas": replicas, "updatedReplicas": replicas,
                       "readyReplicas": replicas, "availableReplicas": replicas,
                       "observedGeneration": 3},
        }

    def replica_set(self, deployment: dict[str, Any], pod_hash: str) -> dict[str, Any]:
        meta = deployment["metadata"]
        template = deployment["spec"]["template"]
        labels = dict(template["metadata"]["labels"], **{"pod-template-hash": pod_hash})
        replicas = deployment["spec"]["replicas"]
        return {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {
                "name": f"{meta['name']}-{pod_hash}", "namespace": meta["namespace"],
                "uid": self.uid(), "resourceVersion": self.next_rv(), "generation": 1,
                "creationTimestamp": self.time(9, 12), "labels": labels,
                "annotations": {"deployment.kubernetes.io/desired-replicas": str(replicas),
                                "deployment.kubernetes.io/max-replicas": str(replicas + 3),
                                "deployment.kubernetes.io/revision": "3"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                     "name": meta["name"], "uid": meta["uid"],
                                     "controller": True, "blockOwnerDeletion": True}]},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {
                "app.kubernetes.io/name": meta["name"], "pod-template-hash": pod_hash}},
                "template": dict(template, metadata=dict(template["metadata"], labels=labels))},
            "status": {"replicas": replicas, "fullyLabeledReplicas": replicas,
                       "readyReplicas": replicas, "availableReplicas": replicas,
                       "observedGeneration": 1},
        }

    def controller(self, kind: str, namespace: str, name: str, template: dict[str, Any],
                   extra_spec: dict[str, Any]) -> dict[str, Any]:
        api_version = "batch/v1" if kind in ("Job", "CronJob") else "apps/v1"
        if kind == "CronJob":
            spec = {"schedule": "0 2 * * *", "concurrencyPolicy": "Forbid",
                    "jobTemplate": {"spec": {"backoffLimit": 2, "template": template}}}
        else:
            spec = {"template": template}
        spec.update(extra_spec)
        return {"apiVersion": api_version, "kind": kind,
                "metadata": {"name": name, "namespace": namespace, "uid": self.uid(),
                             "resourceVersion": self.next_rv(),
                             "creationTimestamp": self.time(1, 9),
                             "labels": {"app.kubernetes.io/name": name}},
                "spec": spec, "status": {}}


def build_state(**options: Any) -> dict[str, Any]:
    """The state dict for FakeCluster (tests/fakeapi/README.md); options as for generate()."""
    return generate(**options)[0]


def generate(seed: int = 1, deployments: int = 2000, replicas: int = 10, nodes: int = 500,
             gpu_nodes: int = 100, dra_nodes: int = 20, gpu_percent: float = 5.0,
             version: str = "1.34.2", claim_percent: float = 0.0
             ) -> tuple[dict[str, Any], dict[str, Any]]:
    """(state, meta): the state dict and a summary of what it holds, for correctness checks."""
    gen = Generator(seed, version)
    rng = gen.rng
    namespaces = list(TEAMS)
    objects: list[dict[str, Any]] = []

    # Nodes: GPU nodes first (the last `dra_nodes` of them run the DRA driver), then CPU nodes.
    gpu_node_models = [GPU_MODELS[0] if i % 5 < 3 else GPU_MODELS[1] for i in range(gpu_nodes)]
    node_objects = []
    for index in range(nodes):
        is_gpu = index < gpu_nodes
        dra = is_gpu and index >= gpu_nodes - dra_nodes
        name = f"gpu-node-{index:03d}" if is_gpu else f"cpu-node-{index - gpu_nodes:03d}"
        node_objects.append(gen.node(name, gpu_node_models[index] if is_gpu else None, dra))
    objects.extend(node_objects)
    plugin_nodes = [n["metadata"]["name"] for n in node_objects[:gpu_nodes - dra_nodes]]
    cpu_nodes = [n["metadata"]["name"] for n in node_objects[gpu_nodes:]] or plugin_nodes
    free_gpus = {name: GPUS_PER_NODE for name in plugin_nodes}
    dra_node_names = [n["metadata"]["name"] for n in node_objects[gpu_nodes - dra_nodes:gpu_nodes]]
    free_devices = {name: list(range(GPUS_PER_NODE)) for name in dra_node_names}
    claim_unschedulable = (
        f"0/{nodes} nodes are available: {gpu_nodes} cannot allocate all claims, "
        f"{nodes - gpu_nodes} node(s) didn't match Pod's node affinity/selector. preemption: "
        f"0/{nodes} nodes are available: {nodes} Preemption is not helpful for scheduling.")

    gpu_deployments = set(rng.sample(range(deployments), round(deployments * gpu_percent / 100)))
    on_claims = round(len(gpu_deployments) * claim_percent / 100)
    claim_deployments = set(rng.sample(sorted(gpu_deployments), on_claims)) if on_claims else set()
    counts = {"gpu_pods": 0, "gpu_pods_pending": 0, "gpu_requested": 0,
              "claim_deployments": len(claim_deployments), "claim_deployments_pending": 0,
              "claim_pods": 0, "claim_pods_pending": 0, "claims_allocated": 0,
              "failed_scheduling_events": 0}
    for index in range(deployments):
        namespace = namespaces[index % len(namespaces)]
        team = namespace
        gpus = rng.choice([1, 1, 1, 2, 4]) if index in gpu_deployments else 0
        base = rng.choice(GPU_APPS if gpus else APPS)
        app = f"{base}-{index:04d}"
        claim_template = None
        if index in claim_deployments:
            claim_template = gen.claim_template(namespace, f"{app}-gpu", gpus)
            objects.append(claim_template)
        template = gen.pod_template(team, app, gpus, f"{app}-gpu" if claim_template else None)
        deployment = gen.deployment(namespace, team, app, replicas, template)
        pod_hash = gen.suffix(10)
        replica_set = gen.replica_set(deployment, pod_hash)
        objects.extend((deployment, replica_set))
        if claim_template is not None:
            objects += _pods_on_claims(gen, replica_set, template, claim_template, gpus,
                                       replicas, pod_hash, free_devices, claim_unschedulable,
                                       counts)
            continue
        for _ in range(replicas):
            node = None
            if gpus:
                fitting = [name for name, free in free_gpus.items() if free >= gpus]
                if fitting:
                    node = rng.choice(fitting)
                    free_gpus[node] -= gpus
                counts["gpu_pods"] += 1
                counts["gpu_requested"] += gpus
                counts["gpu_pods_pending"] += node is None
            else:
                node = rng.choice(cpu_nodes)
            pod = gen.pod(namespace, replica_set, template, gpus, node, pod_hash)
            objects.append(pod)
            if node is None and claim_percent > 0:  # a mid-migration cluster has its events
                objects.append(gen.failed_scheduling(pod))
                counts["failed_scheduling_events"] += 1

    objects.extend(_extras(gen, namespaces, node_objects, gpu_node_models, gpu_nodes, dra_nodes))
    kinds: dict[str, int] = {}
    for obj in objects:
        kinds[obj["kind"]] = kinds.get(obj["kind"], 0) + 1
    if not claim_percent:  # the meta of a cluster without the option stays as it was
        counts = {k: counts[k] for k in ("gpu_pods", "gpu_pods_pending", "gpu_requested")}
    meta = {"seed": seed, "kinds": kinds, "gpu_deployments": len(gpu_deployments), **counts}
    state = {"version": version, "crds": ["clusterpolicies.nvidia.com"], "objects": objects}
    return state, meta


def _pods_on_claims(gen: Generator, replica_set: dict[str, Any], template: dict[str, Any],
                    claim_template: dict[str, Any], gpus: int, replicas: int, pod_hash: str,
                    free_devices: dict[str, list[int]], unschedulable: str,
                    counts: dict[str, int]) -> list[dict[str, Any]]:
    """A converted Deployment's pods with their claims: each takes `gpus` free devices of one
    DRA node while there are any (`free_devices` is updated), else stays Pending with an
    unallocated claim and the scheduler's event."""
    namespace = replica_set["metadata"]["namespace"]
    objects: list[dict[str, Any]] = []
    pending = 0
    for _ in range(replicas):
        fitting = [name for name, free in free_devices.items() if len(free) >= gpus]
        node = gen.rng.choice(fitting) if fitting else None
        devices = [f"gpu-{i}" for i in free_devices[node][:gpus]] if node else []
        if node:
            del free_devices[node][:gpus]
        pod = gen.pod(namespace, replica_set, template, gpus, node, pod_hash, unschedulable)
        objects += (pod, gen.resource_claim(pod, claim_template, node, devices))
        if node is None:
            objects.append(gen.failed_scheduling(pod))
            pending += 1
    counts["claim_pods"] += replicas
    counts["claims_allocated"] += replicas - pending
    counts["claim_pods_pending"] += pending
    counts["claim_deployments_pending"] += pending > 0
    counts["failed_scheduling_events"] += pending
    return objects


def _extras(gen: Generator, namespaces: list[str], node_objects: list[dict[str, Any]],
            models: list[tuple], gpu_nodes: int, dra_nodes: int) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for index in range(gpu_nodes - dra_nodes, gpu_nodes):
        objects.append(gen.resource_slice(node_objects[index], models[index]))
    objects.append({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && "
                                        "device.attributes['gpu.nvidia.com'].type == 'gpu'"}}],
                 "extendedResourceName": "nvidia.com/gpu"}})
    objects.append({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "mig.nvidia.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && "
                                        "device.attributes['gpu.nvidia.com'].type == 'mig'"}}]}})
    objects.append({
        "apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": {"devicePlugin": {"enabled": True}, "gfd": {"enabled": True},
                 "driver": {"enabled": True}}, "status": {"state": "ready"}})

    def daemon_set(namespace: str, name: str, image: str, node_selector: dict[str, str],
                   gpu_toleration: bool) -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [{"name": name, "image": image}],
                                "nodeSelector": node_selector, "priorityClassName":
                                "system-node-critical"}
        if gpu_toleration:
            spec["tolerations"] = [GPU_TOLERATION]
        template = {"metadata": {"labels": {"app.kubernetes.io/name": name}}, "spec": spec}
        return gen.controller("DaemonSet", namespace, name, template, {
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "updateStrategy": {"type": "RollingUpdate"}})

    objects.append(daemon_set("gpu-operator", "nvidia-device-plugin-daemonset",
                              "nvcr.io/nvidia/k8s-device-plugin:v0.17.2",
                              {"nvidia.com/gpu.deploy.device-plugin": "true"}, True))
    objects.append(daemon_set("gpu-operator", "gpu-feature-discovery",
                              "nvcr.io/nvidia/k8s-device-plugin:v0.17.2",
                              {"nvidia.com/gpu.deploy.gpu-feature-discovery": "true"}, True))
    objects.append(daemon_set("kube-system", "kube-proxy",
                              f"registry.k8s.io/kube-proxy:v{gen.version}",
                              {"kubernetes.io/os": "linux"}, False))
    objects.append(daemon_set("observability", "node-exporter",
                              "quay.io/prometheus/node-exporter:v1.8.1",
                              {"kubernetes.io/os": "linux"}, True))

    def gpu_template(name: str, gpus: int, restart: str) -> dict[str, Any]:
        template = gen.pod_template("ml-training", name, gpus)
        template["spec"]["restartPolicy"] = restart
        return template

    for name, gpus in (("redis-cache", 0), ("vector-db", 0), ("triton-model-cache", 1)):
        objects.append(gen.controller("StatefulSet", "ml-serving", name,
                                      gpu_template(name, gpus, "Always"), {
                                          "replicas": 3, "serviceName": name,
                                          "selector": {"matchLabels": {
                                              "app.kubernetes.io/name": name}}}))
    for name, gpus in (("finetune-llama", 8), ("eval-suite", 1), ("db-migrate", 0),
                       ("backfill", 0)):
        objects.append(gen.controller("Job", "ml-training", name,
                                      gpu_template(name, gpus, "Never"),
                                      {"backoffLimit": 3, "completions": 1, "parallelism": 1}))
    for name, gpus in (("nightly-eval", 2), ("report-export", 0)):
        objects.append(gen.controller("CronJob", "ml-training", name,
                                      gpu_template(name, gpus, "OnFailure"), {}))
    gpu_namespaces = {"ml-training", "ml-serving", "ml-research", "llm-serving", "vision"}
    for namespace in namespaces:
        hard = {"requests.cpu": "200", "requests.memory": "800Gi", "pods": "500"}
        if namespace in gpu_namespaces:
            hard["requests.nvidia.com/gpu"] = "64"
        objects.append({"apiVersion": "v1", "kind": "ResourceQuota",
                        "metadata": {"name": "team-quota", "namespace": namespace,
                                     "uid": gen.uid(), "resourceVersion": gen.next_rv(),
                                     "creationTimestamp": gen.time(1, 3)},
                        "spec": {"hard": hard}, "status": {"hard": hard}})
    return objects


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="state file to write (JSON)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--deployments", type=int, default=2000)
    parser.add_argument("--replicas", type=int, default=10)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--gpu-nodes", type=int, default=100)
    parser.add_argument("--dra-nodes", type=int, default=20)
    parser.add_argument("--gpu-percent", type=float, default=5.0)
    parser.add_argument("--claim-percent", type=float, default=0.0,
                        help="percent of the GPU Deployments already on ResourceClaimTemplates, "
                             "with their claims and FailedScheduling events (default 0)")
    parser.add_argument("--version", default="1.34.2")
    args = parser.parse_args(argv)
    if not 0 <= args.dra_nodes <= args.gpu_nodes <= args.nodes:
        parser.error("need 0 <= --dra-nodes <= --gpu-nodes <= --nodes")
    if not 0 <= args.claim_percent <= 100:
        parser.error("--claim-percent is a percentage: 0 to 100")
    state, meta = generate(args.seed, args.deployments, args.replicas, args.nodes,
                           args.gpu_nodes, args.dra_nodes, args.gpu_percent, args.version,
                           args.claim_percent)
    with open(args.out, "w", encoding="utf-8") as out:
        out.write(json.dumps(state, separators=(",", ":")))  # dumps: the C encoder; dump is not
    with open(args.out + ".meta", "w", encoding="utf-8") as out:
        json.dump(meta, out, indent=1, sort_keys=True)
    print(json.dumps(meta, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
