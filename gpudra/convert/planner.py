"""Decide what convert changes in one object, as data: operations plus new DRA objects.

Nothing here touches text. A workload is converted whole or not at all: anything gpudra would
have to guess (templated or invalid counts, requests != limits, aliases on the edit path,
resources it cannot place in a pod spec, sharing that cannot hold) blocks it, with the reason in
the result. The concerns live in their own modules: where a pod may run (placement), what each
container asks for (requests), quotas (quotas) and names (naming); this module decides per
workload and puts the pieces together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpudra.convert import admin, nim
from gpudra.convert.bridge import HIDE_ENV, bridge_notes
from gpudra.convert.bridge import MIG_NOTE as BRIDGE_MIG_NOTE
from gpudra.convert.controllers import admit, keep_controllers_working
from gpudra.convert.edits import add_to_pod, prune
from gpudra.convert.ignore import GUIDANCE_RULES, WORKLOAD_RULES, skip_reason
from gpudra.convert.naming import ObjectNames, dra_names, free_name, namespace_of, pod_suffix, \
    workload_name
from gpudra.convert.placement import (
    MEMORY_LABEL,
    Placement,
    PlacementBlocked,
    check_scheduled,
    plan_placement,
)
from gpudra.convert.provisioning import referenced_templates
from gpudra.convert.quotas import plan_quota
from gpudra.convert.records import (
    Blocked,
    ContainerClaim,
    ConvertOptions,
    ObjectPlan,
    WorkloadResult,
    result_for,
)
from gpudra.convert.repair import Repair, repair_dra_object, repair_pod_claims
from gpudra.convert.requests import (
    ClaimRequests,
    DeviceNeed,
    container_label,
    find_needs,
    mig_min_memory_note,
    plan_claims,
)
from gpudra.convert.shared_claims import (
    CLUSTER_SCOPED_TEMPLATES,
    check_sharing,
    shared_notes,
    sharing_note,
)
from gpudra.convert.tolerations import GPU_TAINT, TOLERATION, tolerates_gpu_taint
from gpudra.convert.tolerations import NOTE as TOLERATION_NOTE
from gpudra.dra import emit
from gpudra.dra.selectors import min_memory_selector, product_prefix_selector
from gpudra.dra.sharing import NO_REPLICAS, device_plugin_sharing
from gpudra.k8s.gpu_use import ObjectUse, quota_path, read_object, read_pod_spec
from gpudra.k8s.objects import dig, format_path
from gpudra.k8s.workloads import ContainerRef, PodSpecRef, WorkloadTable
from gpudra.yamledit.ops import Append, Delete, Extend, Op, container_of
from gpudra.yamledit.yaml_nodes import NodeDocument, PathT

__all__ = ["Blocked", "ConvertOptions", "ObjectPlan", "Planner", "WorkloadResult"]

CLAIM_MODE_ANNOTATION = "gpudra.io/claim-mode"
_GUIDANCE = {
    "LimitRange": "LimitRange bounds do not apply to claims: bound DRA use with "
                  "<class>.deviceclass.resource.k8s.io/devices in a ResourceQuota",
    "ClusterQueue": "Kueue: map DeviceClass gpu.nvidia.com to this resource with "
                    "resources.deviceClassMappings in Kueue's Configuration",
    "NodePool": "Karpenter: nodes whose GPUs are published by DRA advertise no nvidia.com/gpu "
                "capacity; bound the pool by CPU/memory too",
}


class Planner:
    """Plans objects one at a time; keeps the names it handed out (unique per namespace)."""

    def __init__(self, options: ConvertOptions, table: WorkloadTable) -> None:
        self.options = options
        self.table = table
        self.names = ObjectNames()
        # Namespaces whose converted workloads get MIG claims: how their quotas must cap them
        # ("single": nvidia.com/gpu requests that are MIG slices; "mixed": nvidia.com/mig-*).
        self.mig_claims: dict[str | None, set[str]] = {}
        # PodTemplates a ProvisioningRequest of the file being planned references.
        self.provisioned: frozenset[tuple[str | None, str]] = frozenset()

    def read_file(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """What planning an object needs to know of the others in its file, read before any
        of them is planned."""
        self.provisioned = referenced_templates(objects)

    def reserve_existing(self, objects: Iterable[Mapping[str, Any]]
                         ) -> list[tuple[str | None, str, bool]]:
        """The names of the DRA objects among `objects` (which already exist in the tree) are
        not handed out again. Returns them as (namespace, name, late): late when a workload
        planned earlier got that name (its objects were read after it), and planning must
        start again with the name reserved first."""
        return self.names.reserve_all(dra_names(objects))

    def plan(self, file: str, data: Mapping[str, Any], base: PathT, doc: NodeDocument) -> ObjectPlan:
        """Workloads and guidance. Quotas are planned afterwards, by `plan_quota`."""
        kind = str(data.get("kind", ""))
        group = str(data.get("apiVersion", "")).rpartition("/")[0]
        if quota_path(data) is not None:
            return ObjectPlan()
        if kind in _GUIDANCE and _mentions_nvidia(data):
            skip = skip_reason(data, (GUIDANCE_RULES[kind],), file, self.options.waivers)
            strategy, reason = skip or ("manual", _GUIDANCE[kind])
            return ObjectPlan(result=result_for(file, data, strategy, reason=reason))
        if kind == "ConfigMap" and group == "":
            shared = device_plugin_sharing(data)
            if shared:
                grants = ", ".join(f"{s.resource} x{s.replicas} ({s.strategy})" for s in shared)
                return ObjectPlan(result=result_for(
                    file, data, "manual", reason=f"device-plugin sharing config ({grants}): "
                    f"{NO_REPLICAS}; decide per workload"))
        if group == "resource.k8s.io":
            return self._judged(file, data, base, doc,
                                repair_dra_object(data, base, self.options.target))
        return self._workload(file, data, base, doc, group, kind)

    def _judged(self, file: str, data: Mapping[str, Any], base: PathT, doc: NodeDocument,
                repair: Repair) -> ObjectPlan:
        """A DRA object's repairs, written only when the audit finds no error in the result;
        else the object is left whole, `manual`, with what is left (and what convert would
        have repaired, so the human does it all at once)."""
        # The audit's rules (and the CEL engine) load only when the tree has DRA objects.
        from gpudra.convert.repair_check import errors_after

        left = errors_after(doc.data, base, repair.ops, self.table, self.options.target)
        if not left:
            return _repaired(file, data, base, doc, repair)
        reason = "; ".join(dict.fromkeys([*repair.left, *left]))
        if repair.done:
            reason += f" (besides what convert repairs: {'; '.join(repair.done)})"
        return ObjectPlan(result=result_for(file, data, "manual",
                                            reason=f"still wrong after repair: {reason}"))

    def plan_quota(self, file: str, data: Mapping[str, Any], base: PathT,
                   staying: frozenset[str | None]) -> ObjectPlan:
        """Plan a quota once every workload is planned. `staying` holds the namespaces of
        workloads that keep device-plugin requests (blocked, bridged or ignored); None:
        unknown."""
        asked = self.options.keep_device_plugin_quota
        namespace = namespace_of(data)
        keep = asked or namespace in staying or None in staying
        # Workloads without a namespace land in whichever one they are applied to.
        mig = self.mig_claims.get(namespace, set()) | self.mig_claims.get(None, set())
        if namespace is None:
            mig |= self.mig_claims.get("default", set())
        return plan_quota(file, data, base, keep=keep, asked=asked, mig=frozenset(mig),
                          waivers=self.options.waivers,
                          keep_names=self.options.keep_quota_names)

    # --- workloads -------------------------------------------------------------------------

    def _workload(self, file: str, data: Mapping[str, Any], base: PathT, doc: NodeDocument,
                  group: str, kind: str) -> ObjectPlan:
        use = read_object(self.table, group, kind, data)
        services = [nim.as_pod_spec(data, path) for path in nim.service_specs(kind, data)] \
            if nim.is_nim(group, kind) else []
        repair = Repair()
        for pod in use.pods:
            repair.merge(repair_pod_claims(pod.spec, base))
        try:
            found = [(pod.spec, find_needs(pod)) for pod in
                     [*use.pods, *map(read_pod_spec, services)]]  # raises Blocked
            found = [(spec, needs) for spec, needs in found if needs]
            outside = _outside(use, {s.path for s in services})
            if not found and not outside:
                if self.options.admin_access and kind in admin.KINDS:
                    return self._admin_access(file, data, base, doc, use, repair)
                return _repaired(file, data, base, doc, repair)
            skip = skip_reason(data, WORKLOAD_RULES, file, self.options.waivers)
            if skip:
                return ObjectPlan(result=result_for(file, data, skip[0], reason=skip[1]))
            if outside:
                raise Blocked(f"{kind or 'this file'} asks for {outside}, which is outside any "
                              "known pod spec: convert it by hand, or add a `workloads` entry "
                              "in .gpudra.yaml if it is a pod spec")
            for spec, needs in found:
                check_scheduled(spec)
                _check_editable(doc, base, spec, needs)
            notes: list[str] = []
            if self.options.strategy == "bridge" and \
                    all(n.resource == "nvidia.com/gpu" for _, needs in found for n in needs):
                bridged = bridge_notes(found, base, self.options.target)  # raises Blocked
                if bridged is not None:
                    return ObjectPlan(result=result_for(file, data, "bridge", notes=bridged))
                notes.append(BRIDGE_MIG_NOTE)
            # The bridge leaves the limit where the controller reads it: only claims need the
            # controller checked.
            notes += admit(str(data.get("apiVersion", "")), kind, self.options.vouches)
            shared_mode = self._claim_mode(data) == "shared"
            plan = ObjectPlan(ops=list(repair.ops))
            notes += [*repair.done, *repair.left]
            created: list[str] = []
            claims: list[ContainerClaim] = []
            for spec, needs in found:
                if spec in services:
                    created.append(self._nim_service(data, base, spec, needs, shared_mode, plan,
                                                     notes, claims))
                    continue
                created += self._pod_spec(data, kind, base, spec, needs, shared_mode, plan,
                                          notes, len(found), claims)
            notes += _kind_notes(group, kind)
        except (Blocked, PlacementBlocked) as exc:
            return ObjectPlan(result=result_for(file, data, "blocked", reason=str(exc)))
        if not self.options.target.served_by_default:
            notes.append(f"Kubernetes {self.options.target} serves "
                         f"{self.options.target.resource_api_version} only with the "
                         "DynamicResourceAllocation feature gate and --runtime-config enabled")
        plan.result = result_for(file, data, "rewrite", notes=tuple(dict.fromkeys(notes)),
                                 created=tuple(created), claims=tuple(claims))
        return plan

    def _claim_mode(self, data: Mapping[str, Any]) -> str:
        annotations = (data.get("metadata") or {}).get("annotations") or {}
        mode = annotations.get(CLAIM_MODE_ANNOTATION) if isinstance(annotations, Mapping) else None
        if mode not in (None, "shared", "template"):
            raise Blocked(f"annotation {CLAIM_MODE_ANNOTATION}={mode!r}: expected shared or template")
        return mode or self.options.claim_mode

    def _pod_spec(self, data: Mapping[str, Any], kind: str, base: PathT, spec: PodSpecRef,
                  needs: list[DeviceNeed], shared_mode: bool, plan: ObjectPlan,
                  notes: list[str], specs_in_workload: int,
                  claims: list[ContainerClaim]) -> list[str]:
        """Convert one pod spec; the names of the DRA objects it now references. What each
        container references is added to `claims`."""
        pod = base + spec.path
        placement = plan_placement(spec, pod, self.options.keep_node_selectors,
                                   whole_gpus=any(not n.mig for n in needs))
        plan.ops += placement.ops
        notes += placement.notes
        needs = [_as_planned(need, placement, shared_mode) for need in needs]
        keep_controllers_working(data, base, spec, needs, plan.ops, notes,  # raises Blocked
                                 self.provisioned)
        self.mig_claims.setdefault(namespace_of(data), set()).update(
            "mixed" if n.resource.startswith("nvidia.com/mig-") else "single"
            for n in needs if n.mig)
        exclusive = [n for n in needs if not n.shared]
        shared = [n for n in needs if n.shared]
        if shared:
            check_sharing(kind, data, spec)
        namespace = namespace_of(data)
        suffix = pod_suffix(data, spec.path) if specs_in_workload > 1 else ""
        stem = "-".join(x for x in (workload_name(data), suffix, "gpu") if x)
        taken = _existing_claim_names(spec.data)
        both = bool(exclusive and shared)
        entries, created = [], []
        views: dict[PathT, tuple[ContainerRef, list[dict[str, Any]]]] = {}  # container claims
        for group, is_shared in ((exclusive, False), (shared, True)):
            if not group:
                continue
            pod_claim = free_name("gpu-shared" if is_shared and both else "gpu", taken)
            first_object = self.names.unique(f"{stem}-shared" if is_shared and both else stem,
                                             namespace)
            build = emit.claim if is_shared else emit.claim_template
            for claim in plan_claims(group, pod_claim, is_shared,
                                     lambda need: self._selectors(need, placement, notes),
                                     self.options.target, notes, taken):
                object_name = first_object if claim.pod_claim == pod_claim else \
                    self.names.unique(f"{first_object}-{claim.requests[0]['name']}", namespace)
                plan.new_objects.append((build(object_name, namespace, claim.requests,
                                               self.options.target), None))
                entries.append(emit.pod_claim_entry(claim.pod_claim, claim=object_name)
                               if is_shared else
                               emit.pod_claim_entry(claim.pod_claim, template=object_name))
                created.append(object_name)
                for path, (container, (name, request)) in claim.containers.items():
                    views.setdefault(path, (container, []))[1].append(
                        emit.container_claim(name, request))
                claims += _container_claims(spec.path, claim, object_name, is_shared)
        self._containers(base, views, plan.ops, notes)
        for need in needs:
            plan.ops += [Delete(base + path) for path in need.paths]
            if need.resource.endswith(".shared"):
                shared_notes(need, notes)
        if shared:
            notes.append(sharing_note(both))
        self._tolerate(spec, pod, needs, plan.ops, notes)
        add_to_pod(spec, pod, "resourceClaims", entries, plan.ops)
        prune(data, base, plan.ops)
        return created

    def _tolerate(self, spec: PodSpecRef, pod: PathT, needs: list[DeviceNeed], ops: list[Op],
                  notes: list[str]) -> None:
        """The toleration the ExtendedResourceToleration admission plugin used to add."""
        if self.options.add_toleration and any(n.resource == GPU_TAINT for n in needs) and \
                not tolerates_gpu_taint(spec.data):
            add_to_pod(spec, pod, "tolerations", [dict(TOLERATION)], ops)
            notes.append(TOLERATION_NOTE)

    def _admin_access(self, file: str, data: Mapping[str, Any], base: PathT, doc: NodeDocument,
                      use: ObjectUse, repair: Repair) -> ObjectPlan:
        """`--admin-access`: a monitoring DaemonSet's containers that see every GPU through
        NVIDIA_VISIBLE_DEVICES get an admin-access claim instead."""
        plan = ObjectPlan(ops=list(repair.ops))
        notes: list[str] = [*repair.done, *repair.left]
        created: list[str] = []
        for pod in use.pods:
            containers = admin.monitors(pod)
            if not containers:
                continue
            spec = pod.spec
            if not all(doc.editable(base + c.container.path) for c in containers):
                return ObjectPlan(result=result_for(file, data, "blocked", reason=(
                    "YAML anchors, aliases or merge keys on the edit path; edit by hand")))
            taken = _existing_claim_names(spec.data)
            pod_claim = free_name(admin.POD_CLAIM, taken)
            name = self.names.unique(f"{workload_name(data)}-gpu-admin", namespace_of(data))
            plan.new_objects.append((emit.claim_template(
                name, namespace_of(data), [emit.admin_request(admin.REQUEST, emit.GPU_CLASS,
                                                              self.options.target)],
                self.options.target), None))
            created.append(name)
            views = {c.container.path: (c.container, [emit.container_claim(pod_claim)])
                     for c in containers}
            self._containers(base, views, plan.ops, notes)
            add_to_pod(spec, base + spec.path, "resourceClaims",
                       [emit.pod_claim_entry(pod_claim, template=name)], plan.ops)
        if not created:
            return _repaired(file, data, base, doc, repair)
        prune(data, base, plan.ops)
        namespace = namespace_of(data) or "the namespace it runs in"
        notes.append(f"admin access (KEP-5018): {', '.join(created)} gets every GPU of the node "
                     "without taking them from other claims; the API server accepts it only "
                     f"once {namespace} is labelled {admin.NAMESPACE_LABEL}")
        plan.result = result_for(file, data, "rewrite", notes=tuple(dict.fromkeys(notes)),
                                 created=tuple(created))
        return plan

    def _nim_service(self, data: Mapping[str, Any], base: PathT, spec: PodSpecRef,
                     needs: list[DeviceNeed], shared_mode: bool, plan: ObjectPlan,
                     notes: list[str], claims: list[ContainerClaim]) -> str:
        """A NIMService spec: its GPU limits become a `draResources` entry the operator turns
        into the model container's claim. Returns the name of the claim (template) written."""
        label = nim.service_label(data, spec.path)
        if self.options.target.minor < nim.MIN_MINOR:
            raise Blocked("the NIM Operator takes draResources only on Kubernetes "
                          f"1.{nim.MIN_MINOR}+ (resource.k8s.io/v1); the target is "
                          f"{self.options.target}")
        if nim.DRA_FIELD in spec.data:
            raise Blocked(f"{label} has draResources and device-plugin GPUs at once; merge them "
                          "into draResources by hand")
        placement = plan_placement(spec, base + spec.path, self.options.keep_node_selectors,
                                   whole_gpus=any(not n.mig for n in needs))
        needs = [_as_planned(need, placement, shared_mode) for need in needs]
        shared = any(n.shared for n in needs)
        if shared and dig(spec.data, "multiNode") is not None:
            raise Blocked(f"{label} runs on several nodes (multiNode), but one shared "
                          "ResourceClaim is allocated on one node; give each pod its own claim")
        used: set[str] = set()
        requests = []
        for need in needs:
            name = free_name("mig" if need.mig else "gpu", used)
            used.add(name)
            requests.append(emit.device_request(name, need.device_class, need.count,
                                                self._selectors(need, placement, notes),
                                                target=self.options.target))
            plan.ops += [Delete(base + path) for path in need.paths]
            if need.resource.endswith(".shared"):
                shared_notes(need, notes)
        stem = "-".join(x for x in (workload_name(data),
                                    pod_suffix(data, spec.path) if spec.path != ("spec",) else "",
                                    "gpu") if x)
        namespace = namespace_of(data)
        object_name = self.names.unique(stem, namespace)
        build = emit.claim if shared else emit.claim_template
        plan.new_objects.append((build(object_name, namespace, requests, self.options.target),
                                 None))
        # The operator names the pod claim and the model container itself.
        kind = "ResourceClaim" if shared else "ResourceClaimTemplate"
        claims += [ContainerClaim(spec.path, label, nim.DRA_FIELD, kind, object_name,
                                  request["name"], i) for i, request in enumerate(requests)]
        plan.ops += placement.ops
        notes += placement.notes
        plan.ops.append(nim.add_dra_resources(spec.data, base + spec.path,
                                              [nim.dra_entry(object_name, shared)]))
        prune(data, base, plan.ops)
        if shared:
            notes.append(f"all pods of this {label} share one ResourceClaim: they land on one "
                         "node and see the same devices")
        notes.append(f"{label}: the GPU limit became draResources ({object_name}), the NIM "
                     "Operator's own DRA field (NIM Operator v3.0.0+; the operator turns it into "
                     "the model container's claim)")
        return object_name

    def _selectors(self, need: DeviceNeed, placement: Placement, notes: list[str]) -> list[str]:
        selectors = [expression for _, expression in placement.selectors]
        if need.mig:
            kept = [e for label, e in placement.selectors if label != MEMORY_LABEL]
            if len(kept) < len(selectors):
                notes.append("the GFD memory label describes the whole GPU, which a MIG device "
                             "does not publish: dropped for MIG requests")
            selectors = kept
            if need.profile is not None:
                selectors.insert(0, f'device.attributes["gpu.nvidia.com"].profile == '
                                    f'"{need.profile}"')
        selectors += list(self.options.selectors)
        if self.options.min_memory is not None:
            if need.mig:
                notes.append(mig_min_memory_note(need.profile, self.options.min_memory))
            else:
                selectors.append(min_memory_selector(self.options.min_memory))
        if self.options.product is not None:
            selectors.append(product_prefix_selector(self.options.product))
        return selectors

    def _containers(self, base: PathT, views: dict[PathT, tuple[ContainerRef, list[dict[str, Any]]]],
                    ops: list[Op], notes: list[str]) -> None:
        for path, (container, claims) in views.items():
            resources = base + path + ("resources",)
            present = container.data.get("resources")
            existing = present.get("claims") if isinstance(present, Mapping) else None
            if isinstance(existing, list) and existing:
                ops.append(Extend(resources + ("claims",), tuple(claims)))
            elif isinstance(present, Mapping) and present:
                ops.append(Append(resources, "claims", claims))
            else:  # no resources yet (an admin-access monitor asks for none)
                if "resources" in container.data:
                    ops.append(Delete(resources))
                ops.append(Append(base + path, "resources", {"claims": claims}))
            env = container.data.get("env")
            for i, var in enumerate(env if isinstance(env, list) else ()):
                if isinstance(var, Mapping) and var.get("name") == HIDE_ENV:
                    ops.append(Delete(base + path + ("env", i)))
                    notes.append(f"removed {HIDE_ENV} from {container.name!r}: CDI decides which "
                                 "devices the container sees")
                if isinstance(var, Mapping) and var.get("name") == "NVIDIA_DRIVER_CAPABILITIES":
                    notes.append(f"kept NVIDIA_DRIVER_CAPABILITIES on {container.name!r}: check "
                                 "the driver libraries it needs under CDI")


