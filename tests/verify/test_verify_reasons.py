"""What verify says for a workload that does not run (issue 32, items 13 and 15): the reasons
must name what the API server's state makes true, most telling first, and the JSON must keep
the gate out of the workloads. Each scenario is a small live cluster on the fake API server."""

from __future__ import annotations

from typing import Any

import pytest

from gpudra.dra.selectors import label_selector
from tests.verify import fleet as f
from tests.verify.test_verify import NS, after_cutover, deployed, during_cutover, verify


def details(report: dict[str, Any], name: str) -> list[str]:
    return next(w for w in report["workloads"] if w["name"] == name)["details"]


# --- 15f: the gate is .decommission, never a workload row ------------------------------------

@pytest.mark.parametrize("scenario", [after_cutover, during_cutover])
def test_the_gate_is_not_a_workload_in_json(scenario: Any) -> None:
    _, report, err = verify(scenario(), "-o", "json")
    rows = report["workloads"]
    assert rows, err
    assert all(row["id"] != "decommission" and row["kind"] and row["name"] for row in rows)
    assert report["summary"]["workloads"] == len(rows)
    gate = report["decommission"]
    assert gate["outcome"] in ("pass", "warn") and gate["message"]
    assert gate["safe"] is (gate["outcome"] == "pass")


@pytest.mark.parametrize("fmt,marker", [("table", "Decommission gate"),
                                        ("markdown", "decommission Decommission gate"),
                                        ("html", "Decommission gate")])
def test_human_formats_still_show_the_gate(fmt: str, marker: str) -> None:
    _, text, err = verify(after_cutover(), "-o", fmt)
    assert marker in text, err
    assert "safe to remove the device plugin" in text


# --- 15c: old pods do not crowd out the Pending pod's reason --------------------------------

def rollout_with_old_pods(old: int) -> dict[str, Any]:
    """A Deployment now on claims whose `old` pods of the previous revision still run on the
    device plugin (their names sort first) while its one new pod is Pending: no device
    matches its claim."""
    pods = [f.pod(NS, f"a-old-{i}", f.pod_spec(gpus=1), owner=("ReplicaSet", "roll-rs"),
                  node_name="dp-1") for i in range(old)]
    pods.append(f.pod(NS, "z-new-0", f.pod_spec(template_name="h200"),
                      owner=("ReplicaSet", "roll-rs"), phase="Pending",
                      claims={"gpu": "z-new-0-gpu"}))
    return f.state(f.node("dp-1", 8), f.node("dra-1", 1, dra=True), f.gpu_slice("dra-1", 1),
                   f.device_class(), f.template(NS, "h200", selector=ANY_H200),
                   f.claim(NS, "z-new-0-gpu", selector=ANY_H200),
                   deployed("roll", f.pod_spec(template_name="h200"), pods, old + 1))


ANY_H200 = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H200'"


@pytest.mark.parametrize("old", [1, 3, 5])
def test_the_pending_pods_reason_comes_first_however_many_old_pods(old: int) -> None:
    code, report, err = verify(rollout_with_old_pods(old), "-o", "json")
    assert code == 1, err
    said = details(report, "roll")
    assert said[0] == "pod ml/z-new-0: ResourceClaim z-new-0-gpu is not allocated"
    assert any('productName == "NVIDIA H200": 0 of 1 device match' in line for line in said)
    hidden = old + 1 - 3
    assert (f"... and {hidden} more pods with problems" in said) is (hidden > 0)


# --- 15b: a Pending pod on the device plugin gets a reason ----------------------------------

