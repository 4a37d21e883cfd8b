"""The decommission gate's warning about `gpudra guard`: a namespace labelled
gpudra.io/migrated=true that no binding of the guard's policy covers (selects it for every
object, with Deny or Warn) is a warning; the gate stays as safe as it was and verify's exit
code does not change. Read through the fake API server, as verify reads a cluster."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpudra.guard.policy import Action, Strategy, binding, policy
from tests.verify.test_verify import after_cutover, verify

MIGRATED = {"gpudra.io/migrated": "true"}


def namespace(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name,
                                                                  "labels": dict(labels)}}


def guard(action: Action = Action.DENY, **binding_spec: Any) -> list[dict[str, Any]]:
    """`gpudra guard`'s two objects, the binding's spec changed by `binding_spec`."""
    bound = copy.deepcopy(binding(action))
    bound["spec"].update(binding_spec)
    return [policy(Strategy.CLAIMS), bound]


def unlabelled_policy() -> list[dict[str, Any]]:
    """A policy of the guard's name that gpudra did not write (no gpudra.io/guard label)."""
    other = policy(Strategy.CLAIMS)
    other["metadata"]["labels"] = {}
    return [other, binding(Action.DENY)]


def selecting(**selector: Any) -> dict[str, Any]:
    return {"matchResources": {"namespaceSelector": selector}}


CASES = {
    "migrated, no guard": ([namespace("ml", MIGRATED)], ["ml"]),
    "migrated, guard denies": ([namespace("ml", MIGRATED), *guard()], []),
    "migrated, guard warns": ([namespace("ml", MIGRATED), *guard(Action.WARN)], []),
    "only audited": ([namespace("ml", MIGRATED), *guard(validationActions=["Audit"])], ["ml"]),
    "a policy gpudra did not write": ([namespace("ml", MIGRATED), *unlabelled_policy()],
                                      ["ml"]),
    "selector for another label": ([namespace("ml", MIGRATED), *guard(**selecting(
        matchLabels={"team": "a"}))], ["ml"]),
    "selector by expression": ([namespace("ml", MIGRATED), *guard(**selecting(
        matchExpressions=[{"key": "gpudra.io/migrated", "operator": "In",
                           "values": ["true"]}]))], []),
    "selector excludes it": ([namespace("ml", MIGRATED), *guard(**selecting(
        matchExpressions=[{"key": "team", "operator": "Exists"}]))], ["ml"]),
    "only some objects": ([namespace("ml", MIGRATED), *guard(matchResources={
        "namespaceSelector": {"matchLabels": MIGRATED},
        "objectSelector": {"matchLabels": {"app": "x"}}})], ["ml"]),
    "not migrated": ([namespace("ml", {"team": "a"})], []),
    "two migrated, one bare": ([namespace("ml", MIGRATED), namespace("serve", MIGRATED),
                                *guard(**selecting(matchExpressions=[
                                    {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                     "values": ["serve"]}]))], ["serve"]),
}


@pytest.mark.parametrize("objects, bare", CASES.values(), ids=CASES.keys())
def test_a_migrated_namespace_without_the_guard_is_a_warning(objects: list[dict[str, Any]],
                                                             bare: list[str]) -> None:
    data = after_cutover()
    for obj in objects:
        obj["metadata"].setdefault("labels", {})
        if obj["kind"] == "Namespace":  # the API server's own label on every namespace
            obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
    data["objects"] += objects
    code, report, err = verify(data, "-o", "json", "--decommission")
    assert code == 0, err
    gate = report["decommission"]
    warned = [w.split()[1] for w in gate["warnings"]]
    assert (gate["safe"], gate["blockers"], warned) == (True, [], bare)
    assert gate["outcome"] == ("warn" if bare else "pass")
    assert all("gpudra guard | kubectl apply -f -" in w for w in gate["warnings"])


def test_a_refused_namespace_list_is_said_not_failed() -> None:
    """A role from before the guard may not list namespaces: the gate says the guard was not
    judged; verify still exits as the workloads and the gate say."""
    data = after_cutover()
    data["objects"].append(namespace("ml", MIGRATED))
    data["deny"] = [{"resource": "namespaces"}]
    code, report, err = verify(data, "-o", "json", "--decommission")
    assert code == 0, err
    [warning] = report["decommission"]["warnings"]
    assert warning.startswith("whether migrated namespaces are guarded is not judged: "
                              "namespaces: cannot list")


def test_under_one_namespace_the_guard_is_not_read() -> None:
    data = after_cutover()
    data["objects"].append(namespace("ml", MIGRATED))
    code, report, err = verify(data, "-o", "json", "-n", "ml")
    assert code == 0, err
    assert report["decommission"]["warnings"] == []


def test_a_malformed_binding_is_left_out_with_its_field_named() -> None:
    data = after_cutover()
    data["objects"] += [namespace("ml", MIGRATED), *guard(validationActions=5)]
    code, report, err = verify(data, "-o", "json", "--decommission")
    assert code == 0, err
    unread, bare = report["decommission"]["warnings"]
    assert unread.startswith("whether migrated namespaces are guarded is not judged: "
                             "ValidatingAdmissionPolicyBinding gpudra-guard: ")
    assert "spec.validationActions" in unread
    assert bare.startswith("namespace ml is labelled gpudra.io/migrated=true but no binding")
