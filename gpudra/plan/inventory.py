"""The devices a plan allocates from: one frozen :class:`Device` per published (or predicted)
device, parsed from ResourceSlices given as plain dicts (a file, ``--inventory``, a cluster list).

Shapes (kubernetes/api @ kubernetes-1.36.2, ``resource/v1{,beta2,beta1}/types.go``):

* v1 and v1beta2 put device fields directly on ``spec.devices[]``; v1beta1 wraps them in
  ``basic:``; v1alpha3 (1.31) also used ``basic:`` with plain quantities as capacities. Both
  forms are accepted whatever ``apiVersion`` says: a slice comes from the API server, which
  already validated it.
* Attribute values are one of ``int|bool|string|version`` (or the 1.36 alpha list forms
  ``ints|bools|strings|versions``); capacities are ``{value, requestPolicy}`` (consumable
  capacity, KEP-5075) with ``requestPolicy: {default, validValues | validRange: {min, max,
  step}}``.
* Names are kept as published. An unqualified attribute or capacity name belongs to the slice's
  driver domain (``productName`` of driver ``gpu.nvidia.com`` is
  ``device.attributes["gpu.nvidia.com"].productName`` in CEL); :meth:`Device.qualified`
  resolves either spelling the way the allocator's ``lookupAttribute`` does.
* Where a device is usable: ``spec.nodeName`` (node-local), ``spec.allNodes`` or
  ``spec.nodeSelector`` (network-attached: ``Device.node is None``), or
  ``spec.perDeviceNodeSelection`` with the same three fields on each device.

Pools follow the structured allocator (kubernetes/dynamic-resource-allocation @
kubernetes-1.36.2, ``structured/internal/incubating/pools_incubating.go``): slices are grouped
by (driver, pool name); only the newest ``pool.generation`` counts; a pool with fewer slices than
``pool.resourceSliceCount`` is incomplete and the allocator allocates nothing from it (reported
in :attr:`Inventory.problems`); slices with ``sharedCounters`` (partitionable devices, KEP-4815)
provide the pool's counter sets. Devices are ordered as the allocator searches them: pools by
(driver, pool), slices by name, devices in slice order.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from gpudra.dra.cel_values import Version
from gpudra.k8s.objects import as_mapping, expand_lists, plural
from gpudra.k8s.quantity import parse_quantity

ScalarValue = str | int | bool | Version
AttributeValue = ScalarValue | tuple[ScalarValue, ...]  # a tuple: a list attribute
_EMPTY: Mapping[Any, Any] = MappingProxyType({})  # read-only: the default of every mapping field
_ATTRIBUTE_KINDS = ("string", "int", "bool", "version")
_LIST_KINDS = {"strings": "string", "ints": "int", "bools": "bool", "versions": "version"}


@dataclass(frozen=True, slots=True)
class RequestPolicy:
    """``capacity[name].requestPolicy`` of a consumable capacity (DRAConsumableCapacity)."""

    default: Fraction | None = None
    valid_values: tuple[Fraction, ...] = ()
    minimum: Fraction | None = None  # validRange.min; a range is set iff minimum is not None
    maximum: Fraction | None = None
    step: Fraction | None = None

    @property
    def has_range(self) -> bool:
        return self.minimum is not None


@dataclass(frozen=True, slots=True)
class CounterConsumption:
    """``consumesCounters[]``: what allocating the device takes from a shared counter set."""

    counter_set: str
    counters: Mapping[str, Fraction]


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, eq=False)
class Device:
    """One device as the scheduler sees it.

    `attributes` and `capacity` are keyed by the name as published (unqualified names belong to
    `driver`); use :attr:`by_domain` for the CEL view. Capacities are exact quantities.
    `predicted` devices come from :mod:`gpudra.plan.synthesis`; `unknown` lists the qualified
    names such a device would carry but that could not be predicted.
    """

    driver: str
    pool: str
    name: str
    node: str | None  # None: network-attached (allNodes / nodeSelector)
    attributes: Mapping[str, AttributeValue] = field(default_factory=lambda: _EMPTY)
    capacity: Mapping[str, Fraction] = field(default_factory=lambda: _EMPTY)
    allow_multiple_allocations: bool = False
    request_policies: Mapping[str, RequestPolicy] = field(default_factory=lambda: _EMPTY)
    consumes_counters: tuple[CounterConsumption, ...] = ()
    taints: tuple[Taint, ...] = ()
    predicted: bool = False
    unknown: frozenset[str] = frozenset()
    slice_name: str = ""
    by_domain: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(
        default_factory=lambda: _EMPTY, init=False, repr=False)

    def __post_init__(self) -> None:
        attributes: dict[str, dict[str, Any]] = defaultdict(dict)
        for name, value in self.attributes.items():
            domain, slash, ident = name.rpartition("/")  # self.split, inline: 100,000s of calls
            attributes[domain if slash else self.driver][ident] = value
        capacity: dict[str, dict[str, Any]] = defaultdict(dict)
        for name, quantity in self.capacity.items():
            domain, slash, ident = name.rpartition("/")
            capacity[domain if slash else self.driver][ident] = quantity
        object.__setattr__(self, "by_domain", MappingProxyType(
            {"attributes": dict(attributes), "capacity": dict(capacity)}))

    @property
    def label(self) -> str:
        where = self.node if self.node is not None else "(network)"
        return f"{where}/{self.name}"

    def split(self, name: str) -> tuple[str, str]:
        """("gpu.nvidia.com", "productName") for "productName" or "gpu.nvidia.com/productName"."""
        domain, slash, ident = name.rpartition("/")
        return (domain, ident) if slash else (self.driver, name)

    def qualified(self, name: str) -> AttributeValue | None:
        """An attribute by fully qualified name, as the allocator's ``lookupAttribute``: the
        qualified key first, then the unqualified one when the domain is the driver's."""
        if name in self.attributes:
            return self.attributes[name]
        domain, _, ident = name.rpartition("/")
        if domain == self.driver:
            return self.attributes.get(ident)
        return None

    def cel_input(self) -> dict[str, Any]:
        """The device dict :class:`gpudra.dra.cel.Selector` evaluates."""
        return {"driver": self.driver, "allowMultipleAllocations": self.allow_multiple_allocations,
                "attributes": self.by_domain["attributes"],
                "capacity": self.by_domain["capacity"]}

    def device_type(self) -> str | None:
        """The NVIDIA driver's `type` attribute ("gpu", "mig", "vfio"), if published."""
        value = self.qualified(f"{self.driver}/type")
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class Inventory:
    """Devices plus what is known about the nodes (names, and labels where Node objects were
    given). `problems`: slices that could not be used; `notes`: what synthesis could not
    predict."""

    devices: tuple[Device, ...]
    counter_sets: Mapping[tuple[str, str, str], Mapping[str, Fraction]] = field(
        default_factory=lambda: _EMPTY)
    node_labels: Mapping[str, Mapping[str, str]] = field(  # node -> labels (Node objects)
        default_factory=lambda: _EMPTY)
    source: str = "file"  # "file" | "cluster" | "synthesised" | "mixed"
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def nodes(self) -> tuple[str, ...]:
        """Every node known: from devices and from Node objects, sorted."""
        names = {d.node for d in self.devices if d.node is not None} | set(self.node_labels)
        return tuple(sorted(names))

    def merged(self, other: Inventory) -> Inventory:
        """Both inventories' devices (e.g. real slices plus predictions for other nodes)."""
        labels = {**self.node_labels, **other.node_labels}
        source = self.source if self.source == other.source else "mixed"
        return Inventory(_ordered(self.devices + other.devices),
                         {**self.counter_sets, **other.counter_sets}, labels, source,
                         self.problems + other.problems, self.notes + other.notes)