def pending_on_device_plugin(nodes: list[dict[str, Any]], held: int = 0) -> dict[str, Any]:
    """A Deployment not converted, pinned to pool `a`, its pod Pending; `held` GPUs of dp-a
    taken by another pod."""
    spec = f.pod_spec(gpus=2, node_selector={f.POOL_LABEL: "a"})
    objects: list[Any] = [*nodes, deployed("stuck", spec, [
        f.pod(NS, "stuck-0", spec, owner=("ReplicaSet", "stuck-rs"), phase="Pending")])]
    if held:
        holder = f.pod_spec(gpus=held)
        objects.append(deployed("holder", holder, [
            f.pod(NS, "holder-0", holder, owner=("ReplicaSet", "holder-rs"), node_name="dp-a")]))
    return f.state(*objects)


@pytest.mark.parametrize("nodes,held,reason", [
    # the wave switched the pool's nodes, the workload was not converted
    ([f.node("dra-a", 4, dra=True, pool="a"), f.node("dp-b", 4, pool="b")], 0,
     (f"no node the pod may use (nodeSelector {f.POOL_LABEL}=a) advertises nvidia.com/gpu: "
      "dra-a")),
    # the pool's one node is full
    ([f.node("dp-a", 4, pool="a")], 3,
     (f"the pod asks for 2 nvidia.com/gpu; the nodes it may use (nodeSelector "
      f"{f.POOL_LABEL}=a) have less free: dp-a 1 of 4 free")),
    # room: the scheduler has not got to it
    ([f.node("dp-a", 4, pool="a")], 0,
     (f"nvidia.com/gpu on the nodes the pod may use (nodeSelector {f.POOL_LABEL}=a): "
      "dp-a 4 of 4 free; dp-a could take its 2")),
    ([f.node("dp-b", 4, pool="b")], 0,
     f"no node matches the pod's node selection (nodeSelector {f.POOL_LABEL}=a)"),
])
def test_a_pending_device_plugin_pod_gets_a_reason(nodes: list[dict[str, Any]], held: int,
                                                   reason: str) -> None:
    code, report, err = verify(pending_on_device_plugin(nodes, held), "-o", "json")
    assert code == 0, err  # on the device plugin: a warning, as before
    said = details(report, "stuck")
    assert said[0] == "pod ml/stuck-0: Pending (not scheduled)"
    assert any(line.startswith(reason) for line in said), said


# --- 15d: values present for the selectors convert writes -----------------------------------

@pytest.mark.parametrize("label,values,term,present", [
    ("nvidia.com/gpu.product", ["NVIDIA-H200"],
     'productName.replace(" ", "-") == "NVIDIA-H200"', "NVIDIA-H100-80GB-HBM3 (1)"),
    ("nvidia.com/gpu.product", ["NVIDIA-H200", "NVIDIA-B200"],
     'productName.replace(" ", "-") in ["NVIDIA-H200", "NVIDIA-B200"]',
     "NVIDIA-H100-80GB-HBM3 (1)"),
])
def test_values_present_for_converted_label_selectors(label: str, values: list[str], term: str,
                                                      present: str) -> None:
    translation = label_selector(label, "In", values)
    assert translation is not None
    selector = translation.expression
    pod = f.pod(NS, "conv-0", f.pod_spec(template_name="conv"), owner=("ReplicaSet", "conv-rs"),
                phase="Pending", claims={"gpu": "conv-0-gpu"})
    data = f.state(f.node("dra-1", 1, dra=True), f.gpu_slice("dra-1", 1), f.device_class(),
                   f.template(NS, "conv", selector=selector),
                   f.claim(NS, "conv-0-gpu", selector=selector),
                   deployed("conv", f.pod_spec(template_name="conv"), [pod]))
    code, report, err = verify(data, "-o", "json")
    assert code == 1, err
    assert any(f"{term}: 0 of 1 device match; values present: {present}" in line
               for line in details(report, "conv")), details(report, "conv")


# --- 15e: no driver where the pod may run, before free devices elsewhere -------------------