def _container_claims(pod: PathT, claim: ClaimRequests, object_name: str,
                      shared: bool) -> list[ContainerClaim]:
    """What each container references in `claim`, as records."""
    kind = "ResourceClaim" if shared else "ResourceClaimTemplate"
    requests = [r["name"] for r in claim.requests]
    return [ContainerClaim(pod, container_label(container), name, kind, object_name, request,
                           requests.index(request) if request in requests else 0)
            for container, (name, request) in claim.containers.values()]


def _as_planned(need: DeviceNeed, placement: Placement, shared_mode: bool) -> DeviceNeed:
    """The need as DRA will ask for it: MIG under the single strategy, shared in shared mode."""
    mig, profile = need.mig, need.profile
    if placement.mig is not None and not need.mig:
        mig, profile = True, placement.mig.profile
    shared = need.shared or shared_mode
    if (mig, profile, shared) == (need.mig, need.profile, need.shared):
        return need
    return DeviceNeed(need.container, need.resource, need.count, need.paths, shared, mig, profile,
                      need.asked)


def _kind_notes(group: str, kind: str) -> list[str]:
    """What a converted workload of this kind needs beyond its own manifest."""
    notes = []
    if kind in CLUSTER_SCOPED_TEMPLATES:
        notes.append(f"{kind} is cluster-scoped and a ResourceClaimTemplate is "
                     "namespaced: apply the template (written without a namespace) to "
                     "every namespace whose workloads use this "
                     f"{kind.removeprefix('Cluster')} (docs/convert.md)")
    if group == "argoproj.io":
        notes.append("Argo templates carry resourceClaims only in Argo Workflows versions "
                     "with first-class DRA claims (argo-workflows#16587); older ones drop "
                     "the field: put the entry in podSpecPatch instead")
    return notes


