"""The whole-pod oracle (entitlements.py) itself: it passes a faithful conversion and fails
deliberately wrong ones, each for the reason it is wrong."""

from __future__ import annotations

import pytest
import yaml

from .entitlements import objects_from_text, pod_entitlements, whole_pod_problems

JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {{name: j, namespace: ml}}
spec:
  template:
    spec:
{body}"""


def _job(body: str) -> str:
    return JOB.format(body="".join(f"      {line}\n" for line in body.splitlines()))


def _template(name: str, requests: str) -> str:
    return f"""---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: {name}, namespace: ml}}
spec:
  spec:
    devices:
      requests: {requests}
"""


def _claimed(pod: str, requests: dict[str, int] | None = None, template: str = "") -> str:
    """A Job whose pod claims `gpu` from template j-gpu, with one whole-GPU request per name of
    `requests` (its count), or the ResourceClaimTemplate text `template`."""
    if requests is not None:
        template = _template("j-gpu", "[" + ", ".join(
            f"{{name: {name}, exactly: {{deviceClassName: gpu.nvidia.com"
            f"{'' if count == 1 else f', count: {count}'}}}}}" for name, count in requests.items())
            + "]")
    claims = "resourceClaims: [{name: gpu, resourceClaimTemplateName: j-gpu}]\n"
    return _job(claims + pod) + template


PREP = _job("""\
initContainers:
- {name: prep, image: x, resources: {limits: {nvidia.com/gpu: 4}}}
containers:
- {name: main, image: x, resources: {limits: {nvidia.com/gpu: 1}}}""")
# The device plugin gives this pod max(4, 1) = 4 GPUs: prep sees 4, main 1 of them.
PREP_RIGHT = _claimed("""\
initContainers:
- {name: prep, image: x, resources: {claims: [{name: gpu}]}}
containers:
- {name: main, image: x, resources: {claims: [{name: gpu, request: main}]}}""",
    {"main": 1, "prep": 3})
# What gpudra wrote before issue 13: prep got 4 devices of its own, the pod needs 5.
PREP_FIVE = _claimed("""\
initContainers:
- {name: prep, image: x, resources: {claims: [{name: gpu, request: prep}]}}
containers:
- {name: main, image: x, resources: {claims: [{name: gpu, request: main}]}}""",
    {"main": 1, "prep": 4})

TWO_KINDS = _job("""\
containers:
- {name: a, image: x, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/mig-1g.5gb: 1}}}""")
TWO_KINDS_CLAIM = _template(
    "j-gpu", "[{name: a, exactly: {deviceClassName: gpu.nvidia.com}}, {name: a-2, exactly: "
             "{deviceClassName: mig.nvidia.com, selectors: [{cel: {expression: "
             "'device.attributes[\"gpu.nvidia.com\"].profile == \"1g.5gb\"'}}]}}]")
# Both requests are allocated, but the container names only the MIG one.
TWO_KINDS_LAST_ONLY = _claimed("""\
containers:
- {name: a, image: x, resources: {claims: [{name: gpu, request: a-2}]}}""",
    template=TWO_KINDS_CLAIM)
TWO_KINDS_RIGHT = _claimed("""\
containers:
- {name: a, image: x, resources: {claims: [{name: gpu}]}}""", template=TWO_KINDS_CLAIM)

TWO_APPS = _job("""\
containers:
- {name: a, image: x, resources: {limits: {nvidia.com/gpu: 1}}}
- {name: b, image: x, resources: {limits: {nvidia.com/gpu: 1}}}""")
# Each sees one device and the pod takes two, but a and b share one and the other is idle.
TWO_APPS_SHARING = _claimed("""\
containers:
- {name: a, image: x, resources: {claims: [{name: gpu, request: a}]}}
- {name: b, image: x, resources: {claims: [{name: gpu, request: a}]}}""", {"a": 1, "b": 1})

SIDECAR = _job("""\
initContainers:
- {name: proxy, image: x, restartPolicy: Always, resources: {limits: {nvidia.com/gpu: 1}}}
- {name: prep, image: x, resources: {limits: {nvidia.com/gpu: 1}}}
containers:
- {name: main, image: x, resources: {limits: {nvidia.com/gpu: 1}}}""")
# prep runs while the sidecar runs: it cannot take the sidecar's device (kubernetes#120461).
SIDECAR_REUSED = _claimed("""\
initContainers:
- {name: proxy, image: x, restartPolicy: Always, resources: {claims: [{name: gpu, request: proxy}]}}
- {name: prep, image: x, resources: {claims: [{name: gpu, request: proxy}]}}
containers:
- {name: main, image: x, resources: {claims: [{name: gpu, request: main}]}}""",
    {"proxy": 1, "main": 1})
SIDECAR_RIGHT = SIDECAR_REUSED.replace("{name: prep, image: x, resources: {claims: [{name: gpu, "
                                       "request: proxy}]}}",
                                       "{name: prep, image: x, resources: {claims: [{name: gpu, "
                                       "request: main}]}}")

BIG = _job("""\
containers:
- {name: a, image: x, resources: {limits: {nvidia.com/gpu: 20}}}
- {name: b, image: x, resources: {limits: {nvidia.com/gpu: 20}}}""")
# Right counts, but the allocator refuses a claim of 40 devices (AllocationResultsMaxSize).
BIG_ONE_CLAIM = _claimed("""\
containers:
- {name: a, image: x, resources: {claims: [{name: gpu, request: a}]}}
- {name: b, image: x, resources: {claims: [{name: gpu, request: b}]}}""", {"a": 20, "b": 20})


def _in_template(text: str) -> str:
    """The objects of `text` as an OpenShift Template's, which `oc process` creates."""
    return yaml.safe_dump({"apiVersion": "template.openshift.io/v1", "kind": "Template",
                           "metadata": {"name": "t", "namespace": "openshift"},
                           "objects": list(yaml.safe_load_all(text))})


