"""GPU6xx: DRA objects already in the tree, linted against the real resource.k8s.io API.

A workload that already uses ResourceClaims counts as migrated, so what matters here is whether
the DRA objects would be accepted and would allocate: the request shape of each API version,
allocation modes, CEL selectors on names the NVIDIA driver really publishes, comparisons CEL
rejects, and pods whose claim references resolve. Shapes follow docs/dra-reference.md §1–3.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpudra.dra.attributes import (
    CLASS_DEVICE_TYPE,
    DeviceType,
)
from gpudra.dra.request_shapes import EXACT_FIELDS, FLAT_VERSIONS, WRAPPED_VERSIONS
from gpudra.dra.served import GROUP, availability, versions_with_kind
from gpudra.model import Severity
from gpudra.objects import PathT, SourceObject, as_mapping, format_path
from gpudra.rules.base import AuditContext, Checker, rule
from gpudra.workloads import ContainerRef, PodSpecRef

CATEGORY = "dra objects"
ALLOCATION_MODES = ("ExactCount", "All")
MAX_SUBREQUESTS = 8  # FirstAvailableDeviceRequestMaxSize
_PLACEHOLDER_MARKS = ("{{", "${", "$(")

GPU601 = rule(
    "GPU601", "dra-request-shape-version-mismatch", Severity.ERROR, CATEGORY,
    "A DRA device request has the shape of another API version (flat v1beta1 fields under v1, "
    "or `exactly:` under v1beta1).",
    """
The request body moved between API versions. In `resource.k8s.io/v1beta1` (Kubernetes 1.32) the
fields `deviceClassName`, `selectors`, `allocationMode`, `count` and `adminAccess` sit directly in
`spec.devices.requests[]`. From `v1beta2` (1.33) and in `v1` (1.34, the only version served by
default) they are wrapped in `exactly:`; the alternative is `firstAvailable:`. A strict decoder
rejects the other version's shape (`unknown field "count"`); a lenient client silently drops the
fields and the API server then complains that neither `exactly` nor `firstAvailable` is set.

For a ResourceClaimTemplate the same applies under `spec.spec.devices.requests[]`.

Problematic (v1 with the v1beta1 shape):

```yaml
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: one-gpu}
spec:
  devices:
    requests:
    - name: gpu
      deviceClassName: gpu.nvidia.com
      count: 1
```

Correct:

```yaml
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: one-gpu}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.nvidia.com
        count: 1
```

The opposite mistake, `exactly:` under `resource.k8s.io/v1beta1`, is an unknown field there:
either put the fields directly into the request or (better) switch to `resource.k8s.io/v1`.
`firstAvailable` exists in v1beta1 too (Kubernetes 1.33+), and its entries are flat in every
version, so `exactly:` inside a `firstAvailable` entry is also wrong.
""",
    "Match the request shape to apiVersion: wrap the fields in `exactly:` for v1/v1beta2, "
    "keep them flat for v1beta1.",
)

GPU602 = rule(
    "GPU602", "claim-template-missing-inner-spec", Severity.ERROR, CATEGORY,
    "A ResourceClaimTemplate has `devices` directly under `spec` (the inner `spec:` is missing).",
    """
A ResourceClaimTemplate's `spec` is a *template*: `{metadata, spec}`, where the inner `spec` is
the ResourceClaimSpec copied into every generated claim. `spec.devices` is an unknown field in
every API version, so the object is rejected (strict) or creates claims that request nothing.

Problematic:

```yaml
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: single-gpu}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com}
```

Correct:

```yaml
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: single-gpu}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com}
```
""",
    "Indent `devices:` under an inner `spec:` (spec.spec.devices).",
)

GPU603 = rule(
    "GPU603", "invalid-allocation-mode", Severity.ERROR, CATEGORY,
    "A device request has an allocationMode other than ExactCount/All, or a count that the "
    "mode does not allow.",
    """
