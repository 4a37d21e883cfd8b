"""What each container of a converted tree gets, read from the result alone (a test oracle).

For every pod spec of every workload, each container's view is the list of device requests it
can use: device-plugin resources by name and count, and for each DRA claim it references, the
requests of the referenced ResourceClaim or ResourceClaimTemplate (all of them when the
container names no request), each with its class, count and selectors. Pod totals sum every
request of every claim the pod spec references, once per claim, which is what the scheduler
allocates for one pod.

`whole_pod_problems(before, after)` holds a converted tree to the device plugin's whole-pod
rule. It reads both trees the same way, written from the Kubernetes rules alone (no gpudra
planner code): per device kind (class and MIG profile), the devices each container sees, and
the devices the pod allocates. Under the device plugin a pod allocates, per resource, the
larger of the sum of its app and sidecar containers and, for each plain init container, its
own count plus the sidecars started before it (kubelet reuses a plain init container's devices
for the containers after it, kubernetes#56818, but not a sidecar's, kubernetes#120461); under
DRA it allocates every request of every claim it lists, once. Both readings must agree, pod by
pod and container by container, and the DRA side must not give two containers that run at the
same time (app containers, sidecars, an init container and the sidecars before it) one device.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpudra.k8s.devices import classify
from gpudra.k8s.workloads import WorkloadTable


@dataclass(frozen=True)
class Request:
    claim: str          # the pod's resourceClaims[].name
    shared: bool        # a ResourceClaim (shared by every pod) rather than a template
    name: str           # the request name inside the claim
    device_class: str
    count: int
    selectors: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"claim": self.claim, "shared": self.shared, "request": self.name,
                "class": self.device_class, "count": self.count,
                "selectors": sorted(self.selectors)}


def objects_in(root: Path, readable_only: bool = False) -> list[dict[str, Any]]:
    """The objects of the YAML files under `root`; `readable_only`: files that do not parse
    (Helm templates) are left out instead of failing."""
    found: list[dict[str, Any]] = []
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*")
                                                 if p.suffix in (".yaml", ".yml"))
    for path in files:
        if path.name.startswith("kustomization"):
            continue
        try:
            docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8-sig")))
        except yaml.YAMLError:
            if readable_only:
                continue
            raise
        for doc in docs:
            found.extend(_items(doc))
    return found


def objects_from_text(text: str) -> list[dict[str, Any]]:
    return [obj for doc in yaml.safe_load_all(text) for obj in _items(doc)]


def _items(doc: Any) -> Iterator[dict[str, Any]]:
    """A List's items; an OpenShift Template's objects, which `oc process` creates (their
    parameters left as written, the same on both sides)."""
    if not isinstance(doc, dict):
        return
    if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
        yield from (i for i in doc["items"] if isinstance(i, dict))
    elif str(doc.get("apiVersion", "")).startswith("template.openshift.io/") \
            and doc.get("kind") == "Template" and isinstance(doc.get("objects"), list):
        yield from (i for i in doc["objects"] if isinstance(i, dict))
    else:
        yield doc


def _key(obj: Mapping[str, Any]) -> tuple[str | None, str | None]:
    # An object without a namespace is applied into the current one, usually "default": two
    # objects that differ only in that are the same object once applied.
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "default", meta.get("name")


def _index(objects: list[dict[str, Any]], kind: str, spec: Any,
           strict: bool = True) -> dict[tuple, list]:
    index: dict[tuple, list] = {}
    for obj in objects:
        if obj.get("kind") == kind:
            key = _key(obj)
            if key in index and strict:
                raise AssertionError(f"two {kind}s named {key[1]!r} in namespace {key[0]!r}")
            index.setdefault(key, _requests(spec(obj)))
    return index


def _requests(claim_spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for request in (claim_spec.get("devices") or {}).get("requests") or []:
        body = request.get("exactly", request)
        selectors = tuple(s["cel"]["expression"] for s in body.get("selectors") or [])
        out.append({"name": request["name"], "class": body.get("deviceClassName"),
                    "count": body.get("count", 1), "selectors": selectors,
                    **{k: body[k] for k in ("allocationMode", "adminAccess") if k in body},
                    **({"firstAvailable": True} if "firstAvailable" in request else {})})
    return out


def entitlements(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """`{"Kind/name[@ns]": {"pod": [requests...], "containers": {name: [requests...]}}}` where
    a request is a dict (see Request.as_dict) or `{"device-plugin": resource, "count": n}`."""
    templates = _index(objects, "ResourceClaimTemplate",
                       lambda o: (o.get("spec") or {}).get("spec") or {})
    claims = _index(objects, "ResourceClaim", lambda o: o.get("spec") or {})
    out: dict[str, Any] = {}
    for obj, kind, (namespace, name), spec in _pod_specs(objects):
        by_claim: dict[str, list[Request]] = {}
        for entry in spec.data.get("resourceClaims") or []:
            shared = "resourceClaimName" in entry
            target = entry.get("resourceClaimName") or entry.get("resourceClaimTemplateName")
            source = claims if shared else templates
            found = source.get((namespace, target))
            if found is None:
                raise AssertionError(f"{kind}/{name}: {target!r} is not in the tree")
            by_claim[entry["name"]] = [
                Request(entry["name"], shared, r["name"], r["class"], r["count"],
                        r["selectors"]) for r in found]
        pod = [r.as_dict() for rs in by_claim.values() for r in rs]
        containers: dict[str, list[dict[str, Any]]] = {}
        for ref in spec.containers:
            view: list[dict[str, Any]] = []
            resources = ref.data.get("resources") or {}
            for resource, count in (resources.get("limits") or {}).items():
                device = classify(resource)
                if device is not None and device.is_nvidia_device_plugin:
                    view.append({"device-plugin": resource, "count": int(count)})
            names = [c.get("name") for c in resources.get("claims") or []]
            # resources.claims is a list keyed by name for server-side apply.
            if len(names) != len(set(names)):
                raise AssertionError(f"{kind}/{name}: duplicate claim names {names}")
            for claim in resources.get("claims") or []:
                requests = by_claim.get(claim["name"])
                if requests is None:
                    raise AssertionError(f"{kind}/{name}: claim {claim['name']!r} undefined")
                wanted = [r for r in requests
                          if "request" not in claim or r.name == claim["request"]]
                if not wanted:
                    raise AssertionError(f"{kind}/{name}: no request {claim.get('request')!r}")
                view += [r.as_dict() for r in wanted]
            containers[ref.name or "main"] = view
        explicit = (obj.get("metadata") or {}).get("namespace")
        label = f"{kind}/{name}" + (f"@{explicit}" if explicit else "")
        entry = out.setdefault(label, {"pod": [], "containers": {}})
        entry["pod"] += pod
        entry["containers"].update(containers)
    return out


def _pod_specs(objects: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], str, tuple, Any]]:
    """(object, kind, (namespace, name), pod spec) for every pod spec of every workload."""
    table = WorkloadTable()
    for obj in objects:
        kind = str(obj.get("kind", ""))
        if kind in ("ResourceClaimTemplate", "ResourceClaim", "DeviceClass"):
            continue
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        for spec in table.pod_specs(group, kind, obj):
            yield obj, kind, _key(obj), spec


# --- whole pods ------------------------------------------------------------------------------

GPU_CLASS, MIG_CLASS = "gpu.nvidia.com", "mig.nvidia.com"
# Device-plugin names (k8s-device-plugin v0.20): a MIG profile's `+` is written `.`.
_PLUGIN = re.compile(r"^nvidia\.com/(?:(?P<gpu>gpu)|mig-(?P<profile>(?:\d+c\.)?\d+g\.\d+gb)"
                     r"(?P<extra>(?:\.(?:me|gfx|all))*))(?P<shared>\.shared)?$")
_PROFILE_SELECTOR = re.compile(r'profile == "(?P<profile>[^"]+)"')
_MIG_PRODUCT = re.compile(r"-MIG-(?P<profile>(?:\d+c\.)?\d+g\.\d+gb)(?P<extra>(?:[.+]?(?:me|gfx|all))?)"
                          r"(?:-SHARED)?$")
Kind = tuple  # (device class or device-plugin resource, MIG profile or None)


@dataclass(frozen=True)
class PodEntitlement:
    """One pod spec read under the rules of the API it uses."""

    containers: dict[str, Counter]   # container -> devices it sees, per Kind
    pod: Counter                     # devices the pod allocates, per Kind
    faults: tuple[str, ...] = ()     # what cannot run: a device two containers running at
    #                                  once would share, a claim past the API's limits


def whole_pod_problems(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[str]:
    """Every difference between what the pods of `before` and of `after` get (an empty list:
    the conversion is faithful). Pod specs are matched by workload and path; a pod spec that
    only one side has is a problem. A fault the original already has (DRA containers sharing
    a claim on purpose) is not the conversion's."""
    old, new = pod_entitlements(before), pod_entitlements(after)
    problems = [f"{key[0]} at {'.'.join(map(str, key[1]))}: only in the original"
                for key in old if key not in new]
    for key, was in old.items():
        now = new.get(key)
        if now is None:
            continue
        where = f"{key[0]} at {'.'.join(map(str, key[1]))}"
        problems += [f"{where}: {text}" for text in now.faults if text not in was.faults]
        if +now.pod != +was.pod:
            problems.append(f"{where}: the pod allocates {_show(now.pod)}, the device plugin "
                            f"gave it {_show(was.pod)}")
        for name, sees in was.containers.items():
            got = now.containers.get(name, Counter())
            if +got != +sees:
                problems.append(f"{where}: container {name!r} sees {_show(got)}, it had "
                                f"{_show(sees)}")
    return problems