def _problems(before: str, after: str) -> list[str]:
    return whole_pod_problems(objects_from_text(before), objects_from_text(after))


# A DRA pod whose containers share a device on purpose (the NVIDIA DRA driver's gpu-test2),
# left alone by convert: not the conversion's doing.
@pytest.mark.parametrize("before, after", [(PREP, PREP_RIGHT), (TWO_KINDS, TWO_KINDS_RIGHT),
                                           (SIDECAR, SIDECAR_RIGHT), (PREP, PREP),
                                           (TWO_APPS_SHARING, TWO_APPS_SHARING),
                                           (_in_template(PREP), _in_template(PREP_RIGHT))])
def test_faithful_conversions_pass(before: str, after: str) -> None:
    assert _problems(before, after) == []


@pytest.mark.parametrize("before, after, said", [
    (PREP, PREP_FIVE, "the pod allocates 5 x gpu.nvidia.com, the device plugin gave it "
                      "4 x gpu.nvidia.com"),
    (TWO_KINDS, TWO_KINDS_LAST_ONLY, "container 'a' sees 1 x mig.nvidia.com 1g.5gb, it had "
                                     "1 x gpu.nvidia.com, 1 x mig.nvidia.com 1g.5gb"),
    (TWO_APPS, TWO_APPS_SHARING, "containers 'a' and 'b' run at the same time"),
    (SIDECAR, SIDECAR_REUSED, "containers 'proxy' and 'prep' run at the same time"),
    (BIG, BIG_ONE_CLAIM, "claim 'gpu' would allocate 40 devices"),
    (PREP, "", "only in the original"),
    (_in_template(PREP), _in_template(PREP_FIVE), "the pod allocates 5 x gpu.nvidia.com"),
])
def test_wrong_conversions_fail(before: str, after: str, said: str) -> None:
    problems = _problems(before, after)
    assert any(said in p for p in problems), problems


def test_device_plugin_rule() -> None:
    """max(largest init + the sidecars before it, sum of app containers and sidecars)."""
    cases = {  # init counts, app counts -> the pod's GPUs under the device plugin
        ((4,), (1,)): 4, ((2, 1), (1, 1)): 2, ((1,), (4,)): 4, ((), (2, 3)): 5,
    }
    for (inits, apps), total in cases.items():
        body = "initContainers:\n" + "".join(
            f"- {{name: i{n}, image: x, resources: {{limits: {{nvidia.com/gpu: {c}}}}}}}\n"
            for n, c in enumerate(inits)) if inits else ""
        body += "containers:\n" + "".join(
            f"- {{name: a{n}, image: x, resources: {{limits: {{nvidia.com/gpu: {c}}}}}}}\n"
            for n, c in enumerate(apps))
        (pod,) = pod_entitlements(objects_from_text(_job(body))).values()
        assert pod.pod[("gpu.nvidia.com", None)] == total, (inits, apps)
    (pod,) = pod_entitlements(objects_from_text(SIDECAR)).values()
    assert pod.pod[("gpu.nvidia.com", None)] == 2  # proxy + main; prep next to proxy: 2