`allocationMode` takes exactly two values: `ExactCount` (the default; `count` devices, default 1)
and `All` (every matching device in a pool). Values such as `Any`, `exactCount` or `Exact` are
rejected. `count` is only allowed with `ExactCount` and must be at least 1. This applies to
`exactly:` (v1, v1beta2), to flat v1beta1 requests and to `firstAvailable` entries.

Problematic:

```yaml
requests:
- name: gpus
  exactly:
    deviceClassName: gpu.nvidia.com
    allocationMode: All
    count: 8
```

Correct (all GPUs of the node):

```yaml
requests:
- name: gpus
  exactly:
    deviceClassName: gpu.nvidia.com
    allocationMode: All
```

or exactly eight:

```yaml
requests:
- name: gpus
  exactly:
    deviceClassName: gpu.nvidia.com
    allocationMode: ExactCount
    count: 8
```
""",
    "Use allocationMode ExactCount (with count >= 1) or All (without count).",
)

GPU604 = rule(
    "GPU604", "request-without-exactly-or-first-available", Severity.ERROR, CATEGORY,
    "A device request sets neither or both of exactly/firstAvailable, or lists more than 8 "
    "firstAvailable entries.",
    """
In `resource.k8s.io/v1` and `v1beta2` every entry of `devices.requests[]` must set **exactly
one** of `exactly:` (one kind of device) or `firstAvailable:` (an ordered list of alternatives,
at most 8). In v1beta1 the same holds for the flat `deviceClassName` and `firstAvailable`.

Problematic:

```yaml
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: gpu}
spec:
  spec:
    devices:
      requests:
      - name: gpu
```

Correct:

```yaml
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: gpu}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        firstAvailable:
        - name: h100
          deviceClassName: gpu.nvidia.com
          selectors:
          - cel: {expression: 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA H100")'}
        - name: any
          deviceClassName: gpu.nvidia.com
```

Containers reference the main request name (`gpu`); the allocation result names the chosen
entry (`gpu/h100` or `gpu/any`).
""",
    "Give each request exactly one of `exactly:` or `firstAvailable:` (at most 8 entries).",
)

GPU605 = rule(
    "GPU605", "unknown-nvidia-device-attribute", Severity.ERROR, CATEGORY,
    "A CEL selector reads an attribute or capacity the NVIDIA DRA driver does not publish.",
    """
Device attributes are dynamically typed, so a selector on a name the device does not carry
compiles, and then fails **at allocation time** with `no such key`, which aborts scheduling of
the pod. The NVIDIA driver (`gpu.nvidia.com`) publishes, per device type:

- attributes (gpu, mig): `type`, `uuid`, `productName`, `brand`, `architecture`,
  `cudaComputeCapability`, `driverVersion`, `cudaDriverVersion` (these three are versions),
  `addressingMode`; mig adds `parentUUID` and `profile`; vfio has `type`, `uuid`, `productName`,
  `deviceID`, `vendorID`, `iommuFDEnabled` (`numa` until v0.4.x);
- standard attributes under `resource.kubernetes.io`: `pciBusID` (since v25.12.0), `pcieRoot`,
  `numaNode` (since v0.5.0);
- capacities: `memory` (bytes; gpu, mig), the MIG engine counts `multiprocessors`,
  `copyEngines`, `decoders`, `encoders`, `jpegEngines`, `ofaEngines`, `memorySlice<N>`,
  `addressableMemory` (vfio), and `shares` (gpu, mig; v0.5.0 with `--consumable-shares=<N>`).

Common mistakes: `memory` read as an attribute (it is a capacity, in bytes); `index`, `minor` and
`parentIndex`, which existed only up to v25.3.x; `pcieBusID`, which v25.12.0 replaced by
`resource.kubernetes.io/pciBusID`. Only the `gpu.nvidia.com` and `resource.kubernetes.io`
domains are judged; other drivers' attributes are left alone. A reference wrapped in `has(...)`
is a presence test and is not reported.