# --- parsing ----------------------------------------------------------------------------------

def parse_inventory(objects: Iterable[Mapping[str, Any]], source: str = "file") -> Inventory:
    """An inventory from ResourceSlices (any resource.k8s.io version, also inside ``List`` /
    ``ResourceSliceList`` objects); Node objects contribute node names and labels; everything
    else is ignored."""
    reader = InventoryReader()
    for obj in objects:
        reader.add(obj)
    return reader.inventory(source)


@dataclass(frozen=True, slots=True)
class _SliceRead:
    """What a ResourceSlice gave, until its pool's newest generation is known."""

    name: str
    generation: int
    expected: int  # the slices its pool says it has (resourceSliceCount)
    counters: tuple[tuple[str, Mapping[str, Fraction]], ...]  # (counter set, counters)
    devices: list[Device]
    problems: list[str]


class InventoryReader:
    """parse_inventory one object at a time: each ResourceSlice becomes its devices as it
    arrives, so that its object can go while the rest are still read (the objects of 100,000
    devices are millions, and freeing them all at once costs what reading them does). Which
    devices count (a pool's newest generation, when it is complete) is settled at the end."""

    def __init__(self) -> None:
        self._problems: list[str] = []  # slices without a driver or pool, in input order
        self._pools: dict[tuple[str, str], list[_SliceRead]] = defaultdict(list)
        self._labels: dict[str, Mapping[str, str]] = {}
        self._devices = _DeviceReader()

    def add(self, obj: Mapping[str, Any]) -> None:
        for item, _ in expand_lists((obj,)):
            kind = item.get("kind")
            api_version = str(item.get("apiVersion", ""))
            if kind == "ResourceSlice" and api_version.startswith("resource.k8s.io/"):
                self._slice(item)
            elif kind == "Node" and item.get("apiVersion") == "v1":
                name = as_mapping(item.get("metadata")).get("name")
                if isinstance(name, str):
                    self._labels[name] = {str(k): str(v) for k, v in as_mapping(
                        as_mapping(item.get("metadata")).get("labels")).items()}

    def _slice(self, obj: Mapping[str, Any]) -> None:
        spec = as_mapping(obj.get("spec"))
        driver, pool = _pool_key(spec)
        if not driver or not pool:
            self._problems.append(f"ResourceSlice {_name(obj)}: no spec.driver or "
                                  "spec.pool.name; skipped")
            return
        counters = []
        for counter_set in spec.get("sharedCounters") or ():
            counter_set = as_mapping(counter_set)
            values = {str(k): _quantity(as_mapping(v).get("value"))
                      for k, v in as_mapping(counter_set.get("counters")).items()}
            counters.append((str(counter_set.get("name", "")), MappingProxyType(
                {k: v for k, v in values.items() if v is not None})))
        devices: list[Device] = []
        problems: list[str] = []
        self._devices.slice_devices(driver, pool, obj, spec, devices, problems)
        self._pools[(driver, pool)].append(_SliceRead(
            _name(obj), _generation(obj),
            _int(as_mapping(spec.get("pool")).get("resourceSliceCount"), default=1),
            tuple(counters), devices, problems))

    def inventory(self, source: str = "file") -> Inventory:
        problems = list(self._problems)
        devices: list[Device] = []
        counters: dict[tuple[str, str, str], Mapping[str, Fraction]] = {}
        for (driver, pool), members in sorted(self._pools.items()):
            newest = max(m.generation for m in members)
            current = [m for m in members if m.generation == newest]
            if len(current) < current[0].expected:
                problems.append(f"pool {driver}/{pool} is incomplete ({len(current)} of "
                                f"{plural(current[0].expected, 'slice')} of its newest "
                                "generation): the allocator allocates nothing from it until "
                                "the driver has published all of them")
                continue
            for read in sorted(current, key=lambda m: m.name):
                for counter_set, values in read.counters:
                    counters[(driver, pool, counter_set)] = values
                devices += read.devices
                problems += read.problems
        return Inventory(_ordered(devices), counters, self._labels, source, tuple(problems))


