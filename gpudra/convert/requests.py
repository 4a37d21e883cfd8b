"""Device-plugin requests of one pod spec -> DRA requests, container by container.

Each GPU app container gets a request of its own, named after it. A plain init container runs
before the app containers start, and under the device plugin it got devices the app containers
then got again; a request of its own would make the pod need more devices than before. So it
takes its devices from an app container's request and sees *exactly* its own count: for an
init container of 1 GPU before an app container of 4, the 1 device becomes a claim of its own
(`gpu-warmup`, one request `warmup`), the app container's request shrinks to 3 (`train-rest`),
the init container references `gpu-warmup` and the app container both. Init containers are
carved in order of their counts, each taking the devices the smaller ones took plus a piece of
its own.

Why a claim per piece rather than pieces as requests of one claim: a container would then need
two `resources.claims` entries with the same claim name, and that list is keyed by `name` for
server-side apply (Flux, Argo CD, `kubectl apply --server-side`), which refuses duplicates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gpudra.convert.naming import free_name
from gpudra.convert.records import Blocked
from gpudra.devices import DeviceKind
from gpudra.dra import emit
from gpudra.dra.versions import TargetVersion
from gpudra.gpu_use import PodSpecUse
from gpudra.objects import PathT
from gpudra.quantity import parse_device_count
from gpudra.workloads import ContainerRef

GPU_CLASS = emit.GPU_CLASS
MIG_CLASS = emit.MIG_CLASS
MAX_REQUESTS = 32  # resourceapi.DeviceRequestsMaxSize
_NAME_ROOM = 56    # a request name is a DNS label (63); room for "-rest" and "-NN"


@dataclass(frozen=True)
class DeviceNeed:
    """What one container asks the device plugin for, as DRA will ask for it."""

    container: ContainerRef
    resource: str
    count: int
    paths: tuple[PathT, ...]  # the limits/requests keys to delete (relative to the object)
    shared: bool              # one claim for every pod (a .shared replica, or claim mode shared)
    mig: bool
    profile: str | None       # MIG profile as the driver spells it; None: whole GPU or any MIG
    asked: int = 0            # the device-plugin count (a .shared count is replicas, not GPUs)

    @property
    def device_class(self) -> str:
        return MIG_CLASS if self.mig else GPU_CLASS


def find_needs(pod: PodSpecUse) -> list[DeviceNeed]:
    """The NVIDIA device-plugin requests of a pod spec. Raises Blocked where gpudra would have
    to guess (placeholders, requests without limits, differing counts, HAMi resources)."""
    found: list[DeviceNeed] = []
    for use in pod.containers:
        container = use.container
        for request in use.requests:
            device, name = request.device, request.resource
            if device.kind is DeviceKind.OTHER_VENDOR:
                continue
            label = container_label(container)
            if device.kind is DeviceKind.OTHER_NVIDIA:
                raise Blocked(f"{label}: {name} has no DRA equivalent in the NVIDIA driver")
            if not request.in_limits:
                raise Blocked(f"{label}: {name} is in requests without a limit")
            count = parse_device_count(request.limit)
            if count.templated:
                raise Blocked(f"{label}: {name} count {request.limit!r} is a placeholder")
            if count.value is None:
                raise Blocked(f"{label}: {name} count {request.limit!r} is {count.invalid}")
            if request.in_requests and \
                    parse_device_count(request.request).value != count.value:
                raise Blocked(f"{label}: {name} requests and limits differ")
            if count.value == 0:
                continue  # asks for nothing; leaving it changes nothing
            if container.ephemeral:
                raise Blocked(f"ephemeral container {label!r} requests {name}: the API server "
                              "rejects resources on ephemeral containers; remove the request")
            shared = device.kind is DeviceKind.SHARED
            # DRA has no replica count: a time-slicing/MPS replica becomes one shared device.
            found.append(DeviceNeed(container, name, 1 if shared else count.value,
                                    request.paths, shared, device.mig_profile is not None,
                                    device.mig_profile, count.value))
    return found


Reference = tuple[str, "str | None"]  # (pod claim name, request name; None: the whole claim)


@dataclass
class Piece:
    """Devices carved out of an app container's request for init containers: a claim of its own."""

    pod_claim: str
    request: dict


@dataclass
class ClaimRequests:
    """The requests of one claim (plus carved pieces), and what each container references."""

    pod_claim: str                 # the pod's resourceClaims[].name
    shared: bool
    requests: list[dict] = field(default_factory=list)
    pieces: list[Piece] = field(default_factory=list)
    containers: dict[PathT, tuple[ContainerRef, list[Reference]]] = field(default_factory=dict)