Problematic:

```yaml
exactly:
  deviceClassName: gpu.nvidia.com
  selectors:
  - cel:
      expression: device.attributes["gpu.nvidia.com"].memory >= 16000
```

Correct:

```yaml
exactly:
  deviceClassName: gpu.nvidia.com
  selectors:
  - cel:
      expression: device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("16Gi")) >= 0
```
""",
    "Use a name the driver publishes: memory is device.capacity[\"gpu.nvidia.com\"].memory; "
    "pciBusID lives under resource.kubernetes.io.",
)

GPU606 = rule(
    "GPU606", "relational-operator-on-quantity-or-version", Severity.ERROR, CATEGORY,
    "A CEL selector applies <, <=, > or >= to a Quantity (capacity) or a semver Version.",
    """
CEL has no ordering operators for Kubernetes `Quantity` values (every `device.capacity[...]`
entry, and `quantity("...")`) or for semver versions (`cudaComputeCapability`, `driverVersion`,
`cudaDriverVersion`, and `semver("...")`). The API server rejects the selector with
`no matching overload for '_>=_'`. Compare with `compareTo(...)`, which returns -1, 0 or 1, or
with `isGreaterThan(...)` / `isLessThan(...)`. A version's `major()`, `minor()` and `patch()`
are plain integers and may be compared directly.

Problematic:

```yaml
selectors:
- cel:
    expression: >-
      device.capacity["gpu.nvidia.com"].memory >= quantity("40Gi") &&
      device.attributes["gpu.nvidia.com"].cudaComputeCapability >= semver("8.0.0")
```

Correct:

```yaml
selectors:
- cel:
    expression: >-
      device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0 &&
      device.attributes["gpu.nvidia.com"].cudaComputeCapability.compareTo(semver("8.0.0")) >= 0
```
""",
    "Write a.compareTo(b) >= 0 (or a.isGreaterThan(b)) instead of a >= b for quantities and versions.",
)

GPU612 = rule(
    "GPU612", "cel-selector-does-not-compile", Severity.ERROR, CATEGORY,
    "A CEL selector does not compile in the DRA CEL environment of the target release.",
    """
The API server compiles every new selector of a DeviceClass, ResourceClaim or
ResourceClaimTemplate and refuses the object when it does not compile (`spec...selectors[0].
cel.expression: Invalid value: ... compilation failed`). What compiles depends on the release:
`device.allowMultipleAllocations` exists from 1.34, and only with the DRAConsumableCapacity
gate (off by default in 1.34 and 1.35, on from 1.36); `semver(s, true)` and `isSemver(s, true)`
from 1.34; list `first()`/`last()` and two-variable comprehensions from 1.33; the lists
extension (`sort()`, `slice()`, `flatten()`, ...) from 1.35. The target is `--target-version`.
Comparison operators on quantities and versions are GPU606.

Problematic (target 1.35, DRAConsumableCapacity off):

```yaml
selectors:
- cel:
    expression: device.allowMultipleAllocations
```

Correct (a selector the release compiles, or a target with the gate on):

```yaml
selectors:
- cel:
    expression: device.attributes["gpu.nvidia.com"].type == "gpu"
```
""",
    "Write the selector for the target release (the message says what is new in which "
    "release), or target the release the cluster runs.",
)

GPU607 = rule(
    "GPU607", "undefined-resource-claim-reference", Severity.WARNING, CATEGORY,
    "A pod references a ResourceClaim or ResourceClaimTemplate that no scanned manifest defines.",
    """
