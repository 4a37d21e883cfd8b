"""Which devices each request can use: DeviceClass + request selectors, evaluated as the
scheduler does, each distinct expression compiled once and evaluated at most once per device.

Semantics mirror the structured allocator (kubernetes/dynamic-resource-allocation @
kubernetes-1.36.2, ``structured/internal/incubating/allocator_incubating.go``, ``isSelectable``
and ``selectorsMatch``):

* the class selectors run first, then the request's, each list in order; the first ``false``
  ends the check, so later selectors never run on that device (and cannot fail on it);
* a selector that does not compile is an error for every device (the allocator wraps it as
  ``claim …: selector #i: CEL compile error``; the API server refuses such a claim at creation);
* a run-time error (``no such key``) makes ``Allocate`` return an error. The scheduler's DRA
  ``Filter`` turns that into an error status (kubernetes/kubernetes
  ``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go``: "This should only
  fail if there is something wrong with the claim or class. Return an error to abort scheduling
  of it."), so the pod is retried with back-off and stays Pending. Whether a scheduling attempt
  reaches the failing device depends on node and device order and on what is in use; gpudra
  therefore reports any reachable failing device as making the request fail.

Caching: the results of one expression depend only on the values it reads. When the
:mod:`gpudra.dra.cel_lint` reader shows that an expression touches ``device`` only through
``device.driver``, ``device.allowMultipleAllocations`` and literal
``device.attributes[D].N`` / ``device.capacity[D].N`` references (not as a whole map, not in
a comprehension, not through ``cel.bind``), the result is memoised on the tuple of those values,
so 10,000 GPUs of 8 kinds cost a handful of CEL evaluations per expression. Other expressions
are evaluated per device on an activation built once per device. Either way every (expression,
device) result is computed once and shared by all requests and workloads.

Predicted devices (:mod:`gpudra.plan.synthesis`) carry ``unknown`` names: an expression that
reads one of them yields :attr:`MatchResult.UNKNOWN` on that device instead of a result. A
selector gpudra's engine cannot check or evaluate (:class:`~gpudra.dra.cel.CannotEvaluate`)
is :attr:`MatchResult.UNKNOWN` on every device, and a request using it is reported as one gpudra
cannot evaluate (not as a compile error: Kubernetes accepts it).
"""

from __future__ import annotations

import enum
import re
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from gpudra.dra.cel import PreparedDevice, Selector, SelectorEngine, default_engine
from gpudra.dra.cel_errors import CannotEvaluate, CelError, CelEvaluationError
from gpudra.dra.cel_values import Version
from gpudra.k8s.objects import plural
from gpudra.plan.inventory import Device
from gpudra.plan.selector_hints import unknown_names
from gpudra.plan.selector_text import (
    apply_chain,
    format_quantity,
    parse_comparison,
    projection,
    split_conjunction,
    string_chain,
    term_label,
)

_Key = tuple[Hashable, ...]  # a memo's or a cache's key: what the answer depends on
_MISSING = ("missing",)
_ABSENT = object()  # no published value equals it (a list attribute can equal _MISSING)
_MEMORY_SLICE = re.compile(r"memorySlice\d+")


