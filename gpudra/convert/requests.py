"""Device-plugin requests of one pod spec -> DRA claims and requests, container by container.

Under the device plugin each container sees exactly its own count, app containers (and
sidecars, init containers with `restartPolicy: Always`) never share a device, and a plain init
container runs before them, so the kubelet hands its devices on to the containers that follow
(kubernetes#56818; a sidecar's it does not, kubernetes#120461). A pod therefore takes, per
resource, the larger of what its app containers and sidecars take together and what its largest
init container takes next to the sidecars started before it. Convert keeps exactly that.

Per device-plugin resource the pod's devices are laid out in a row: app containers
from the start, each after the other; sidecars from the end; spare devices, which only init
containers use, in between; each plain init container uses the first devices of the row, as many
as it asks for. Every boundary between two of these ranges cuts the row into pieces, and each
piece is one request. Consecutive pieces are grouped into claims such that each container uses
either one piece of a claim or all of it: a container's `resources.claims` can name a claim only
once (the list is keyed by `name` for server-side apply; docs/facts.md), naming either one of its
requests or the whole claim. A claim also holds at most 32 requests and allocates at most 32
devices (DeviceRequestsMaxSize, AllocationResultsMaxSize): past that, the next piece starts a
claim of its own, and a piece of more than 32 devices is cut in pieces of 32.

For an init container `warmup` of 1 GPU before an app container `train` of 4, the row is
`warmup` (1) and `train-rest` (3): one claim with both requests, `warmup` references its request
and `train` the whole claim, so the pod takes 4 devices, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from gpudra.convert.naming import free_name
from gpudra.convert.records import Blocked
from gpudra.k8s.devices import MAX_NODE_DEVICES, DeviceKind
from gpudra.dra import emit
from gpudra.dra.mig_memory import usable_mib
from gpudra.dra.versions import TargetVersion
from gpudra.k8s.gpu_use import PodSpecUse
from gpudra.k8s.objects import PathT
from gpudra.k8s.quantity import parse_device_count, parse_quantity
from gpudra.k8s.workloads import ContainerRef

GPU_CLASS = emit.GPU_CLASS
MIG_CLASS = emit.MIG_CLASS
MAX_REQUESTS = 32  # resourceapi.DeviceRequestsMaxSize: requests in one claim
MAX_DEVICES = 32   # resourceapi.AllocationResultsMaxSize: devices one claim allocates
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
        zeros: list[PathT] = []  # `nvidia.com/gpu: 0` and the like: they ask for nothing
        first = len(found)
        for request in use.requests:
            device, name = request.device, request.resource
            if device.kind is DeviceKind.OTHER_VENDOR:
                continue
            asks = f"container {container_label(container)!r} asks for {name}"
            if device.kind is DeviceKind.OTHER_NVIDIA:
                raise Blocked(f"{asks}, and {name} has no DRA equivalent in the NVIDIA driver "
                              "(HAMi and other schedulers define such resources)")
            if not request.in_limits:
                raise Blocked(f"{asks} in requests without a limit: the count to claim would "
                              "be a guess; set the limit")
            count = parse_device_count(request.limit)
            if count.templated:
                raise Blocked(f"{asks} {request.limit!r}, a placeholder another tool fills in: "
                              "convert the rendered manifest, or write the count")
            if count.value is None:
                raise Blocked(f"{asks} {request.limit!r}, which is {count.invalid}")
            if count.value > MAX_NODE_DEVICES:
                # No node holds them, so no pod of it ever ran; cut into claims of 32 devices,
                # 10,000,000 would be 312,500 claims (minutes, gigabytes).
                raise Blocked(f"{asks} {count.value:,}, more devices than a node holds (at most "
                              f"{MAX_NODE_DEVICES}): no pod of it can run; fix the count")
            if request.in_requests and \
                    parse_device_count(request.request).value != count.value:
                raise Blocked(f"{asks} with requests and limits that differ; the API server "
                              "rejects that for devices: make them equal")
            if count.value == 0:
                zeros += request.paths
                continue
            if container.ephemeral:
                raise Blocked(f"ephemeral container {container_label(container)!r} requests "
                              f"{name}: the API server rejects resources on ephemeral "
                              "containers; remove the request")
            shared = device.kind is DeviceKind.SHARED
            # DRA has no replica count: a time-slicing/MPS replica becomes one shared device.
            found.append(DeviceNeed(container, name, 1 if shared else count.value,
                                    request.paths, shared, device.mig_profile is not None,
                                    device.mig_profile, count.value))
        if zeros and len(found) > first:
            # A zero beside what the container is converted for goes with it; alone it stays
            # (converting it would change nothing).
            found[first] = replace(found[first], paths=found[first].paths + tuple(zeros))
    return found


Reference = tuple[str, "str | None"]  # (pod claim name, request name; None: the whole claim)


@dataclass
class ClaimRequests:
    """One claim of a pod: its requests, and what each container references in it."""

    pod_claim: str                 # the pod's resourceClaims[].name
    shared: bool
    requests: list[dict[str, Any]] = field(default_factory=list)
    containers: dict[PathT, tuple[ContainerRef, Reference]] = field(default_factory=dict)


@dataclass
class _Piece:
    """Consecutive devices of one kind that the same containers see: one request."""

    need: DeviceNeed         # a need of the kind: class, profile and selectors come from it
    count: int
    users: frozenset[PathT]  # the containers that see these devices
    label: str               # what the request is named after
    name: str = ""


def plan_claims(needs: list[DeviceNeed], pod_claim: str, shared: bool,
                selectors: Callable[[DeviceNeed], list[str]], target: TargetVersion,
                notes: list[str], taken: set[str]) -> list[ClaimRequests]:
    """The claims for `needs` (all shared, or all not): the first is named `pod_claim`, the
    others `<pod_claim>-<their first request>`. `taken` holds the pod's claim names; the
    names given out are added to it."""
    containers = {n.container.path: n.container for n in needs}
    pieces = [piece for kind in _by_kind(needs) for piece in _lay_out(kind, containers, notes)]
    used: set[str] = set()
    for piece in pieces:
        name = _base(piece.label)
        if name in used:  # a container's second device kind: say which
            name = _base(f"{piece.label}-{_kind_tag(piece.need)}")
        piece.name = _new_name(name, used)
    claims: list[ClaimRequests] = []
    for group in _group(pieces):
        name = free_name(pod_claim if not claims else f"{pod_claim}-{group[0].name}", taken)
        taken.add(name)
        claim = ClaimRequests(name, shared, [emit.device_request(
            p.name, p.need.device_class, p.count, selectors(p.need), target=target) for p in group])
        for path, container in containers.items():
            seen = [p for p in group if path in p.users]
            if seen:
                whole = len(seen) == len(group) and len(group) > 1
                claim.containers[path] = (container, (name, None if whole else seen[0].name))
        claims.append(claim)
    return claims


def _by_kind(needs: list[DeviceNeed]) -> list[list[DeviceNeed]]:
    """Needs per device-plugin resource, in order: the kubelet hands devices on from init
    containers per resource name, so each resource is laid out on its own."""
    kinds: dict[str, list[DeviceNeed]] = {}
    for need in needs:
        kinds.setdefault(need.resource, []).append(need)
    return list(kinds.values())


def _lay_out(needs: list[DeviceNeed], containers: dict[PathT, ContainerRef],
             notes: list[str]) -> list[_Piece]:
    """The row of one device kind (see the module docstring), cut into pieces."""
    apps = [n for n in needs if not n.container.init]
    inits: list[tuple[DeviceNeed, int]] = []  # with the sidecars' devices running beside it
    sidecars: list[DeviceNeed] = []
    for need in (n for n in needs if n.container.init):
        if runs_before_app(need.container):
            inits.append((need, sum(s.count for s in sidecars)))
        else:
            sidecars.append(need)
    along = [*apps, *sidecars]
    total = max([sum(n.count for n in along), *(n.count + beside for n, beside in inits)])
    ranges: dict[PathT, tuple[int, int]] = {}
    start = 0
    for need in apps:
        ranges[need.container.path] = (start, start + need.count)
        start += need.count
    end = total
    for need in sidecars:
        ranges[need.container.path] = (end - need.count, end)
        end -= need.count
    init_ends: dict[int, str] = {}
    for need, _ in inits:
        ranges[need.container.path] = (0, need.count)
        init_ends.setdefault(need.count, container_label(need.container))
    alongside = {n.container.path for n in along}
    cuts = sorted({0, total, start, end, *(x for r in ranges.values() for x in r)})
    pieces = []
    for low, high in zip(cuts, cuts[1:]):
        users = frozenset(p for p, (a, b) in ranges.items() if a <= low and high <= b)
        owner = next((p for p in users if p in alongside), None)
        if owner is not None and ranges[owner] == (low, high):
            label = container_label(containers[owner])
        elif owner is not None and ranges[owner][1] == high:
            label = f"{container_label(containers[owner])}-rest"
        else:  # cut by an init container, or spare devices only init containers use
            label = init_ends.get(high) or next(container_label(n.container)
                                                for n, _ in inits if n.container.path in users)
        pieces += _cut(_Piece(needs[0], high - low, users, label))
    if inits:
        kind = needs[0].profile or needs[0].device_class
        what = "the app containers and sidecars together" if sidecars else "the app containers"
        notes.append(f"init containers run before the app containers and take {kind} devices "
                     "the app containers use afterwards, as with the device plugin: the pod "
                     f"takes {total} (its largest init container or {what}, whichever needs "
                     "more) and each container sees exactly its own count")
    return pieces


def _cut(piece: _Piece) -> list[_Piece]:
    """A piece of more devices than a claim can allocate, in pieces that fit."""
    if piece.count <= MAX_DEVICES:
        return [piece]
    counts = [MAX_DEVICES] * (piece.count // MAX_DEVICES)
    counts += [piece.count % MAX_DEVICES] if piece.count % MAX_DEVICES else []
    return [replace(piece, count=c, label=piece.label if k == 0 else f"{piece.label}-{k + 1}")
            for k, c in enumerate(counts)]


def _group(pieces: list[_Piece]) -> list[list[_Piece]]:
    """Consecutive pieces as claims: each container sees one piece of a claim or all of it
    (it can name the claim once), and a claim stays within the API's limits."""
    groups: list[list[_Piece]] = []
    for piece in pieces:
        if groups and _fits(groups[-1] + [piece]):
            groups[-1].append(piece)
        else:
            groups.append([piece])
    return groups