@dataclass
class _Request:
    need: DeviceNeed
    name: str
    count: int                                  # what is left after carving
    # Piece claims, smallest first, each with the number of devices carved up to and with it.
    carved: list[tuple[Reference, int]] = field(default_factory=list)

    @property
    def carved_count(self) -> int:
        return self.carved[-1][1] if self.carved else 0


def build_claim(needs: list[DeviceNeed], pod_claim: str, shared: bool,
                selectors: Callable[[DeviceNeed], list[str]], target: TargetVersion,
                notes: list[str], taken: set[str]) -> ClaimRequests:
    """Requests for `needs` (all in one claim). `taken` holds the pod's claim names (piece
    claims are added to it). Raises Blocked past the API's request limit."""
    claim = ClaimRequests(pod_claim, shared)
    used: set[str] = set()
    granted: list[_Request] = []
    views: dict[PathT, tuple[ContainerRef, _Request | list[Reference]]] = {}
    for need in needs:
        if not runs_before_app(need.container):
            request = _Request(need, _new_name(container_label(need.container), used), need.count)
            granted.append(request)
            views[need.container.path] = (need.container, request)
    own: list[_Request] = []
    for need in sorted((n for n in needs if runs_before_app(n.container)), key=lambda n: n.count):
        host = _host(need, granted)
        label = container_label(need.container)
        if host is None:
            notes.append(f"init container {label!r} gets devices of its own: no app container "
                         "asks for as many, so the pod now needs them in addition")
            request = _Request(need, _new_name(label, used), need.count)
            own.append(request)
            views[need.container.path] = (need.container, request)
            continue
        app = container_label(host.need.container)
        if need.count > host.carved_count and need.count < host.need.count:
            piece = need.count - host.carved_count
            piece_claim = free_name(f"{pod_claim}-{_base(label)}", taken)
            taken.add(piece_claim)
            request_name = _base(label)
            claim.pieces.append(Piece(piece_claim, emit.device_request(
                request_name, need.device_class, piece, selectors(need), target)))
            host.carved.append(((piece_claim, None), need.count))
            host.count = host.need.count - need.count
            if not host.name.endswith("-rest"):
                used.discard(host.name)
                host.name = _new_name(f"{_base(app)}-rest", used)
        view = [ref for ref, upto in host.carved if upto <= need.count]
        if need.count == host.need.count:
            view.append((pod_claim, host.name))
            notes.append(f"init container {label!r} uses {app!r}'s devices: init containers "
                         "run before app containers, so they share devices as with the device "
                         "plugin")
        else:
            notes.append(f"init container {label!r} sees {need.count} of {app!r}'s "
                         f"{host.need.count} devices: they are a claim of their own that "
                         f"{app!r} references too, so the pod still gets the same devices")
        views[need.container.path] = (need.container, view)
    for request in [*granted, *own]:
        claim.requests.append(emit.device_request(
            request.name, request.need.device_class, request.count, selectors(request.need),
            target))
    if len(claim.requests) > MAX_REQUESTS:
        raise Blocked(f"the pod would need {len(claim.requests)} requests in one claim; the API "
                      f"allows at most {MAX_REQUESTS}: split the containers' GPUs by hand")
    for path, (container, view) in views.items():
        if isinstance(view, _Request):
            view = [*(ref for ref, _ in view.carved), (pod_claim, view.name)]
        claim.containers[path] = (container, view)
    return claim


def _host(need: DeviceNeed, granted: list[_Request]) -> _Request | None:
    """The app request a plain init container can take its devices from: the same kind of
    device, at least as many; the smallest such (the first among equals)."""
    fits = [r for r in granted if r.need.device_class == need.device_class
            and r.need.profile == need.profile and r.need.count >= need.count]
    return min(fits, key=lambda r: r.need.count) if fits else None


def _new_name(text: str, used: set[str]) -> str:
    name = free_name(_base(text), used)
    used.add(name)
    return name


def _base(text: str) -> str:
    return emit.dns_label(text, _NAME_ROOM)


def runs_before_app(container: ContainerRef) -> bool:
    """A plain init container; `restartPolicy: Always` makes it a sidecar that runs alongside."""
    return container.init and container.data.get("restartPolicy") != "Always"


def container_label(container: ContainerRef) -> str:
    if container.name:
        return container.name
    last = container.path[-1] if container.path else "main"
    if last in ("container", "script"):
        return "main"  # what Argo names the container it creates from these keys
    return str(last) if isinstance(last, str) else "main"