def pod_entitlements(objects: list[dict[str, Any]]) -> dict[tuple, PodEntitlement]:
    """Per (workload label, pod spec path): what its containers see and what the pod takes.
    DRA written in the shapes blog posts get wrong (a template's devices without the inner
    spec, a pod's claim under `source:`) is read as its author meant it, so a repair is held
    to keeping what was asked for."""
    templates = _index(objects, "ResourceClaimTemplate", _template_spec, strict=False)
    claims = _index(objects, "ResourceClaim", lambda o: o.get("spec") or {}, strict=False)
    return {(f"{kind}/{name}@{namespace}", spec.path): _pod(spec, namespace, templates, claims)
            for _, kind, (namespace, name), spec in _pod_specs(objects)}


def _pod(spec: Any, namespace: str | None, templates: dict, claims: dict) -> PodEntitlement:
    single = _mig_single(spec.data)
    units: dict[str, list[tuple[str, Kind, int]]] = {}  # pod claim -> (request, kind, count)
    for entry in spec.data.get("resourceClaims") or []:
        if not isinstance(entry, Mapping):
            continue
        source = entry.get("source")
        names = source if isinstance(source, Mapping) else entry
        shared = "resourceClaimName" in names
        target = names.get("resourceClaimName") or names.get("resourceClaimTemplateName")
        found = (claims if shared else templates).get((namespace, target))
        if found is None:  # not in the tree: the same unknown on both sides
            units[entry.get("name")] = [("", ("unresolved", target), 1)]
            continue
        units[entry.get("name")] = [(r["name"], *_request_kind(r)) for r in found
                                    if not r.get("adminAccess")]
    plugin: list[tuple[str, Counter]] = []  # (role, device-plugin counts) in start order
    kinds: dict[str, Kind] = {}              # device-plugin resource -> what DRA calls it
    sees: dict[str, Counter] = {}
    uses: list[tuple[str, str, set]] = []   # (container, role, DRA units it references)
    for ref in spec.containers:
        if ref.ephemeral:
            continue
        role = ("sidecar" if ref.data.get("restartPolicy") == "Always" else "init") \
            if ref.init else "app"
        label = ref.name or "main"
        counts: Counter = Counter()
        resources = ref.data.get("resources") or {}
        limits = resources.get("limits") if isinstance(resources, Mapping) else None
        seen: Counter = Counter()
        for resource, value in (limits.items() if isinstance(limits, Mapping) else ()):
            kind, count = _plugin_kind(str(resource), value, single)
            if kind is not None and count:
                counts[resource] += count
                kinds[resource] = kind
                seen[kind] += count
        plugin.append((role, counts))
        referenced: set = set()
        for claim in (resources.get("claims") if isinstance(resources, Mapping) else None) or []:
            for request, kind, count in units.get(claim.get("name"), ()):
                if "request" not in claim or claim["request"] == request:
                    if (claim["name"], request) not in referenced:
                        referenced.add((claim["name"], request))
                        seen[kind] += count
        sees[label] = seen
        uses.append((label, role, referenced))
    pod: Counter = Counter()
    for resource, count in _device_plugin_rule(plugin).items():  # per resource, as the kubelet
        pod[kinds[resource]] += count
    for requests in units.values():
        for _, kind, count in requests:
            pod[kind] += count
    faults = _overlaps(uses)
    for name, requests in units.items():
        devices = sum(count for _, _, count in requests)
        if devices > 32:  # AllocationResultsMaxSize: the allocator refuses the claim
            faults.append(f"claim {name!r} would allocate {devices} devices; a claim "
                          "allocates at most 32")
    return PodEntitlement(sees, pod, tuple(faults))