def _fits(group: list[_Piece]) -> bool:
    if len(group) > MAX_REQUESTS or sum(p.count for p in group) > MAX_DEVICES:
        return False
    users = {path for p in group for path in p.users}
    return all(sum(path in p.users for p in group) in (1, len(group)) for path in users)


def _kind_tag(need: DeviceNeed) -> str:
    if not need.mig:
        return "gpu"
    return f"mig-{need.profile}" if need.profile else "mig"


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


def mig_min_memory_note(profile: str | None, minimum: str) -> str:
    """Why --min-memory is not written on a MIG request, judged on the memory the driver
    publishes for the profile (its usable size, below the nominal one in its name)."""
    note = ("--min-memory applies to whole GPUs: a MIG device's memory is the size of its "
            "slice, so it is not applied to MIG requests")
    usable = usable_mib(profile) if profile is not None else None
    wanted = parse_quantity(minimum)
    if usable is None or wanted is None:
        return note
    if usable * 2**20 < wanted:
        return (f"{note}; and a MIG {profile} device has {usable}Mi (the usable memory the "
                f"driver publishes, not the nominal size in its name), less than {minimum}: "
                "pick a larger profile if the workload needs that much")
    return f"{note}; a MIG {profile} device has {usable}Mi, at least {minimum}"