class MatchResult(enum.Enum):
    """What a selector gives on one device (a verdict's outcome is report.outcomes.Outcome)."""

    MATCH = "match"
    NO_MATCH = "no match"
    ERROR = "error"
    UNKNOWN = "unknown"  # a predicted device lacks a value the expression reads


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a selector cannot be used: a compile error (no device) or a run-time error."""

    source: str  # "class gpu.nvidia.com selector #0" / "request selector #1"
    expression: str
    message: str  # "1:23: undeclared reference …" or "no such key: profile"
    device: str | None = None  # node/device of the first failing device (run time)
    devices: int = 0  # how many devices fail (run time)
    checkable: bool = True  # False: Kubernetes accepts it, gpudra cannot check or evaluate it

    @property
    def compile_text(self) -> str:
        """The failure of a selector as a whole (no device), in words for a report."""
        if self.checkable:
            return f"does not compile: {self.message}"
        return f"cannot be evaluated by gpudra: {self.message}"


@dataclass(frozen=True)
class Compiled:
    """A distinct expression, compiled once. `references` None: results are not memoisable."""

    expression: str
    selector: Selector | None
    error: CelError | CannotEvaluate | None
    references: tuple[tuple[str, str, str], ...] | None  # (kind, domain, name)
    reads_driver: bool = False
    reads_multiple: bool = False


@dataclass(frozen=True)
class SetResult:
    """The devices one (class, selectors) combination selects."""

    matching: tuple[int, ...]  # indices into the inventory's devices
    class_matching: int  # devices the class alone selects
    compile_errors: tuple[Failure, ...] = ()
    runtime_errors: tuple[Failure, ...] = ()
    unknown: tuple[int, ...] = ()
    # `matching` as the matcher's groups of equal devices make it up (each in index order);
    # None when it judged device by device. Resolving splits a group per node once, not each
    # selection that contains it.
    parts: tuple[tuple[int, ...], ...] | None = field(default=None, compare=False, repr=False)

    @property
    def usable(self) -> bool:
        return not self.compile_errors and not self.runtime_errors


@dataclass
class Stats:
    evaluations: int = 0  # CEL programs actually run
    results: int = 0  # (expression, device) results produced (memo hits included)
    compiled: int = 0  # distinct expressions compiled


@dataclass(frozen=True, slots=True)
class TermStat:
    """How many candidate devices one top-level ``&&`` term (or class selector) lets through."""

    label: str
    passed: int
    of: int
    detail: str | None = None
    unknown: int = 0

    def message(self) -> str:
        text = f"{self.label}: {self.passed} of {plural(self.of, 'device')} match"
        if self.unknown:
            text += f" ({self.unknown} predicted devices unknown)"
        return text + (f"; {self.detail}" if self.detail else "")


class Matcher:
    """Evaluates selectors over one inventory. Not thread-safe; one per plan run.

    With `memoise` (the default), devices that agree on every value the precompiled
    expressions read form one group, evaluated once through a representative; expressions
    compiled later that read other values fall back to per-device evaluation (memoised on the
    values they read). Without `memoise` every (expression, device) pair runs CEL."""

    def __init__(self, devices: Sequence[Device], engine: SelectorEngine | None = None,
                 memoise: bool = True) -> None:
        self.devices = tuple(devices)
        self.device_nodes = tuple(d.node for d in self.devices)  # None: network-attached
        self.engine = engine or default_engine()
        self.memoise = memoise
        self.stats = Stats()
        self._compiled: dict[str, Compiled] = {}
        self._results: dict[str, dict[int, Any]] = {}
        self._memo: dict[str, dict[_Key, Any]] = {}
        self._prepared: dict[int, PreparedDevice] = {}
        self._domains: set[tuple[str, str]] = set()
        self._sets: dict[_Key, SetResult] = {}
        self._explained: dict[_Key, tuple[TermStat, ...]] = {}
        self._hints: dict[_Key, tuple[str, ...]] = {}
        self._inputs: dict[int, dict[str, Any]] = {}
        self._singletons: list[tuple[int, tuple[int, ...]]] = [
            (i, (i,)) for i in range(len(self.devices))]
        self._groups: list[tuple[int, tuple[int, ...]]] | None = None
        self._grouped: frozenset[tuple[str, str, str]] = frozenset()
        self._grouped_flags = (False, False)

    # --- compile ----------------------------------------------------------------------------

    def compile(self, expression: str) -> Compiled:
        found = self._compiled.get(expression)
        if found is not None:
            return found
        self.stats.compiled += 1
        try:
            selector = self.engine.compile(expression)
            error = None
        except (CelError, CannotEvaluate) as exc:
            selector, error = None, exc
        references, driver, multiple = projection(expression) if selector else (None, False, False)
        compiled = Compiled(expression, selector, error, references, driver, multiple)
        self._compiled[expression] = compiled
        if selector is not None:
            if self._prepared and not set(selector.domains) <= self._domains:
                self._prepared.clear()  # prepared activations lack a domain this one names
            self._domains.update(selector.domains)
        return compiled

    def precompile(self, expressions: Iterable[str]) -> None:
        """Compile everything first: the groups of equal devices are built from what these
        expressions read, and each device's activation is built once."""
        for expression in expressions:
            self.compile(expression)
        self._build_groups()

    def _build_groups(self) -> None:
        if not self.memoise:
            return
        refs: set[tuple[str, str, str]] = set()
        driver = multiple = False
        for compiled in self._compiled.values():
            if compiled.references is not None:
                refs.update(compiled.references)
                driver |= compiled.reads_driver
                multiple |= compiled.reads_multiple
        groups: dict[_Key, list[int]] = {}
        for index, signature in enumerate(_signatures(self.devices, refs, driver, multiple)):
            groups.setdefault(signature, []).append(index)
        self._groups = [(members[0], tuple(members)) for members in groups.values()]
        self._grouped = frozenset(refs)
        self._grouped_flags = (driver, multiple)

    def units(self, expressions: Iterable[str]) -> list[tuple[int, tuple[int, ...]]]:
        """(representative, members) covering every device: the groups when every expression
        reads only grouped values, else one unit per device."""
        if self._groups is None:
            return self._singletons
        for expression in expressions:
            compiled = self.compile(expression)
            if compiled.selector is None:
                continue
            if (compiled.references is None or not self._grouped.issuperset(compiled.references)
                    or (compiled.reads_driver and not self._grouped_flags[0])
                    or (compiled.reads_multiple and not self._grouped_flags[1])):
                return self._singletons
        return self._groups

    # --- evaluate ---------------------------------------------------------------------------

    def result(self, expression: str, index: int, weight: int = 1) -> Any:
        """True, False, :attr:`MatchResult.UNKNOWN` or a run-time error message (str) for the
        device at `index` (and the `weight` devices it stands for, for the statistics)."""
        cache = self._results.setdefault(expression, {})
        if index in cache:
            return cache[index]
        compiled = self.compile(expression)
        if isinstance(compiled.error, CannotEvaluate):
            value: Any = MatchResult.UNKNOWN
        elif compiled.error is not None:
            value = f"does not compile: {compiled.error}"
        else:
            value = self._evaluate(compiled, index)
        cache[index] = value
        self.stats.results += weight
        return value

    def _evaluate(self, compiled: Compiled, index: int) -> Any:
        device = self.devices[index]
        if compiled.references is not None:
            if device.predicted and _reads_unknown(device, compiled.references):
                return MatchResult.UNKNOWN
            if self.memoise:
                key = _key(device, compiled)
                memo = self._memo.setdefault(compiled.expression, {})
                if key not in memo:
                    memo[key] = self._run(compiled, index)
                return memo[key]
        value = self._run(compiled, index)
        if isinstance(value, str) and device.predicted and device.unknown:
            return MatchResult.UNKNOWN  # cannot tell a real failure from a missing prediction
        return value

    def _run(self, compiled: Compiled, index: int) -> Any:
        assert compiled.selector is not None
        self.stats.evaluations += 1
        prepared = self._prepared.get(index)
        if prepared is None:
            prepared = self.engine.prepare(self.device_input(index), self._domains)
            self._prepared[index] = prepared
        try:
            return compiled.selector.evaluate_prepared(prepared)
        except CelEvaluationError as exc:
            return str(exc)

    def device_input(self, index: int) -> dict[str, Any]:
        found = self._inputs.get(index)
        if found is None:
            found = self.devices[index].cel_input()
            self._inputs[index] = found
        return found

    # --- selector sets ----------------------------------------------------------------------

    def select(self, class_name: str, class_selectors: Sequence[str],
               request_selectors: Sequence[str]) -> SetResult:
        """Devices selected by a class and a request's selectors, with every failure."""
        key = (class_name, tuple(class_selectors), tuple(request_selectors))
        found = self._sets.get(key)
        if found is not None:
            return found
        steps = [(f"class {class_name} selector #{i}", e) for i, e in enumerate(class_selectors)]
        steps += [(f"request selector #{i}", e) for i, e in enumerate(request_selectors)]
        compile_errors = tuple(
            Failure(source, expression, str(compiled.error),
                    checkable=not isinstance(compiled.error, CannotEvaluate))
            for source, expression in steps
            if (compiled := self.compile(expression)).error is not None)
        if compile_errors:
            result = SetResult((), 0, compile_errors)
            self._sets[key] = result
            return result
        matching: list[int] = []
        unknown: list[int] = []
        failures: dict[tuple[str, str, str], list[int]] = {}
        class_steps, request_steps = steps[:len(class_selectors)], steps[len(class_selectors):]
        class_count = 0
        units = self.units(e for _, e in steps)
        parts: list[tuple[int, ...]] | None = None if units is self._singletons else []
        for rep, members in units:
            outcome = self._steps(class_steps, rep, members, failures)
            if outcome is MatchResult.MATCH:
                class_count += len(members)
                outcome = self._steps(request_steps, rep, members, failures)
            if outcome is MatchResult.MATCH:
                matching.extend(members)
                if parts is not None:
                    parts.append(members)
            elif outcome is MatchResult.UNKNOWN:
                unknown.extend(members)
        runtime = tuple(
            Failure(source, expression, message, self.devices[min(ids)].label, len(ids))
            for (source, expression, message), ids in failures.items())
        result = SetResult(tuple(sorted(matching)), class_count, (), runtime,
                           tuple(sorted(unknown)), None if parts is None else tuple(parts))
        self._sets[key] = result
        return result

    def _steps(self, steps: Sequence[tuple[str, str]], rep: int, members: Sequence[int],
               failures: dict[tuple[str, str, str], list[int]]) -> MatchResult:
        """Selectors in order on one unit; the first that is not true decides."""
        for source, expression in steps:
            value = self.result(expression, rep, len(members))
            if value is True:
                continue
            if value is False:
                return MatchResult.NO_MATCH
            if value is MatchResult.UNKNOWN:
                return MatchResult.UNKNOWN
            failures.setdefault((source, expression, value), []).extend(members)
            return MatchResult.ERROR
        return MatchResult.MATCH

    # --- explanations -----------------------------------------------------------------------

    def explain(self, class_name: str, class_selectors: Sequence[str],
                request_selectors: Sequence[str]) -> tuple[TermStat, ...]:
        """Per class selector and per top-level ``&&`` term of each request selector: how
        many devices pass it (each term on its own, among the devices the class selects),
        with the largest/smallest value for capacity and version comparisons and the values
        present for equality tests."""
        key = (class_name, tuple(class_selectors), tuple(request_selectors))
        found = self._explained.get(key)
        if found is not None:
            return found
        terms = [t for e in request_selectors for t in split_conjunction(e)
                 if self.compile(t).error is None]
        units = self.units([*class_selectors, *request_selectors, *terms])
        stats: list[TermStat] = []
        base = units
        for expression in class_selectors:
            passed = [u for u in base if self.result(expression, u[0], len(u[1])) is True]
            stats.append(TermStat(f"class {class_name}", _count(passed), _count(base)))
            base = passed
        together = base
        for term in terms if base else ():
            values = [(u, self.result(term, u[0], len(u[1]))) for u in base]
            matched = sum(len(u[1]) for u, v in values if v is True)
            unknown = sum(len(u[1]) for u, v in values if v is MatchResult.UNKNOWN)
            detail = self._detail(term, base) if unknown < _count(base) else None
            stats.append(TermStat(term_label(term), matched, _count(base), detail, unknown))
            together = [u for u in together if self.result(term, u[0], len(u[1])) is True]
        if len(terms) > 1 and not together and all(s.passed for s in stats):
            stats.append(TermStat("all terms together", 0, _count(base),
                                  "no device satisfies them at once"))
        found = tuple(stats)
        self._explained[key] = found
        return found

    def _detail(self, term: str, base: Sequence[tuple[int, tuple[int, ...]]]) -> str | None:
        comparison = parse_comparison(term)
        if comparison is None:
            return None
        kind, domain, name, op, _ = comparison
        chain = string_chain(term) if op in ("==", "in") else ""
        present: Counter[Any] = Counter()
        for rep, members in base:
            value = _value(self.devices[rep], kind, domain, name)
            if chain and isinstance(value, str):
                value = apply_chain(chain, value)  # what the term compares, not the raw value
            if value is not None:
                present[value] += len(members)
        if not present:
            where = "capacity" if kind == "capacity" else "attribute"
            return f"none of them has the {where} {name}"
        if op in (">", ">="):
            return f"the largest has {_show(max(present, key=_order))}"
        if op in ("<", "<="):
            return f"the smallest has {_show(min(present, key=_order))}"
        counts: Counter[str] = Counter()
        for value, n in present.items():
            counts[_show(value)] += n
        shown = ", ".join(f"{v} ({n})" for v, n in counts.most_common(5))
        more = f" and {len(counts) - 5} more" if len(counts) > 5 else ""
        return f"values present: {shown}{more}"

    # --- hints ------------------------------------------------------------------------------

    def hints(self, expression: str, class_name: str,
              class_selectors: Sequence[str]) -> tuple[str, ...]:
        """Names the expression reads that the NVIDIA catalogue (for the class's device type)
        or the devices the class selects do not have, with "did you mean" suggestions."""
        key = (expression, class_name, tuple(class_selectors))
        found = self._hints.get(key)
        if found is None:
            units = [u for u in self.units(class_selectors)
                     if all(self.result(e, u[0], len(u[1])) is True for e in class_selectors)]
            found = unknown_names(expression, class_name, self.devices, units)
            self._hints[key] = found
        return found


