"""GPU workload CRDs (and the GPU Operator's DRA stack) for the fake's `crds:` catalogue.

Kept apart from state.py's KNOWN_CRDS so that the two can grow independently. Scope, versions
and short names from each project's CRD markers: kubernetes-sigs/lws api/leaderworkerset/v1
(`leaderworkersets`, namespaced, short name `lws`); kubernetes-sigs/jobset api/jobset/v1alpha2
(namespaced); ray-project/kuberay ray-operator/apis/ray/v1 (`rayclusters`, namespaced);
kserve pkg/apis/serving/v1beta1 (`inferenceservices`, namespaced, short name `isvc`);
NVIDIA/gpu-operator api/nvidia/v1alpha1 (`gpuclusters`, cluster-scoped).
"""

from __future__ import annotations

from typing import Any

WORKLOAD_CRDS: dict[str, dict[str, Any]] = {
    "leaderworkersets.leaderworkerset.x-k8s.io": {
        "group": "leaderworkerset.x-k8s.io", "version": "v1", "plural": "leaderworkersets",
        "kind": "LeaderWorkerSet", "namespaced": True, "shortNames": ["lws"]},
    "jobsets.jobset.x-k8s.io": {
        "group": "jobset.x-k8s.io", "version": "v1alpha2", "plural": "jobsets",
        "kind": "JobSet", "namespaced": True},
    "rayclusters.ray.io": {
        "group": "ray.io", "version": "v1", "plural": "rayclusters", "kind": "RayCluster",
        "namespaced": True},
    "inferenceservices.serving.kserve.io": {
        "group": "serving.kserve.io", "version": "v1beta1", "plural": "inferenceservices",
        "kind": "InferenceService", "namespaced": True, "shortNames": ["isvc"]},
    "gpuclusters.nvidia.com": {
        "group": "nvidia.com", "version": "v1alpha1", "plural": "gpuclusters",
        "kind": "GPUCluster", "namespaced": False},
}