def _repaired(file: str, data: Mapping[str, Any], base: PathT, doc: NodeDocument,
              repair: Repair) -> ObjectPlan:
    """An object that only needs repairs (a DRA object, a pod spec already on DRA)."""
    if not repair.ops:
        if repair.left:
            return ObjectPlan(result=result_for(file, data, "manual",
                                                reason="; ".join(repair.left)))
        return ObjectPlan()
    if not all(doc.editable(container_of(op)) for op in repair.ops):
        return ObjectPlan(result=result_for(
            file, data, "blocked", reason="YAML anchors, aliases or merge keys on the edit "
            "path; repair by hand: " + "; ".join(repair.done)))
    return ObjectPlan(ops=list(repair.ops), result=result_for(
        file, data, "repair", notes=tuple(repair.done + repair.left)))


def _check_editable(doc: NodeDocument, base: PathT, spec: PodSpecRef,
                    needs: list[DeviceNeed]) -> None:
    paths = [spec.path] + [p[:-1] for n in needs for p in n.paths]
    for path in paths:
        if not doc.editable(base + path):
            raise Blocked("the lines convert would edit use YAML anchors, aliases or merge keys, "
                          "and an edit there would change every place that shares them: edit "
                          "by hand")


def _mentions_nvidia(data: Any) -> bool:
    return "nvidia.com/" in repr(data)


def _outside(use: ObjectUse, covered: set[PathT]) -> str | None:
    """A device-plugin request outside every pod spec's containers (and the `covered` CRD
    specs convert handles), as ``resource in `path` ``, if there is one."""
    for request in use.stray:
        if request.nvidia and request.container.path not in covered:
            return f"{request.resource} in `{format_path(request.paths[0][:-1])}`"
    return None


def _existing_claim_names(spec: Mapping[str, Any]) -> set[str]:
    claims = spec.get("resourceClaims")
    return {str(c.get("name")) for c in claims if isinstance(c, Mapping)} \
        if isinstance(claims, list) else set()

