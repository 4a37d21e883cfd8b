"""CEL for DRA device selectors: compile (validate) and evaluate against a device dict.

The engine is cel-expr-python (the CEL C++ implementation; docs/library-notes §1). It has no
opaque types that Python can produce, so Kubernetes' ``Quantity`` and ``Semver`` are handled in
two environments built from the same function list:

* a **check** environment declares them as abstract types ``kubernetes.Quantity`` /
  ``kubernetes.Semver``. Every expression is type-checked there, so CEL rejects what Kubernetes
  rejects, with the same wording: ``quantity("1Gi") >= quantity("1Mi")`` →
  ``found no matching overload for '_>=_' applied to '(kubernetes.Quantity, kubernetes.Quantity)'``;
* a **runtime** environment declares them as ``map(string, dyn)`` and represents a value as a
  tagged map (``{"__quantity__": "<num>/<den>"}``, ``{"__semver__": "1.2.3[-pre]"}``). Member
  functions are one overload each, dispatched in Python on the tag. Quantities are exact
  :class:`fractions.Fraction` values (``gpudra.k8s.quantity.parse_quantity``); versions compare as
  semver 2.0 (major.minor.patch numerically, then pre-release), as blang/semver does in
  Kubernetes.

Kubernetes declares the device as an object type (``kubernetes.DRADevice``: ``driver`` a string,
``attributes`` maps of unknown-typed values, ``capacity`` maps of ``Quantity``,
``allowMultipleAllocations`` a bool). cel-expr-python cannot declare such a type, so both
environments declare ``device`` as ``map(string, dyn)`` plus one typed variable per field, and
expressions are compiled with ``device.driver`` rewritten to ``device_driver`` (same length, so
positions hold; comprehensions over ``device.attributes[d]`` work). ``capacity >= 16`` and a
selector that is a capacity, not a bool, are then refused as Kubernetes refuses them, and
result types are named in cel-go's words (``map(string, kubernetes.Quantity)``). An undefined
field of ``device`` (``device.nosuch``) is found from the token stream of
``gpudra.dra.cel_lint``.

Environment: that of one Kubernetes release (:class:`SelectorEngine` takes a
:class:`~gpudra.dra.versions.TargetVersion`; what each release offers is
:mod:`gpudra.dra.cel_env`, read at the Kubernetes source and compared with the oracle):
variable ``device`` (``allowMultipleAllocations`` from 1.34 with DRAConsumableCapacity);
``quantity``, ``isQuantity``, ``semver`` and ``isSemver`` (the ``normalize`` bool from 1.34),
``sign(q)``; members ``compareTo``, ``isGreaterThan``, ``isLessThan``, ``major``, ``minor``,
``patch``, ``asInteger``, ``asApproximateFloat``, ``isInteger``, ``add``, ``sub``; optional
values; the strings extension at version 2, as Kubernetes has it (no ``reverse()``, no
``quote()`` member; ``strings.quote``, ``format``, ``join``); ``cel.bind``; Kubernetes' lists,
regex, URL, IP, CIDR, format and authorizer libraries and cel-go's sets; from 1.35 cel-go's
lists extension. Selectors that use a two-variable comprehension, ``sortBy`` or ``string(ip)``
cannot be checked (:class:`CannotEvaluate`); URL, IP, CIDR and format functions compile but
cannot be evaluated. What Kubernetes refuses after type-checking (mixed-type literals, cost
overflows) is read from the checked expression (:mod:`gpudra.dra.cel_checked`).
Run-time errors are worded as the allocator words them
(:func:`runtime_message`; semver parse errors as blang/semver), and ``==``/``in`` between a
version attribute and another type fail as in Kubernetes (:mod:`gpudra.dra.cel_equality`).
What still differs is listed in tests/oracle/test_selectors_oracle.py (``KNOWN``) and
docs/facts.md.

**Without cel-expr-python** (a platform it has no wheel for),
:func:`compile_selector` falls back to a minimal hand-written check on the cel_lint tokenizer:
unterminated strings, unknown characters, unbalanced brackets, a dangling operator, two operands
in a row, relational operators on quantities, and undefined ``device`` fields. It accepts much
that CEL rejects (unknown functions, type errors). Evaluation raises :class:`UnsupportedError`.

This module is the public side (the engine, selectors, devices); its parts: the values and
their functions (:mod:`gpudra.dra.cel_values`), the two environments
(:mod:`gpudra.dra.cel_build`), the checks the engine cannot make (:mod:`gpudra.dra.cel_static`)
and the errors (:mod:`gpudra.dra.cel_errors`, re-exported here).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from gpudra.dra import cel_checked, cel_lint
from gpudra.dra.cel_build import cel_engine, engine_available, new_env  # noqa: F401 (re-exported)
from gpudra.dra.cel_env import LIBRARY, CelEnvironment
from gpudra.dra.cel_equality import kubernetes_equality
from gpudra.dra.cel_errors import CannotEvaluate, CelError, CelEvaluationError, UnsupportedError
from gpudra.dra.cel_lint import Kind, Token
from gpudra.dra.cel_static import (
    cannot_check,
    fallback_check,
    kubernetes_wording,
    named_fields,
    position_of,
    refused_macro,
    split_types,
    static_checks,
)
from gpudra.dra.cel_values import Version, quantity_value, tag_of, version_value
from gpudra.dra.versions import DEFAULT, TargetVersion

MAX_EXPRESSION_LENGTH = 10 * 1024  # resourceapi.CELSelectorExpressionMaxLength

_LOCATION = re.compile(r"<input>:(\d+):(\d+): ([^\n]*)")


# --- environments --------------------------------------------------------------------------


def _typed_fields(expression: str, tokens: list[Token], fields: frozenset[str]) -> str:
    """`device.driver` -> `device_driver` (and attributes, capacity, allowMultipleAllocations)
    wherever the three tokens touch, for both environments, where those names have the types
    Kubernetes gives the fields of its ``kubernetes.DRADevice`` object: a string, maps of
    unknown-typed attributes and of Quantities, a bool. Same length, so positions in messages
    stay right. (A user's own identifier ``device_driver`` would be undeclared in Kubernetes
    and is accepted here: the one price of the trick.)"""
    chars = list(expression)
    for i in range(len(tokens) - 2):
        device, dot, name = tokens[i], tokens[i + 1], tokens[i + 2]
        if (device.kind is Kind.IDENT and device.text == "device" and dot.text == "."
                and name.kind is Kind.IDENT and name.text in fields
                and dot.offset == device.offset + len("device") and name.offset == dot.offset + 1
                and not (i > 0 and tokens[i - 1].text in (".", "?."))):
            chars[dot.offset] = "_"
    return "".join(chars)


def _type_name(name: str) -> str:
    """cel-expr-python's type name in cel-go's wording, as Kubernetes prints it: ``MAP<STRING,
    DYN>`` -> ``map(string, google.protobuf.Any)`` (the only dyn values are attributes, which
    Kubernetes types as Any)."""
    found = re.fullmatch(r"(MAP|LIST|TYPE)<(.*)>", name)
    if found:
        depth, parts, start = 0, [], 0
        inner = found.group(2)
        for i, char in enumerate(inner):
            depth += char == "<"
            depth -= char == ">"
            if char == "," and depth == 0:
                parts.append(inner[start:i].strip())
                start = i + 1
        parts.append(inner[start:].strip())
        return f"{found.group(1).lower()}({', '.join(_type_name(p) for p in parts)})"
    named = {"NULL": "null_type", "DYN": "google.protobuf.Any",
             "DURATION": "google.protobuf.Duration", "TIMESTAMP": "google.protobuf.Timestamp"}
    return named.get(name, name if "." in name else name.lower())


def _engine_error(exc: Exception, expression: str) -> CelError:
    text = str(exc)
    text = re.sub(r"^[A-Z_]+: ", "", text)
    text = re.sub(r" \[[A-Z_]+\]$", "", text)
    found = _LOCATION.search(text)
    if found:
        return CelError(found.group(3), int(found.group(1)), int(found.group(2)), text)
    return CelError(text.strip() or f"cannot compile {expression!r}", 1, 1, text)


# --- public API ----------------------------------------------------------------------------

@dataclass(frozen=True)
class PreparedDevice:
    """A device converted to the engine's runtime form once, to be evaluated by many selectors
    (building the activation costs about as much as evaluating a string comparison)."""

    activation: Any


@dataclass(frozen=True)
class Selector:
    """A compiled selector; :meth:`evaluate` runs it on one device."""

    expression: str
    _program: Any
    _env: Any
    _domains: tuple[tuple[str, str], ...]  # (kind, domain) literally referenced

    def evaluate(self, device: Mapping[str, Any]) -> bool:
        """True/False for `device`; raises :class:`CelEvaluationError` when CEL yields an error
        (``no such key``, a bad ``quantity()`` argument, a non-bool result).

        `device` = ``{"driver": str, "attributes": {domain: {name: value}}, "capacity":
        {domain: {name: quantity}}}``; attribute values are str, int, bool or
        :class:`Version`; capacity values are quantity strings (``"80Gi"``), ints or Fractions.
        """
        data = _device_data(device, self._domains)
        return self._result(self._program.eval(self._env.Activation(_variables(data))))

    @property
    def domains(self) -> tuple[tuple[str, str], ...]:
        """(kind, domain) pairs the expression names literally: ("attribute", "gpu.nvidia.com")."""
        return self._domains

    def evaluate_prepared(self, device: PreparedDevice) -> bool:
        """Like :meth:`evaluate`, on a device converted once by :meth:`SelectorEngine.prepare`
        (which must have been given at least this selector's :attr:`domains`)."""
        return self._result(self._program.eval(device.activation))

    @staticmethod
    def _result(value: Any) -> bool:
        kind = value.type()
        if kind == cel_engine.Type.BOOL:
            return bool(value.value())
        if kind == cel_engine.Type.ERROR:
            raise CelEvaluationError(runtime_message(str(value.value())))
        name = _type_name(kind.name())
        raise CelEvaluationError(f"CEL result of type {name} could not be converted to bool: "
                                 f"unsupported native conversion from {name} to 'bool'")


_STATUS = re.compile(r"^[A-Z_]+: ")
_KEY_NOT_FOUND = re.compile(r'Key not found in map\s*:\s*"?([^"]*)"?')


_NO_OVERLOAD = re.compile(r"^No matching overloads found : (?:\((?P<receiver>[^)]*)\)\.)?"
                          r"(?P<name>[^(]+)(?:\((?P<args>.*)\))?$")
_CEL_GO_TYPE = {"int64": "int", "uint64": "uint",
                # at run time the only map a function meets where it wants another type is a
                # version attribute: quantities are typed at compile time
                "map": "kubernetes.Semver"}
# Functions cel-go declares with cel.Function (Kubernetes' libraries, its extensions): a wrong
# runtime type is "no such overload: f(types)". The standard library and operators say
# "no such overload", or "no such overload: f" when the value lacks the operator's trait.
_DECLARED = frozenset(f.name for f in LIBRARY) | frozenset({
    "charAt", "indexOf", "lastIndexOf", "lowerAscii", "replace", "split", "substring", "trim",
    "upperAscii", "join", "format", "strings.quote", "quantity", "isQuantity", "semver",
    "isSemver", "sign", "asInteger", "isInteger", "asApproximateFloat", "add", "sub",
    "compareTo", "isGreaterThan", "isLessThan", "major", "minor", "patch"})
_SIZED = frozenset({"string", "bytes", "list", "map"})
# Exceptions seen in the oracle: regex find/findAll say "no such overload", the lists
# extension's flatten names the receiver cel-go's way, sort names only itself.
_UNTYPED = frozenset({"find", "findAll"})
_RECEIVER_FORM = frozenset({"flatten"})
_NAMED_ONLY = frozenset({"sort"})


def runtime_message(engine_message: str) -> str:
    """A run-time error in the words of Kubernetes' allocator (cel-go): ``no such key:
    profile``, ``no such overload: major(int)`` and the libraries' own messages (semver parse
    errors as blang/semver words them); cel-cpp's status prefix (``OUT_OF_RANGE: ``) dropped."""
    found = _KEY_NOT_FOUND.search(engine_message)
    if found:
        return f"no such key: {found.group(1)}"
    text = _STATUS.sub("", engine_message)
    call = _NO_OVERLOAD.match(text)
    if call is None:
        return "no such overload" if text.startswith("No matching overloads found") else text
    name = call.group("name").strip()
    types = [_CEL_GO_TYPE.get(t, t) for t in split_types(call.group("args") or "")]
    if call.group("receiver") is not None:
        types.insert(0, _CEL_GO_TYPE.get(call.group("receiver"), call.group("receiver")))
    if name in _NAMED_ONLY:
        return f"no such overload: {name}"
    if name in _RECEIVER_FORM and types:
        return f"no such overload: {types[0]}.{name}({', '.join(types[1:])})"
    if name in _DECLARED and name not in _UNTYPED:
        return f"no such overload: {name}({', '.join(types)})"
    if (name.startswith("_") and name.endswith("_") and len(types) == 2
            and types[0] == "kubernetes.Semver") or (name == "size" and types
                                                      and types[0] not in _SIZED):
        return f"no such overload: {name}"  # the value lacks the operator's trait
    return "no such overload"


# Distinct selectors one engine keeps compiled: far more than any cluster's templates hold, and
# a bound on what a long run of varied inputs can make it keep.
MAX_KEPT_SELECTORS = 4096


class SelectorEngine:
    """Compiles DRA selectors in the DRA CEL environment of one Kubernetes release (as far as
    it is emulated here; see the module docstring and gpudra.dra.cel_env) and evaluates them
    against device dicts. `consumable_capacity`: the DRAConsumableCapacity gate, when not the
    release's default."""

    def __init__(self, target: TargetVersion = DEFAULT,
                 consumable_capacity: bool | None = None) -> None:
        self.environment = CelEnvironment(target, consumable_capacity)
        self._fields = self.environment.device_fields
        self._check_env = None
        self._runtime_env = None
        if cel_engine is not None:
            T = cel_engine.Type
            self._check_env = new_env(T.AbstractType("kubernetes.Quantity"),
                                       T.AbstractType("kubernetes.Semver"), self.environment)
            runtime = T.Map(T.STRING, T.DYN)
            self._runtime_env = new_env(runtime, runtime, self.environment)
        # Compiled selectors by expression (see compile), at most MAX_KEPT_SELECTORS
        self._selectors: dict[str, Selector] = {}

    @property
    def target(self) -> TargetVersion:
        return self.environment.target

    @property
    def can_evaluate(self) -> bool:
        return self._runtime_env is not None

    def check(self, expression: str) -> None:
        """Raise :class:`CelError` unless `expression` compiles as a new DRA selector in the
        release, :class:`CannotEvaluate` when it uses what the engine cannot check."""
        if len(expression) > MAX_EXPRESSION_LENGTH:
            raise CelError(f"expression is too long ({len(expression)} > {MAX_EXPRESSION_LENGTH} "
                           "characters)", 1, 1)
        tokens, errors = cel_lint.tokenize(expression)
        if self._check_env is None:
            fallback_check(expression, tokens, errors)
        else:
            try:
                checked = self._check_env.compile(_typed_fields(expression, tokens, self._fields))
            except RuntimeError as exc:
                error = named_fields(_engine_error(exc, expression))
                raise (refused_macro(tokens, self.environment) or cannot_check(error)
                       or kubernetes_wording(error, tokens, expression, self.environment)
                       ) from None
            result = checked.return_type()
            if not (result == cel_engine.Type.BOOL or result == cel_engine.Type.DYN):
                raise CelError(f"must evaluate to bool or the unknown type, not "
                               f"{_type_name(result.name())}", 1, 1)
        static_checks(expression, tokens, self.environment)
        if self._check_env is not None:
            for problem in cel_checked.problems(checked.serialize()):
                line, column = position_of(expression, problem.offset)
                raise CelError(problem.message, line, column)

    def compile(self, expression: str) -> Selector:
        """Check `expression`, then build its evaluable form; :class:`CannotEvaluate` when it
        uses a function gpudra does not implement. A selector is compiled once per engine:
        every plan run makes a matcher of its own, and verify runs two per pending workload it
        explains (at 100,000 pods, 252 compiles of 3 expressions were a third of its judging;
        issue 32). A Selector is immutable; refusals are not kept (they are raised again)."""
        found = self._selectors.get(expression)
        if found is not None:
            return found
        selector = self._compile(expression)
        if len(self._selectors) < MAX_KEPT_SELECTORS:
            self._selectors[expression] = selector
        return selector

    def _compile(self, expression: str) -> Selector:
        self.check(expression)
        if self._runtime_env is None:
            raise UnsupportedError("evaluating CEL selectors needs cel-expr-python "
                                   "(Python >= 3.11); only a minimal syntax check ran")
        tokens = cel_lint.tokenize(expression)[0]
        try:
            program = self._runtime_env.compile(kubernetes_equality(
                _typed_fields(expression, tokens, self._fields), tokens))
        except RuntimeError as exc:
            missing = _unimplemented(tokens, self.environment)
            if missing:
                raise CannotEvaluate(
                    f"cannot evaluate: {', '.join(missing)} (Kubernetes "
                    f"{self.target}) is not implemented by gpudra's CEL engine") from None
            raise named_fields(_engine_error(exc, expression)) from None  # pragma: no cover
        domains = tuple(sorted({(ref.kind, ref.domain) for ref in cel_lint.references(expression)}))
        return Selector(expression, program, self._runtime_env, domains)

    def evaluate(self, selector: str | Selector, device: Mapping[str, Any]) -> bool:
        compiled = selector if isinstance(selector, Selector) else self.compile(selector)
        return compiled.evaluate(device)

    def prepare(self, device: Mapping[str, Any],
                domains: Iterable[tuple[str, str]] = ()) -> PreparedDevice:
        """Convert `device` once for :meth:`Selector.evaluate_prepared`. `domains`: the union
        of the :attr:`Selector.domains` of the selectors that will run on it (an unknown domain
        is an empty map in Kubernetes; adding one only affects expressions that name it)."""
        if self._runtime_env is None:
            raise UnsupportedError("evaluating CEL selectors needs cel-expr-python "
                                   "(Python >= 3.11)")
        data = _device_data(device, tuple(domains))
        return PreparedDevice(self._runtime_env.Activation(_variables(data)))


def _unimplemented(tokens: list[Token], environment: CelEnvironment) -> list[str]:
    """The release's library functions `tokens` call that gpudra cannot evaluate."""
    names = {f.name for f in environment.functions() if f.impl is None}
    found = []
    for i, tok in enumerate(tokens[:-1]):
        if tok.kind is not Kind.IDENT or tokens[i + 1].text != "(":
            continue
        name = tok.text
        if i >= 2 and tokens[i - 1].text == "." and tokens[i - 2].kind is Kind.IDENT:
            name = f"{tokens[i - 2].text}.{tok.text}"  # format.named, optional.unwrap
            if name not in names:
                name = tok.text
        if name in names and f"{name}()" not in found:
            found.append(f"{name}()")
    return found


def default_engine(target: TargetVersion = DEFAULT) -> SelectorEngine:
    """A shared engine per release: building the CEL environments costs milliseconds,
    checking is pure."""
    return _engine(cel_engine is not None, target)


@lru_cache(maxsize=16)
def _engine(with_cel: bool, target: TargetVersion) -> SelectorEngine:
    # Keyed on whether the engine imported, so tests that hide it get the fallback engine.
    return SelectorEngine(target)


def compile_selector(expression: str, target: TargetVersion = DEFAULT) -> None:
    """Raise :class:`CelError` (line, column 1-based) unless `expression` is a valid new
    selector in `target`'s DRA environment. A selector using what gpudra's engine cannot check
    (:class:`CannotEvaluate`: a two-variable comprehension, ``sortBy``, ``string(ip(…))``) is
    one Kubernetes accepts as far as gpudra can tell, and passes.

    With cel-expr-python this is a full parse and type-check in that environment. Without it
    (no wheel for the platform) only the minimal check described in the module
    docstring runs: syntax errors such as unbalanced brackets or quotes are still caught,
    unknown functions and type errors are not.
    """
    try:
        default_engine(target).check(expression)
    except CannotEvaluate:
        return


def _device_data(device: Mapping[str, Any], domains: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    attributes: dict[str, dict[str, Any]] = {
        str(domain): {str(k): _attribute(v) for k, v in (names or {}).items()}
        for domain, names in (device.get("attributes") or {}).items()}
    capacity: dict[str, dict[str, Any]] = {
        str(domain): {str(k): _capacity(v) for k, v in (names or {}).items()}
        for domain, names in (device.get("capacity") or {}).items()}
    # Kubernetes returns an empty map for an unknown domain; emulate it for the literal domains
    # the expression names (`has(device.attributes["x.com"].y)` is then false, not an error).
    for kind, domain in domains:
        (attributes if kind == "attribute" else capacity).setdefault(domain, {})
    return {"driver": str(device.get("driver", "")),
            "allowMultipleAllocations": bool(device.get("allowMultipleAllocations", False)),
            "attributes": attributes, "capacity": capacity}


def _variables(data: dict[str, Any]) -> dict[str, Any]:
    """The activation: ``device`` and its fields as the variables of :func:`_typed_fields`."""
    return {"device": data, "device_driver": data["driver"],
            "device_allowMultipleAllocations": data["allowMultipleAllocations"],
            "device_attributes": data["attributes"], "device_capacity": data["capacity"]}


def _attribute(value: Any) -> Any:
    if isinstance(value, Version):
        return version_value(value)
    if isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, (list, tuple)):  # DRAListTypeAttributes
        return [_attribute(v) for v in value]
    raise TypeError(f"unsupported attribute value {value!r}: use str, int, bool or Version")


def _capacity(value: Any) -> dict[str, str]:
    if tag_of(value) == "quantity":
        return dict(value)
    return quantity_value(value)