def _template_spec(template: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = template.get("spec") or {}
    return spec.get("spec") or ({"devices": spec["devices"]} if "devices" in spec else {})


def _device_plugin_rule(containers: list[tuple[str, Counter]]) -> Counter:
    """What the device plugin (and the scheduler, which counts the same) gives one pod."""
    running: Counter = Counter()   # app containers and every sidecar run together
    sidecars: Counter = Counter()  # the sidecars started so far
    peak: Counter = Counter()
    for role, counts in containers:
        if role == "app":
            running += counts
        elif role == "sidecar":
            sidecars += counts
            running += counts
        else:
            peak |= counts + sidecars
    return running | peak


def _overlaps(uses: list[tuple[str, str, set]]) -> list[str]:
    """DRA units two containers that run at the same time would both use."""
    found = []
    started: list[tuple[str, set]] = []  # app containers and sidecars (all run together)
    sidecars: list[tuple[str, set]] = []
    for name, role, units in uses:
        if role == "init":
            # runs alone, next to the sidecars started before it
            others = sidecars
        else:
            others = started
        for other, theirs in others:
            shared = units & theirs
            if shared:
                found.append(f"containers {other!r} and {name!r} run at the same time and "
                             f"both use {sorted(shared)}")
        if role != "init":
            started.append((name, units))
        if role == "sidecar":
            sidecars.append((name, units))
    return found


def _plugin_kind(resource: str, value: Any, single: tuple | None) -> tuple[Kind | None, int]:
    match = _PLUGIN.match(resource)
    try:
        count = int(value)
    except (TypeError, ValueError):
        count = 0
    if match is None:
        device = classify(resource)
        if device is not None and device.name.startswith("nvidia.com/"):
            return (resource, None), count  # HAMi and other nvidia.com/ names: kept as named
        return None, 0
    if match.group("shared"):
        count = min(count, 1)  # a time-slicing/MPS replica: DRA has no replica count
    if match.group("gpu"):
        return (single if single is not None else (GPU_CLASS, None)), count
    extra = match.group("extra")
    profile = match.group("profile") + ("+" + extra.lstrip(".") if extra else "")
    return (MIG_CLASS, profile), count


def _request_kind(request: Mapping[str, Any]) -> tuple[Kind, int]:
    if "firstAvailable" in request:
        return ("firstAvailable", request["name"]), 1
    if request.get("allocationMode") == "All":
        return (request.get("class"), "All"), 1
    profiles = [m.group("profile") for s in request.get("selectors") or ()
                for m in [_PROFILE_SELECTOR.search(s)] if m]
    return (request.get("class"), profiles[0] if profiles else None), request.get("count", 1)


def _mig_single(spec: Mapping[str, Any]) -> Kind | None:
    """GFD's MIG "single" strategy: nodes that serve `nvidia.com/gpu` as MIG slices, which the
    DRA driver publishes as MIG devices (a node selector or required affinity says so)."""
    values: list[str] = []
    selector = spec.get("nodeSelector")
    if isinstance(selector, Mapping):
        values += [f"{k}={v}" for k, v in selector.items()]
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}) \
        .get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in affinity.get("nodeSelectorTerms") or []:
        for expr in (term or {}).get("matchExpressions") or []:
            if expr.get("operator") == "In":
                values += [f"{expr.get('key')}={v}" for v in expr.get("values") or []]
    for value in values:
        key, _, label = value.partition("=")
        if key == "nvidia.com/gpu.product":
            match = _MIG_PRODUCT.search(label)
            if match:
                extra = match.group("extra").lstrip(".+")
                return MIG_CLASS, match.group("profile") + (f"+{extra}" if extra else "")
        if key == "nvidia.com/mig.strategy" and label == "single":
            return MIG_CLASS, None
    return None


def _show(counts: Counter) -> str:
    parts = [f"{n} x {kind[0]}" + (f" {kind[1]}" if kind[1] else "")
             for kind, n in sorted((+counts).items(), key=str)]
    return ", ".join(parts) or "nothing"