def test_the_driverless_reason_comes_before_free_devices_elsewhere() -> None:
    spec = f.pod_spec(template_name="gpu", node_selector={f.POOL_LABEL: "a"})
    pod = f.pod(NS, "pinned-0", spec, owner=("ReplicaSet", "pinned-rs"), phase="Pending",
                claims={"gpu": "pinned-0-gpu"})
    data = f.state(f.node("a-1", 4, pool="a", plugin=False),
                   f.node("b-1", 4, dra=True, pool="b"), f.gpu_slice("b-1", 4),
                   f.device_class(), f.template(NS, "gpu"), f.claim(NS, "pinned-0-gpu"),
                   deployed("pinned", spec, [pod]))
    code, report, err = verify(data, "-o", "json")
    assert code == 1, err
    said = details(report, "pinned")
    driverless = [i for i, line in enumerate(said) if line.startswith(
        f"no DRA driver publishes devices on any node the pod may use (nodeSelector "
        f"{f.POOL_LABEL}=a): a-1")]
    devices = [i for i, line in enumerate(said) if "matching devices" in line]
    assert driverless, said
    assert all(driverless[0] < i for i in devices), said


# --- 13: under -n, devices other namespaces' claims hold are not free -----------------------

def held_by_another_namespace(**extra: Any) -> dict[str, Any]:
    """dra-1's two GPUs are allocated to claims of namespace `other`; a pod of `ml` waits."""
    pod = f.pod(NS, "want-0", f.pod_spec(template_name="gpu"), owner=("ReplicaSet", "want-rs"),
                phase="Pending", claims={"gpu": "want-0-gpu"})
    holders = [f.claim("other", f"hold-{i}", devices=[("dra-1", f"gpu-{i}")],
                       reserved=[(f"holder-{i}", f"uid-holder-{i}")]) for i in range(2)]
    return f.state(f.node("dra-1", 2, dra=True), f.gpu_slice("dra-1", 2), f.device_class(),
                   f.template(NS, "gpu"), f.claim(NS, "want-0-gpu"), *holders,
                   deployed("want", f.pod_spec(template_name="gpu"), [pod]), **extra)


@pytest.mark.parametrize("scope", [(), ("-n", NS)])
def test_devices_held_in_other_namespaces_are_not_free(scope: tuple[str, ...]) -> None:
    code, report, err = verify(held_by_another_namespace(), "-o", "json", *scope)
    assert code == 1, err
    said = "\n".join(details(report, "want"))
    assert "free matching devices" not in said
    assert "2 matching devices are held by other claims: other/hold-0, other/hold-1" in said


def test_under_n_unreadable_other_claims_are_said_not_counted_free() -> None:
    data = held_by_another_namespace(deny=[{"resource": "resourceclaims",
                                            "namespace": "other"}])
    code, report, err = verify(data, "-o", "json", "-n", NS)
    assert code == 1, err  # the namespace's own verdicts stand; not an input error
    said = "\n".join(details(report, "want"))
    assert "devices held by other namespaces' claims are not known" in said
    assert "some devices counted free here may be taken" in said


def test_required_node_affinity_is_the_pods_selection_too() -> None:
    """A pod pinned by required node affinity instead of a nodeSelector: the nodes it may use
    are those the affinity selects (gpudra.k8s.node_selection), and the reason says so."""
    spec = f.pod_spec(gpus=1)
    spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": f.POOL_LABEL, "operator": "In", "values": ["a"]}]}]}}}
    data = f.state(f.node("dra-a", 4, dra=True, pool="a"), f.node("dp-b", 4, pool="b"),
                   deployed("stuck", spec, [f.pod(NS, "stuck-0", spec,
                                                  owner=("ReplicaSet", "stuck-rs"),
                                                  phase="Pending")]))
    code, report, err = verify(data, "-o", "json")
    assert code == 0, err
    said = [line for line in details(report, "stuck") if "advertises nvidia.com/gpu" in line]
    assert len(said) == 1, details(report, "stuck")
    assert said[0].startswith("no node the pod may use (node affinity ")
    assert said[0].split(" advertises nvidia.com/gpu: ")[1].startswith("dra-a (")