def _pool_key(spec: Mapping[str, Any]) -> tuple[str, str]:
    return (str(spec.get("driver", "")), str(as_mapping(spec.get("pool")).get("name", "")))


class _DeviceReader:
    """Turns one parse's slices into devices. A fleet repeats itself: the devices of a node
    (and of every node of a kind) publish the same attribute names and the same capacities,
    so how names split into domains, and parsed capacities with their CEL view, are worked
    out once per distinct shape and shared by the devices that have it (all immutable or
    never written to)."""

    def __init__(self) -> None:
        self._splits: dict[str, dict[str, tuple[str, str]]] = {}  # driver -> name -> split
        self._capacities: dict[tuple[Hashable, ...], tuple[Mapping[str, Fraction],
                                                     Mapping[str, Mapping[str, Fraction]]]] = {}

    def slice_devices(self, driver: str, pool: str, obj: Mapping[str, Any],
                      spec: Mapping[str, Any], devices: list[Device], problems: list[str]
                      ) -> None:
        slice_name = _name(obj)
        per_device = bool(spec.get("perDeviceNodeSelection"))
        node = None if per_device else _node_name(spec)
        for index, raw in enumerate(spec.get("devices") or ()):
            try:
                devices.append(self._device(driver, pool, slice_name, node, per_device,
                                            _mapping(raw)))
            except ValueError as exc:
                problems.append(f"ResourceSlice {slice_name} device #{index}: {exc}; skipped")

    def _device(self, driver: str, pool: str, slice_name: str, node: str | None,
                per_device: bool, raw: Mapping[str, Any]) -> Device:
        body = _mapping(raw.get("basic")) if "basic" in raw else raw  # v1beta1 / v1alpha3
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("no name")
        if per_device:
            node = _node_name(raw)
        attributes: dict[str, AttributeValue] = {}
        by_domain: dict[str, dict[str, Any]] = {}
        splits = self._splits.get(driver) or self._splits.setdefault(driver, {})
        for raw_key, value in _mapping(body.get("attributes")).items():
            key = str(raw_key)
            attributes[key] = parsed = _attribute(raw_key, value)
            domain, ident = splits.get(key) or self._split(driver, key)
            (by_domain.get(domain) or by_domain.setdefault(domain, {}))[ident] = parsed
        capacity, capacity_view, policies = self._capacity(driver, body.get("capacity"))
        consumes = tuple(
            CounterConsumption(str(_mapping(c).get("counterSet", "")), MappingProxyType(
                {str(k): q for k, v in _mapping(_mapping(c).get("counters")).items()
                 if (q := _quantity(_mapping(v).get("value"))) is not None}))
            for c in body.get("consumesCounters") or () if isinstance(c, Mapping))
        taints = tuple(Taint(str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
                       for t in body.get("taints") or () if isinstance(t, Mapping))
        return _record(driver, pool, name, node, attributes, capacity,
                       body.get("allowMultipleAllocations") is True, policies, consumes, taints,
                       slice_name, MappingProxyType({"attributes": by_domain,
                                                     "capacity": capacity_view}))

    def _split(self, driver: str, name: str) -> tuple[str, str]:
        """(domain, name) as Device.split; an unqualified name is the driver's."""
        splits = self._splits.setdefault(driver, {})
        found = splits.get(name)
        if found is None:
            domain, slash, ident = name.rpartition("/")
            found = splits[name] = (domain if slash else driver, ident)
        return found

    def _capacity(self, driver: str, raw: Any) -> tuple[
            Mapping[str, Fraction], Mapping[str, Mapping[str, Fraction]],
            Mapping[str, RequestPolicy]]:
        """Capacities, their CEL view and request policies; shared by every device that
        publishes the same plain quantities (policies are rare: those are parsed per device)."""
        entries = _mapping(raw)
        if not entries:
            return _EMPTY, {}, _EMPTY
        shape: tuple[Hashable, ...] | None = (driver, *(
            (key, value["value"]) for key, value in entries.items()
            if value.__class__ is dict and len(value) == 1 and "value" in value
            and value["value"].__class__ is str))
        if shape is not None and len(shape) != len(entries) + 1:
            shape = None
        found = self._capacities.get(shape) if shape is not None else None
        if found is not None:
            return found[0], found[1], _EMPTY
        capacity: dict[str, Fraction] = {}
        policies: dict[str, RequestPolicy] = {}
        for key, value in entries.items():
            if isinstance(value, Mapping):
                quantity = _quantity(value.get("value"))
                policy = value.get("requestPolicy")
                if isinstance(policy, Mapping):
                    policies[str(key)] = _policy(policy)
            else:  # v1alpha3: a plain quantity
                quantity = _quantity(value)
            if quantity is None:
                raise ValueError(f"capacity {key!r} is not a quantity")
            capacity[str(key)] = quantity
        view: dict[str, dict[str, Fraction]] = {}
        for key, quantity in capacity.items():
            domain, ident = self._split(driver, key)
            view.setdefault(domain, {})[ident] = quantity
        if shape is not None:
            self._capacities[shape] = (MappingProxyType(capacity), view)
        return MappingProxyType(capacity), view, MappingProxyType(policies) if policies else _EMPTY


def _record(driver: str, pool: str, name: str, node: str | None,
            attributes: dict[str, AttributeValue], capacity: Mapping[str, Fraction],
            multiple: bool, policies: Mapping[str, RequestPolicy],
            consumes: tuple[CounterConsumption, ...], taints: tuple[Taint, ...],
            slice_name: str, by_domain: Mapping[str, Any]) -> Device:
    """Device(...) for a parsed device whose CEL view was built along the way: the frozen
    dataclass's __init__ sets each of its 14 fields through object.__setattr__ and then
    rebuilds the view, which is most of the cost of 100,000 devices."""
    device = object.__new__(Device)
    device.__dict__.update(
        driver=driver, pool=pool, name=name, node=node,
        attributes=MappingProxyType(attributes), capacity=capacity,
        allow_multiple_allocations=multiple, request_policies=policies,
        consumes_counters=consumes, taints=taints, predicted=False, unknown=frozenset(),
        slice_name=slice_name, by_domain=by_domain)
    return device


def _node_name(placement: Mapping[str, Any]) -> str | None:
    node = placement.get("nodeName")
    return node if isinstance(node, str) and node else None


def _mapping(value: Any) -> Mapping[str, Any]:
    """as_mapping, with plain dicts (what files and the API give) decided without the ABC."""
    return value if value.__class__ is dict else as_mapping(value)


def _attribute(key: Any, value: Any) -> AttributeValue:
    if value.__class__ is dict and len(value) == 1:  # one typed value: the common case
        for kind, raw in value.items():
            if kind == "string":
                return str(raw)
            if kind == "version" and raw.__class__ is str:
                return _typed(key, kind, raw)
            if (kind == "int" and raw.__class__ is int) or (kind == "bool" and raw.__class__ is bool):
                return raw
    value = as_mapping(value)
    for kind in _ATTRIBUTE_KINDS:
        if kind in value:
            return _typed(key, kind, value[kind])
    for kind, single in _LIST_KINDS.items():
        if kind in value and isinstance(value[kind], list):
            return tuple(_typed(key, single, v) for v in value[kind])
    raise ValueError(f"attribute {key!r} has no int/bool/string/version value")


def _typed(key: Any, kind: str, value: Any) -> ScalarValue:
    if kind == "version":
        try:
            return _version(str(value))
        except ValueError:
            raise ValueError(f"attribute {key!r}: {value!r} is not a semantic version") from None
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"attribute {key!r}: {value!r} is not an int")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"attribute {key!r}: {value!r} is not a bool")
        return value
    return str(value)


