"""What each container of a converted tree gets, read from the result alone (a test oracle).

For every pod spec of every workload, each container's view is the list of device requests it
can use: device-plugin resources by name and count, and for each DRA claim it references, the
requests of the referenced ResourceClaim or ResourceClaimTemplate (all of them when the
container names no request), each with its class, count and selectors. Pod totals sum every
request of every claim the pod spec references, once per claim, which is what the scheduler
allocates for one pod.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpudra.devices import classify
from gpudra.workloads import WorkloadTable


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


def objects_in(root: Path) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*")
                                                 if p.suffix in (".yaml", ".yml"))
    for path in files:
        if path.name.startswith("kustomization"):
            continue
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8-sig")):
            found.extend(_items(doc))
    return found


def objects_from_text(text: str) -> list[dict[str, Any]]:
    return [obj for doc in yaml.safe_load_all(text) for obj in _items(doc)]


def _items(doc: Any) -> Iterator[dict[str, Any]]:
    if not isinstance(doc, dict):
        return
    if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
        yield from (i for i in doc["items"] if isinstance(i, dict))
    else:
        yield doc


def _key(obj: Mapping[str, Any]) -> tuple[str | None, str | None]:
    # An object without a namespace is applied into the current one, usually "default": two
    # objects that differ only in that are the same object once applied.
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "default", meta.get("name")


def _index(objects: list[dict[str, Any]], kind: str, spec: Any) -> dict[tuple, list]:
    index: dict[tuple, list] = {}
    for obj in objects:
        if obj.get("kind") == kind:
            key = _key(obj)
            if key in index:
                raise AssertionError(f"two {kind}s named {key[1]!r} in namespace {key[0]!r}")
            index[key] = _requests(spec(obj))
    return index


def _requests(claim_spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for request in (claim_spec.get("devices") or {}).get("requests") or []:
        body = request.get("exactly", request)
        selectors = tuple(s["cel"]["expression"] for s in body.get("selectors") or [])
        out.append({"name": request["name"], "class": body.get("deviceClassName"),
                    "count": body.get("count", 1), "selectors": selectors})
    return out


def entitlements(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """`{"Kind/name[@ns]": {"pod": [requests...], "containers": {name: [requests...]}}}` where
    a request is a dict (see Request.as_dict) or `{"device-plugin": resource, "count": n}`."""
    templates = _index(objects, "ResourceClaimTemplate",
                       lambda o: (o.get("spec") or {}).get("spec") or {})
    claims = _index(objects, "ResourceClaim", lambda o: o.get("spec") or {})
    table = WorkloadTable()
    out: dict[str, Any] = {}
    for obj in objects:
        kind = str(obj.get("kind", ""))
        if kind in ("ResourceClaimTemplate", "ResourceClaim", "DeviceClass"):
            continue
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        namespace, name = _key(obj)
        for spec in table.pod_specs(group, kind, obj):
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