`spec.resourceClaims[].resourceClaimName` / `resourceClaimTemplateName` must name an object in
the pod's namespace. If the tree never defines it, the pod stays Pending (`resourceclaim not
found` / `resourceclaimtemplate not found`) unless something else creates it: another
repository, an operator (a ComputeDomain's `spec.channel.resourceClaimTemplate.name` counts as a
definition), or a Helm chart whose templates gpudra cannot render. Claims and templates of any
`resource.k8s.io` version count; the namespace must match when both sides set one.

Problematic (nothing defines `single-gpu`):

```yaml
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ml}
spec:
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: single-gpu
  containers:
  - name: c
    image: ubuntu
    resources: {claims: [{name: gpu}]}
```

Correct: ship the template with the workload.

```yaml
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: single-gpu, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com}
```

If the object is created elsewhere on purpose, suppress with
`gpudra.io/ignore: "GPU607: created by <who>"`.
""",
    "Add the ResourceClaim/ResourceClaimTemplate to the tree (same namespace) or fix the name.",
)

GPU608 = rule(
    "GPU608", "container-claim-not-in-pod", Severity.ERROR, CATEGORY,
    "A container's resources.claims[].name is not one of the pod's spec.resourceClaims names.",
    """
A container uses a claim by naming an entry of the pod's `spec.resourceClaims`, not the
ResourceClaim or template itself. Any other name is rejected by the API server: "must be one of
the names in pod.spec.resourceClaims". The usual cause is using the template name, or a claim
entry that was renamed or dropped.

Problematic:

```yaml
spec:
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: single-gpu
  containers:
  - name: c
    image: ubuntu
    resources:
      claims:
      - name: single-gpu
```

Correct:

```yaml
spec:
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: single-gpu
  containers:
  - name: c
    image: ubuntu
    resources:
      claims:
      - name: gpu
```
""",
    "Name the pod's spec.resourceClaims entry in the container, not the claim or template.",
)

GPU609 = rule(
    "GPU609", "invalid-pod-resource-claim-entry", Severity.ERROR, CATEGORY,
    "A pod's spec.resourceClaims entry uses the removed `source:` form, or sets both or neither "
    "of resourceClaimName/resourceClaimTemplateName.",
    """
Up to Kubernetes 1.30 (alpha DRA) an entry read `{name, source: {resourceClaimTemplateName}}`.
Kubernetes 1.31 removed `source` and inlined its fields; the API server no longer knows it.
Each entry must set **exactly one** of `resourceClaimName` (an existing, possibly shared claim)
or `resourceClaimTemplateName` (a claim generated per pod).

Problematic:

```yaml
spec:
  resourceClaims:
  - name: gpu
    source:
      resourceClaimTemplateName: single-gpu