def _policy(policy: Mapping[str, Any]) -> RequestPolicy:
    valid_range = policy.get("validRange")
    rng = as_mapping(valid_range)
    return RequestPolicy(
        default=_quantity(policy.get("default")),
        valid_values=tuple(q for v in policy.get("validValues") or ()
                           if (q := _quantity(v)) is not None),
        minimum=_quantity(rng.get("min")) if isinstance(valid_range, Mapping) else None,
        maximum=_quantity(rng.get("max")),
        step=_quantity(rng.get("step")))


def _quantity(value: Any) -> Fraction | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(value)
    return _quantity_text(str(value).strip())


# A fleet publishes the same few versions and sizes on every device: parse each text once
# (both results are immutable, so devices can share them).
@functools.lru_cache(maxsize=4096)
def _version(text: str) -> Version:
    return Version.parse(text)


@functools.lru_cache(maxsize=4096)
def _quantity_text(text: str) -> Fraction | None:
    return parse_quantity(text)


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _generation(obj: Mapping[str, Any]) -> int:
    return _int(as_mapping(as_mapping(obj.get("spec")).get("pool")).get("generation"))


def _name(obj: Mapping[str, Any]) -> str:
    return str(as_mapping(obj.get("metadata")).get("name", ""))


def _ordered(devices: Iterable[Device]) -> tuple[Device, ...]:
    """The allocator's search order: pools by (driver, pool), slices by name, then as listed
    (sorted() is stable, so the order inside a slice is kept)."""
    return tuple(sorted(devices, key=lambda d: (d.driver, d.pool, d.slice_name)))