def _count(units: Sequence[tuple[int, tuple[int, ...]]]) -> int:
    return sum(len(members) for _, members in units)


# --- helpers --------------------------------------------------------------------------------

def _typed(value: Any) -> Any:
    """Memo keys must not conflate True with 1 (equal and same hash in Python)."""
    return (type(value).__name__, value)


def _key(device: Device, compiled: Compiled) -> _Key:
    view = device.by_domain
    parts: list[Any] = []
    for kind, domain, name in compiled.references or ():
        names = view["attributes" if kind == "attribute" else "capacity"].get(domain)
        parts.append(_typed(names[name]) if names is not None and name in names else _MISSING)
    if compiled.reads_driver:
        parts.append(device.driver)
    if compiled.reads_multiple:
        parts.append(device.allow_multiple_allocations)
    return tuple(parts)


def _signatures(devices: Sequence[Device], references: Iterable[tuple[str, str, str]],
                driver: bool, multiple: bool) -> Iterator[_Key]:
    """Per device, what decides its group: equal exactly when _key (over every reference),
    `predicted` and `unknown` are; the names of one domain are read by one map()."""
    names: dict[tuple[str, str], list[str]] = {}
    for kind, domain, name in sorted(references):
        names.setdefault(("attributes" if kind == "attribute" else "capacity", domain),
                         []).append(name)
    reads = [(section, domain, tuple(n), (_ABSENT,) * len(n))
             for (section, domain), n in names.items()]
    for device in devices:
        view = device.by_domain
        values: list[Any] = []
        for section, domain, wanted, missing in reads:
            found = view[section].get(domain)
            values += map(found.get, wanted, missing) if found is not None else missing
        yield (tuple(values), tuple(map(type, values)),  # True and 1 are equal; types are not
               device.driver if driver else None,
               device.allow_multiple_allocations if multiple else None,
               device.predicted, device.unknown)


def _reads_unknown(device: Device, references: Iterable[tuple[str, str, str]]) -> bool:
    for _, domain, name in references:
        qualified = f"{domain}/{name}"
        if qualified in device.unknown:
            return True
        if _MEMORY_SLICE.fullmatch(name) and f"{domain}/memorySlice*" in device.unknown:
            return True
    return False


def _value(device: Device, kind: str, domain: str, name: str) -> Any:
    names = device.by_domain["attributes" if kind == "attribute" else "capacity"].get(domain)
    return names.get(name) if names is not None else None


def _order(value: Any) -> Any:
    if isinstance(value, Version):
        return (value.major, value.minor, value.patch)
    return value


def _show(value: Any) -> str:
    if isinstance(value, Fraction):
        return format_quantity(value)
    return str(value)