```

Correct:

```yaml
spec:
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: single-gpu
```
""",
    "Set exactly one of resourceClaimName / resourceClaimTemplateName directly in the entry.",
)


GPU611 = rule(
    "GPU611", "dra-api-version-not-served", Severity.ERROR, CATEGORY,
    "A DRA object uses a resource.k8s.io version the target release does not serve by default "
    "(or does not have).",
    """
`kubectl apply` of a `resource.k8s.io` object fails when the cluster does not serve its
version: `no matches for kind "ResourceClaim" in version "resource.k8s.io/v1beta1"`. From
Kubernetes 1.34 only `v1` is served by default; `v1beta1` and `v1beta2` need
`--runtime-config` on the API server, `v1alpha3` no longer has the claim kinds, and `v1alpha2`
(classic DRA, 1.26-1.30) is gone altogether. 1.32 and 1.33 serve no version by default, so for
those targets only versions the release does not have are reported. Manifests are judged;
objects read from a live cluster are stored in a version that cluster serves.

The target is `--target-version` (default: the newest release gpudra knows). `gpudra convert
--target-version <release>` rewrites ResourceClaims, ResourceClaimTemplates and DeviceClasses
to the target's version, with that version's request shape (flat v1beta1 fields move under
`exactly:`).

Problematic (target 1.34 or newer):

```yaml
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaimTemplate
metadata: {name: one-gpu}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        deviceClassName: gpu.nvidia.com
```

Correct:

```yaml
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.nvidia.com
```
""",
    "Write the target's version (gpudra convert --target-version <release> does), or enable "
    "the version on the API server.",
)


@dataclass(frozen=True, slots=True)
class _ClaimUse:
    """A pod spec's reference to a claim or template, kept until the whole tree is read."""

    obj: SourceObject
    path: PathT
    kind: str  # "ResourceClaim" | "ResourceClaimTemplate"
    name: str
    entry: str  # the pod's resourceClaims[].name


@dataclass
class _Definitions:
    """(kind, name) -> namespaces that define it; None stands for "namespace not set"."""

    by_name: dict[tuple[str, str], set[str | None]] = field(default_factory=dict)

    def add(self, kind: str, name: Any, namespace: str | None) -> None:
        if isinstance(name, str) and name:
            self.by_name.setdefault((kind, name), set()).add(namespace)

    def defines(self, kind: str, name: str, namespace: str | None) -> bool:
        spaces = self.by_name.get((kind, name))
        if not spaces:
            return False
        return namespace is None or None in spaces or namespace in spaces


class DraObjects(Checker):
    rules = (GPU601, GPU602, GPU603, GPU604, GPU605, GPU606, GPU607, GPU608, GPU609, GPU611,
             GPU612)

    def __init__(self) -> None:
        self._defined = _Definitions()
        self._uses: list[_ClaimUse] = []

    # --- hooks --------------------------------------------------------------------------

    def check_object(self, obj: SourceObject, ctx: AuditContext) -> None:
        if obj.group == GROUP:
            self._dra_object(obj, ctx)
        elif obj.kind == "ComputeDomain" and obj.group.endswith("nvidia.com"):
            self._compute_domain(obj)
        for spec in ctx.pod_specs(obj):
            self._pod_spec(obj, spec, ctx)

    def finish(self, ctx: AuditContext) -> None:
        for use in self._uses:
            if self._defined.defines(use.kind, use.name, use.obj.namespace):
                continue
            where = f" in namespace {use.obj.namespace!r}" if use.obj.namespace else ""
            ctx.emit(GPU607, use.obj,
                     f"resourceClaims entry {use.entry!r} references {use.kind} {use.name!r}, "
                     f"which no scanned manifest defines{where}", path=use.path)

    # --- DRA objects --------------------------------------------------------------------

    def _dra_object(self, obj: SourceObject, ctx: AuditContext) -> None:
        version = obj.api_version.rpartition("/")[2]
        spec = as_mapping(obj.data.get("spec"))
        if obj.kind in ("ResourceClaim", "ResourceClaimTemplate"):
            self._defined.add(obj.kind, obj.metadata.get("name"), obj.namespace)
        self._served(obj, ctx)
        if version not in FLAT_VERSIONS | WRAPPED_VERSIONS:
            return  # v1alpha2 and older are another design altogether
        if obj.kind == "ResourceClaim":
            self._claim_spec(obj, ctx, ("spec",), spec, version)
        elif obj.kind == "ResourceClaimTemplate":
            if "devices" in spec:
                ctx.emit(GPU602, obj,
                         "ResourceClaimTemplate has spec.devices; the claim spec belongs in "
                         "spec.spec (spec.spec.devices)", path=("spec", "devices"))
                self._claim_spec(obj, ctx, ("spec",), spec, version)
            self._claim_spec(obj, ctx, ("spec", "spec"), as_mapping(spec.get("spec")), version)
        elif obj.kind == "DeviceClass":
            name = obj.name or ""
            self._selectors(obj, ctx, ("spec", "selectors"), spec.get("selectors"),
                            _Context(None, name.endswith("nvidia.com")))

    @staticmethod
    def _served(obj: SourceObject, ctx: AuditContext) -> None:
        # A live object is stored in whatever version its cluster serves: only manifests are
        # judged against the target.
        if obj.source != "file" or not obj.kind or "/" not in obj.api_version:
            return
        target = ctx.target
        found = availability(target, obj.api_version, obj.kind)
        if not found.exists:
            versions = versions_with_kind(target, obj.kind)
            has = (f"it has {', '.join(f'{GROUP}/{v}' for v in versions)}" if versions
                   else f"no version of it has {obj.kind}")
            ctx.emit(GPU611, obj, f"{obj.kind} {obj.api_version} is not in Kubernetes "
                     f"{target}; {has}", path=("apiVersion",))
        elif target.served_by_default and not found.served_by_default:
            ctx.emit(GPU611, obj, f"{obj.kind} {obj.api_version} is not served by default in "
                     f"Kubernetes {target}: use {target.resource_api_version}, or "
                     f"{found.how_to_enable()}", path=("apiVersion",))

    def _compute_domain(self, obj: SourceObject) -> None:
        channel = as_mapping(as_mapping(obj.data.get("spec")).get("channel"))
        template = as_mapping(channel.get("resourceClaimTemplate"))
        self._defined.add("ResourceClaimTemplate", template.get("name"), obj.namespace)

    def _claim_spec(self, obj: SourceObject, ctx: AuditContext, path: PathT,
                    claim: Mapping[str, Any], version: str) -> None:
        requests = as_mapping(claim.get("devices")).get("requests")
        if not isinstance(requests, list):
            return
        for i, request in enumerate(requests):
            if isinstance(request, Mapping):
                where = path + ("devices", "requests", i)
                if version in WRAPPED_VERSIONS:
                    self._wrapped_request(obj, ctx, where, request, obj.api_version)
                else:
                    self._flat_request(obj, ctx, where, request, obj.api_version)

    def _wrapped_request(self, obj: SourceObject, ctx: AuditContext, path: PathT,
                         request: Mapping[str, Any], api_version: str) -> None:
        label = _request_label(request, path)
        flat = [f for f in request if f in EXACT_FIELDS]  # document order: the first one is reported
        if flat:
            ctx.emit(GPU601, obj,
                     f"{label} sets {', '.join(flat)} directly in requests[] (the v1beta1 shape); "
                     f"{api_version} needs them wrapped in `exactly:`", path=path + (flat[0],))
        has_exactly, has_first = "exactly" in request, "firstAvailable" in request
        if has_exactly and has_first:
            ctx.emit(GPU604, obj, f"{label} sets both exactly and firstAvailable (exactly one "
                     "is allowed)", path=path + ("firstAvailable",))
        elif not has_exactly and not has_first and not flat:
            ctx.emit(GPU604, obj, f"{label} sets neither exactly nor firstAvailable",
                     path=path)
        exactly = request.get("exactly")
        if isinstance(exactly, Mapping):
            self._device_body(obj, ctx, path + ("exactly",), exactly, label)
        elif flat:
            # Lint the misplaced fields too: they will be moved into `exactly:` as they are.
            self._device_body(obj, ctx, path, request, label)
        self._first_available(obj, ctx, path, request, label)

    def _flat_request(self, obj: SourceObject, ctx: AuditContext, path: PathT,
                      request: Mapping[str, Any], api_version: str) -> None:
        label = _request_label(request, path)
        if "exactly" in request:
            ctx.emit(GPU601, obj,
                     f"{label} uses `exactly:`, which {api_version} does not have: put its "
                     "fields directly in the request, or use apiVersion resource.k8s.io/v1",
                     path=path + ("exactly",))
            exactly = request.get("exactly")
            if isinstance(exactly, Mapping):
                self._device_body(obj, ctx, path + ("exactly",), exactly, label)
        has_class, has_first = "deviceClassName" in request, "firstAvailable" in request
        if has_class and has_first:
            ctx.emit(GPU604, obj, f"{label} sets both deviceClassName and firstAvailable "
                     "(exactly one is allowed)", path=path + ("firstAvailable",))
        elif not has_class and not has_first and "exactly" not in request:
            ctx.emit(GPU604, obj, f"{label} sets neither deviceClassName nor firstAvailable",
                     path=path)
        self._device_body(obj, ctx, path, request, label)
        self._first_available(obj, ctx, path, request, label)

    def _first_available(self, obj: SourceObject, ctx: AuditContext, path: PathT,
                         request: Mapping[str, Any], label: str) -> None:
        entries = request.get("firstAvailable")
        if not isinstance(entries, list):
            return
        if len(entries) > MAX_SUBREQUESTS:
            ctx.emit(GPU604, obj, f"{label} lists {len(entries)} firstAvailable entries (at "
                     f"most {MAX_SUBREQUESTS})", path=path + ("firstAvailable",))
        for j, sub in enumerate(entries):
            if not isinstance(sub, Mapping):
                continue
            where = path + ("firstAvailable", j)
            sub_label = f"{label} firstAvailable[{j}]"
            if isinstance(sub.get("name"), str):
                sub_label = f"subrequest {_request_name(request, path)}/{sub['name']}"
            if "exactly" in sub:
                ctx.emit(GPU601, obj, f"{sub_label} uses `exactly:`; firstAvailable entries "
                         "carry deviceClassName/count/selectors directly",
                         path=where + ("exactly",))
            self._device_body(obj, ctx, where, sub, sub_label)

    def _device_body(self, obj: SourceObject, ctx: AuditContext, path: PathT,
                     body: Mapping[str, Any], label: str) -> None:
        """What `exactly`, a flat v1beta1 request and a subrequest share: mode, count, selectors."""
        self._allocation(obj, ctx, path, body, label)
        class_name = body.get("deviceClassName")
        class_name = class_name if isinstance(class_name, str) else None
        nvidia = class_name is not None and class_name.endswith("nvidia.com")
        self._selectors(obj, ctx, path + ("selectors",), body.get("selectors"),
                        _Context(CLASS_DEVICE_TYPE.get(class_name or ""), nvidia))

    @staticmethod
    def _allocation(obj: SourceObject, ctx: AuditContext, path: PathT,
                    body: Mapping[str, Any], label: str) -> None:
        mode = body.get("allocationMode")
        if "allocationMode" in body and mode not in ALLOCATION_MODES and not _placeholder(mode):
            ctx.emit(GPU603, obj, f"{label}: allocationMode {mode!r} is not valid (use "
                     "ExactCount or All)", path=path + ("allocationMode",))
        if "count" not in body:
            return
        count = body["count"]
        if mode == "All":
            ctx.emit(GPU603, obj, f"{label}: count {count!r} is set with allocationMode All "
                     "(count is only allowed with ExactCount)", path=path + ("count",))
        elif not _placeholder(count) and (
                isinstance(count, bool) or not isinstance(count, int) or count < 1):
            ctx.emit(GPU603, obj, f"{label}: count {count!r} must be a whole number >= 1",
                     path=path + ("count",))

    # --- selectors ----------------------------------------------------------------------

    def _selectors(self, obj: SourceObject, ctx: AuditContext, path: PathT, selectors: Any,
                   context: _Context) -> None:
        if not isinstance(selectors, list):
            return
        for k, selector in enumerate(selectors):
            expression = as_mapping(as_mapping(selector).get("cel")).get("expression")
            if isinstance(expression, str) and not _placeholder(expression):
                self._expression(obj, ctx, path + (k, "cel", "expression"), expression, context)

    def _expression(self, obj: SourceObject, ctx: AuditContext, path: PathT, expression: str,
                    context: _Context) -> None:
        # The CEL checker loads with the first selector, not with every audit.
        from gpudra.dra.selector_check import selector_problems

        problems = selector_problems(expression, context.device_type, context.nvidia)
        for problem in problems:
            ctx.emit(GPU605 if problem.kind == "reference" else GPU606, obj, problem.message,
                     path=path)
        if any(p.kind == "comparison" for p in problems):
            return  # GPU606 says why it does not compile
        from gpudra.dra.cel import CelError, compile_selector  # the engine costs ~25 ms to load

        try:
            compile_selector(expression, ctx.target)
        except CelError as exc:
            hint = f" ({exc.hint})" if exc.hint else ""
            ctx.emit(GPU612, obj, f"selector does not compile on Kubernetes {ctx.target}: "
                     f"{exc}{hint}", path=path)

    # --- pod specs ----------------------------------------------------------------------

    def _pod_spec(self, obj: SourceObject, spec: PodSpecRef, ctx: AuditContext) -> None:
        entries = spec.data.get("resourceClaims")
        names: list[str] = []
        if isinstance(entries, list):
            for j, entry in enumerate(entries):
                if isinstance(entry, Mapping):
                    self._claim_entry(obj, ctx, spec.path + ("resourceClaims", j), entry)
                    if isinstance(entry.get("name"), str):
                        names.append(entry["name"])
        for container in spec.containers:
            self._container_claims(obj, ctx, container, names)

    def _claim_entry(self, obj: SourceObject, ctx: AuditContext, path: PathT,
                     entry: Mapping[str, Any]) -> None:
        label = f"resourceClaims entry {entry.get('name')!r}"
        if "source" in entry:
            ctx.emit(GPU609, obj, f"{label} uses `source:`, the alpha form removed in "
                     "Kubernetes 1.31: move its resourceClaimName/resourceClaimTemplateName "
                     "into the entry", path=path + ("source",))
            return
        set_fields = [(k, entry[k]) for k in ("resourceClaimName", "resourceClaimTemplateName")
                      if entry.get(k) not in (None, "")]
        if len(set_fields) != 1:
            which = "both" if set_fields else "neither"
            ctx.emit(GPU609, obj, f"{label} sets {which} of resourceClaimName and "
                     "resourceClaimTemplateName (exactly one is required)", path=path)
            return
        key, name = set_fields[0]
        if isinstance(name, str) and not _placeholder(name):
            kind = "ResourceClaim" if key == "resourceClaimName" else "ResourceClaimTemplate"
            self._uses.append(_ClaimUse(obj, path + (key,), kind, name, str(entry.get("name"))))

    @staticmethod
    def _container_claims(obj: SourceObject, ctx: AuditContext, container: ContainerRef,
                          names: list[str]) -> None:
        claims = as_mapping(container.data.get("resources")).get("claims")
        if not isinstance(claims, list):
            return
        kind = "init container" if container.init else "container"
        for k, claim in enumerate(claims):
            name = as_mapping(claim).get("name")
            if not isinstance(name, str) or name in names or _placeholder(name):
                continue
            known = ", ".join(repr(n) for n in names) or "none"
            ctx.emit(GPU608, obj,
                     f"{kind} {container.name!r} resources.claims[{k}] names {name!r}, which is "
                     f"not in the pod's spec.resourceClaims ({known})",
                     path=container.path + ("resources", "claims", k, "name"),
                     container=container.name)


@dataclass(frozen=True, slots=True)
class _Context:
    """What is known about the devices a selector runs against."""

    device_type: DeviceType | None  # pinned by an NVIDIA class name, else None
    nvidia: bool  # an NVIDIA class: judge resource.kubernetes.io names as the NVIDIA driver's


def _request_name(request: Mapping[str, Any], path: PathT) -> str:
    name = request.get("name")
    return name if isinstance(name, str) else format_path(path[-3:])


def _request_label(request: Mapping[str, Any], path: PathT) -> str:
    name = request.get("name")
    return f"request {name!r}" if isinstance(name, str) else f"request {format_path(path[-2:])}"


def _placeholder(value: Any) -> bool:
    return isinstance(value, str) and any(mark in value for mark in _PLACEHOLDER_MARKS)

