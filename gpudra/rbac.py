"""The least-privilege, read-only RBAC that `gpudra audit`, `plan`, `preflight`, `verify` and
`cutover` need.

Generated from the one table of what the cluster source reads (gpudra.sources.live), so the
role can never drift from the code: get and list on those resource types, nothing else. API
discovery (`/api`, `/apis`, `/version`) is open to every authenticated user through the
built-in `system:discovery` role, so it needs no rule here.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from collections.abc import Mapping, Sequence
from typing import Any

from gpudra.results.json_value import JsonObject
from gpudra.errors import UsageError
from gpudra.results.model import ExitCode
from gpudra.sources.live_reads import Read, all_reads

DEFAULT_NAME = "gpudra-reader"


def cluster_role(name: str = DEFAULT_NAME, reads: tuple[Read, ...] | None = None) -> dict[str, Any]:
    """A ClusterRole with one rule per API group (and one per named-object grant)."""
    by_group: dict[str, set[str]] = defaultdict(set)
    get_only: dict[str, set[str]] = defaultdict(set)   # objects got by name, never listed
    named: list[dict[str, Any]] = []
    reads = reads if reads is not None else all_reads()
    for read in reads:
        if read.names:
            continue
        (get_only if read.verbs == ("get",) else by_group)[read.group].add(read.resource)
    for read in reads:
        covered = read.resource in (get_only[read.group] | by_group[read.group])
        if read.names and not covered:
            named.append({"apiGroups": [read.group], "resources": [read.resource],
                          "resourceNames": list(read.names), "verbs": list(read.verbs)})
    rules = [{"apiGroups": [group], "resources": sorted(resources), "verbs": ["get", "list"]}
             for group, resources in sorted(by_group.items())]
    rules += [{"apiGroups": [group], "resources": sorted(resources), "verbs": ["get"]}
              for group, resources in sorted(get_only.items()) if resources]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "gpudra"}},
        "rules": rules + named,
    }


def namespace_object(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "gpudra"}}}


def service_account(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"app.kubernetes.io/name": "gpudra"}}}


def cluster_role_binding(role: str, account: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": role, "labels": {"app.kubernetes.io/name": "gpudra"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }


def report_writer(role: str, namespace: str, configmap: str,
                  subject: dict[str, Any]) -> list[dict[str, Any]]:
    """A Role and RoleBinding for the one write: `update` on the report ConfigMap by name and
    `create` in its namespace (create cannot be limited by resourceNames: the object's name
    is not known when the request is authorized, docs/facts.md)."""
    labels = {"app.kubernetes.io/name": "gpudra"}
    name = f"{role}-report"
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": name, "namespace": namespace, "labels": labels},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                    "resourceNames": [configmap], "verbs": ["update"]},
                   {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": name, "namespace": namespace, "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
         "subjects": [subject]},
    ]


DEFAULT_NAMESPACE = "gpudra"


def manifests(name: str = DEFAULT_NAME, namespace: str | None = None,
              account: str | None = None, user: str | None = None,
              group: str | None = None,
              report_configmap: str | None = None) -> list[dict[str, Any]]:
    """The role and its binding: to `user` or `group` when given, else to a ServiceAccount
    (created too) for in-cluster runs. Without `namespace` the ServiceAccount goes to a
    Namespace `gpudra`, printed too, so that `kubectl apply` of the output works on a cluster
    that has none; a given namespace is one that exists. `report_configmap` adds the write of
    that ConfigMap in the namespace (`audit -o json=configmap:NAME`)."""
    create_namespace = namespace is None
    namespace = namespace or DEFAULT_NAMESPACE
    role = cluster_role(name)
    if user or group:
        binding = cluster_role_binding(name, "", namespace)
        binding["subjects"] = [{"apiGroup": "rbac.authorization.k8s.io",
                                "kind": "User" if user else "Group", "name": user or group}]
        objects = [role, binding]
    else:
        account = account or name
        objects = ([namespace_object(namespace)] if create_namespace else []) + [
            service_account(account, namespace), role,
            cluster_role_binding(name, account, namespace)]
    if report_configmap:
        subject = objects[-1]["subjects"][0]
        objects += report_writer(name, namespace, report_configmap, subject)
    return objects


@dataclass(frozen=True)
class RbacRequest:
    """`gpudra rbac`'s options: whom the role binds (one of user, group, service_account;
    none: a ServiceAccount named `name`) and the one write it may add."""

    name: str = DEFAULT_NAME
    namespace: str | None = None
    service_account: str | None = None
    user: str | None = None
    group: str | None = None
    report_configmap: str | None = None


@dataclass(frozen=True)
class RbacResult:
    objects: tuple[JsonObject, ...]

    def exit_code(self) -> ExitCode:
        return ExitCode.OK  # it reads nothing, so nothing can fail or be found


def run_rbac(request: RbacRequest) -> RbacResult:
    """The objects `request` asks for; a UsageError for two subjects or a ConfigMap name the
    API server would refuse. Prints nothing: the CLI renders them (`render`)."""
    if sum(map(bool, (request.user, request.group, request.service_account))) > 1:
        raise UsageError("choose one of --user, --group and --service-account")
    if request.report_configmap:
        from gpudra.cluster.publish import parse_target

        parse_target(request.report_configmap)  # a name the API server accepts
        if "/" in request.report_configmap:
            raise UsageError("--report-configmap takes a NAME; -n/--namespace says where")
    return RbacResult(tuple(manifests(request.name, request.namespace, request.service_account,
                                      request.user, request.group, request.report_configmap)))


def render(objects: Sequence[Mapping[str, Any]]) -> str:
    """The objects as one multi-document YAML stream, kubectl-compatible quoting."""
    from gpudra.yamledit.render import document
    from gpudra.yamledit.textedit import Style

    style = Style()
    header = ["# Read-only access for gpudra audit, plan, preflight, verify and cutover (gpudra rbac)."]
    writes = [o for o in objects if o.get("kind") == "Role"]
    if writes:
        configmap = writes[0]["rules"][0]["resourceNames"][0]
        header.append(f"# Plus one write: the report ConfigMap {configmap} in "
                      f"{writes[0]['metadata']['namespace']} (audit -o "
                      f"json=configmap:{configmap}).")
    if objects[0].get("kind") == "Namespace":
        header.append("# The Namespace is for the ServiceAccount; use --namespace NS for one "
                      "that exists.")
    return "---\n".join("\n".join(lines) + "\n" for lines in
                        [header + document(objects[0], style)]
                        + [document(o, style) for o in objects[1:]])
