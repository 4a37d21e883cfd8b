"""Demand extraction: pods per workload, claims and their requests, classes, problems."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpudra.dra.emit import GPU_CLASS_SELECTOR
from gpudra.plan.demand import CHART_CLASSES, extract_demand

POD = {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
       "containers": [{"name": "c", "image": "x"}]}
TEMPLATE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "t", "namespace": "ml"},
            "spec": {"spec": {"devices": {"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}}


def workload(kind: str, api: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": "w", "namespace": "ml"},
            "spec": spec}


@pytest.mark.parametrize("obj, pods", [
    (workload("Pod", "v1", POD), [1]),
    (workload("Deployment", "apps/v1", {"replicas": 3, "template": {"spec": POD}}), [3]),
    (workload("Deployment", "apps/v1", {"template": {"spec": POD}}), [1]),
    (workload("StatefulSet", "apps/v1", {"replicas": 0, "template": {"spec": POD}}), [0]),
    (workload("Job", "batch/v1", {"parallelism": 4, "completions": 2, "template": {"spec": POD}}),
     [2]),
    (workload("Job", "batch/v1", {"template": {"spec": POD}}), [1]),
    (workload("CronJob", "batch/v1", {"jobTemplate": {"spec": {
        "parallelism": 3, "template": {"spec": POD}}}}), [3]),
    (workload("DaemonSet", "apps/v1", {"template": {"spec": POD}}), [None]),
    (workload("PyTorchJob", "kubeflow.org/v1", {"pytorchReplicaSpecs": {
        "Master": {"replicas": 1, "template": {"spec": POD}},
        "Worker": {"replicas": 3, "template": {"spec": POD}}}}), [1, 3]),
    (workload("RayCluster", "ray.io/v1", {
        "headGroupSpec": {"template": {"spec": POD}},
        "workerGroupSpecs": [{"replicas": 2, "template": {"spec": POD}}]}), [1, 2]),
    (workload("JobSet", "jobset.x-k8s.io/v1alpha2", {"replicatedJobs": [
        {"replicas": 2, "template": {"spec": {"parallelism": 4, "template": {"spec": POD}}}}]}),
     [8]),
    (workload("LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1", {
        "replicas": 2, "leaderWorkerTemplate": {
            "size": 4, "leaderTemplate": {"spec": POD}, "workerTemplate": {"spec": POD}}}), [2, 6]),
    (workload("Job", "batch.volcano.sh/v1alpha1", {"tasks": [
        {"replicas": 5, "template": {"spec": POD}}]}), [5]),
])
def test_pods_per_workload(obj: dict[str, Any], pods: list[int | None]) -> None:
    demand = extract_demand([TEMPLATE, obj])
    assert [g.pods for g in demand.workloads[0].groups] == pods
    assert all(c.spec is not None for g in demand.workloads[0].groups for c in g.claims)


CLAIMS = yaml.safe_load_all("""
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: v1, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.nvidia.com
          allocationMode: All
          capacity: {requests: {memory: 10Gi}}
          selectors: [{cel: {expression: "true"}}]
      - name: alt
        firstAvailable:
        - {name: big, deviceClassName: gpu.nvidia.com, count: 2}
        - {name: small, deviceClassName: mig.nvidia.com}
      constraints:
      - {requests: [gpu, alt/big], matchAttribute: resource.kubernetes.io/pcieRoot}
      - {distinctAttribute: gpu.nvidia.com/uuid}
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaimTemplate
metadata: {name: flat, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - {name: gpu, deviceClassName: gpu.nvidia.com, count: 4}
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaimTemplate
metadata: {name: wrapped-beta1, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: no-inner-spec, namespace: ml}
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared}
spec:
  devices:
    requests:
    - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com, count: 0}}
""")


def pod(*claims: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
            "spec": {"resourceClaims": list(claims), "containers": [{"name": "c"}]}}


def test_request_shapes() -> None:
    claims = list(CLAIMS)
    demand = extract_demand(claims + [pod(
        {"name": "a", "resourceClaimTemplateName": "v1"},
        {"name": "b", "resourceClaimTemplateName": "flat"},
        {"name": "c", "resourceClaimTemplateName": "wrapped-beta1"},
        {"name": "d", "resourceClaimTemplateName": "no-inner-spec"},
        {"name": "e", "resourceClaimName": "shared"},
        {"name": "f", "source": {"resourceClaimName": "shared"}},
        {"name": "g", "resourceClaimTemplateName": "absent"})])
    a, b, c, d, e, f, g = demand.workloads[0].groups[0].claims
    gpu, alt = a.spec.requests
    assert (gpu.device_class, gpu.allocation_mode, gpu.selectors) == ("gpu.nvidia.com", "All",
                                                                       ("true",))
    assert gpu.capacity == {"memory": 10 * 2**30}
    assert [(s.name, s.device_class, s.count) for s in alt.alternatives] == [
        ("big", "gpu.nvidia.com", 2), ("small", "mig.nvidia.com", 1)]
    assert a.spec.constraints[0].requests == ("gpu", "alt/big")
    assert a.spec.constraints[1].distinct_attribute == "gpu.nvidia.com/uuid"
    assert not a.spec.problems
    assert b.spec.requests[0].count == 4 and not b.spec.problems
    assert "`exactly:` is not a field of resource.k8s.io/v1beta1" in c.spec.problems[0]
    assert "no spec.spec" in d.spec.problems[0]
    # a claim without a namespace is found from any namespace; count 0 is invalid
    assert e.shared == ("ml", "shared") and "count must be a positive integer" in e.spec.problems[0]
    assert "tombstoned in Kubernetes 1.31" in f.problem
    assert g.spec is None
    assert "ResourceClaimTemplate 'absent' not found in namespace ml" in g.problem
    assert len(demand.workloads[0].problems) == 2


def test_classes_default_to_the_chart_and_input_wins() -> None:
    assert CHART_CLASSES["gpu.nvidia.com"] == (GPU_CLASS_SELECTOR,)
    assert CHART_CLASSES["vfio.gpu.nvidia.com"][0].endswith("type == 'vfio'")
    custom = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
              "metadata": {"name": "mig.nvidia.com"},
              "spec": {"selectors": [{"cel": {"expression": "true"}}]}}
    classes = extract_demand([custom]).classes
    assert classes["mig.nvidia.com"].selectors == ("true",)
    assert not classes["mig.nvidia.com"].default
    assert classes["gpu.nvidia.com"].default


@pytest.mark.parametrize(("resources", "unconverted"), [
    ({"limits": {"nvidia.com/gpu": 1}}, True),
    ({"requests": {"nvidia.com/mig-1g.10gb": "2"}}, True),
    ({"limits": {"nvidia.com/gpu.shared": 1}}, True),
    ({"limits": {"nvidia.com/gpu": "{{ .Values.gpus }}"}}, True),  # an unknown count
    ({"limits": {"nvidia.com/gpu": 0}}, False),       # asks for no device (GPU107)
    ({"limits": {"nvidia.com/gpumem": 4096}}, False),  # HAMi's, not a device-plugin device
    ({"limits": {"nvidia.com/gpucores": 30}}, False),
    ({"limits": {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4096}}, True),
])
def test_unconverted_is_what_the_audit_calls_a_device_plugin_request(
        resources: dict[str, Any], unconverted: bool) -> None:
    """One reader (gpudra.k8s.gpu_use): plan lists a workload as unconverted exactly when the audit
    finds a device-plugin request that allocates devices (GPU101-103)."""
    from gpudra.k8s.gpu_use import read_container
    from gpudra.k8s.workloads import ContainerRef

    workload = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                "spec": {"template": {"spec": {"containers": [
                    {"name": "c", "resources": resources}]}}}}
    container = workload["spec"]["template"]["spec"]["containers"][0]
    assert read_container(ContainerRef((), container, False)).device_plugin is unconverted
    assert bool(extract_demand([workload]).unconverted) is unconverted


def test_converter_hook_and_unconverted_workloads() -> None:
    legacy = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "legacy", "namespace": "ml"},
              "spec": {"template": {"spec": {"containers": [
                  {"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}}
    untouched = extract_demand([legacy])
    assert untouched.workloads == () and untouched.unconverted == (("Deployment", "legacy", "ml"),)

    def convert(obj: dict[str, Any]) -> list[dict[str, Any]] | None:
        if obj.get("kind") != "Deployment":
            return None
        spec = {"template": {"spec": POD}}
        return [{**obj, "spec": spec}, TEMPLATE]

    converted = extract_demand([legacy], converter=convert)
    (workload_,) = converted.workloads
    assert workload_.converted and workload_.groups[0].claims[0].spec is not None
    assert converted.unconverted == ()


def test_lists_are_flattened() -> None:
    listing = {"apiVersion": "v1", "kind": "List", "items": [TEMPLATE, workload("Pod", "v1", POD)]}
    assert len(extract_demand([listing]).workloads) == 1


def test_typed_lists_from_the_api_server() -> None:
    items = [{k: v for k, v in TEMPLATE.items() if k not in ("kind", "apiVersion")}]
    templates = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplateList",
                 "items": items}
    pods = {"apiVersion": "v1", "kind": "PodList", "items": [
        {"metadata": {"name": "p", "namespace": "ml"}, "spec": POD}]}
    (workload_,) = extract_demand([templates, pods]).workloads
    assert workload_.kind == "Pod" and workload_.groups[0].claims[0].spec is not None


def test_request_shapes_come_from_the_one_table() -> None:
    """Which versions carry flat requests is one table (gpudra/dra/request_shapes.py), read by
    plan as by audit, convert and TargetVersion: a version added there is read the same way
    everywhere."""
    from gpudra.convert import repair
    from gpudra.dra import request_shapes, served
    from gpudra.dra.versions import TargetVersion
    from gpudra.plan import demand
    from gpudra.rules import dra_objects

    for module in (demand, repair, dra_objects):
        assert module.FLAT_VERSIONS is request_shapes.FLAT_VERSIONS
    assert demand.GROUP is served.GROUP
    for target in TargetVersion.all():
        version = target.resource_api_version.rpartition("/")[2]
        assert target.flat_requests == (version in request_shapes.FLAT_VERSIONS)
