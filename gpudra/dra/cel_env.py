"""The DRA CEL environment of each Kubernetes release: which device fields, functions and
macros a *new* selector may use there, and the Python side of the library functions gpudra
evaluates itself.

The API server validates a new selector in the DRA compiler's ``NewExpressions`` environment
(k8s.io/dynamic-resource-allocation ``cel/compile.go``): the API server's base CEL environment
(k8s.io/apiserver ``pkg/cel/environment/base.go``) at the default compatibility version, one
minor below the release, plus the DRA declarations. A library the base environment introduces
at 1.N is therefore offered to new selectors from 1.N+1 on; a feature-gated DRA declaration
whenever its gate is on. Functions of cel-go's own libraries come with the cel-go version the
release is built with. Read at the source for every release (apiserver and
dynamic-resource-allocation v0.32.13, v0.33.13, v0.34.13, v0.35.10, v0.36.6, v0.37.2; cel-go
v0.22.0, v0.23.2, v0.26.0, v0.29.2; docs/facts.md "The DRA CEL environment per release") and
compared with the oracle's 1.32 and 1.37 builds (tests/oracle/test_selectors_oracle.py):

==========================================  =====================================================
every release                               the standard library, optional values, the strings
                                            extension version 2 (no ``reverse``), ``cel.bind``,
                                            Kubernetes' quantity, semver, lists (``isSorted``,
                                            ``sum``, ``min``, ``max``, ``indexOf``,
                                            ``lastIndexOf``), regex (``find``, ``findAll``),
                                            URL, IP, CIDR, format and authorizer libraries and
                                            cel-go's sets
1.33+ (cel-go 0.23)                         list ``first()``/``last()``, ``optional.unwrap``,
                                            ``unwrapOpt``; two-variable comprehensions
                                            (``all(i, v, p)``, ``transformList`` …)
1.34+                                       ``semver(s, true)``, ``isSemver(s, true)``
1.34+ with DRAConsumableCapacity            ``device.allowMultipleAllocations`` (the gate is
                                            alpha, off, in 1.34 and 1.35; beta, on, from 1.36)
1.35+                                       cel-go's lists extension version 3 (``slice``,
                                            ``sort``, ``sortBy``, ``flatten``, ``distinct``,
                                            ``reverse``, ``lists.range``)
==========================================  =====================================================

:data:`LIBRARY` lists the functions the CEL engine does not bring itself (cel-expr-python has
the standard library, strings, optional values and bindings). Each has Kubernetes' overloads,
for the compile check, and, where gpudra evaluates it, a Python implementation; the others
(URL, IP, CIDR, format, authorizer, ``optional.unwrap``) compile but cannot be evaluated
(:class:`gpudra.dra.cel.CannotEvaluate`). Two-variable comprehensions and ``sortBy`` are macros
the engine cannot be taught: a selector using them is reported as one gpudra cannot check.
Not modelled: DRAListTypeAttributes (alpha, off, from 1.36: list-typed attributes and
``includes()``), and Kubernetes' cost estimate beyond the overflows
:mod:`gpudra.dra.cel_checked` finds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gpudra.dra.versions import DEFAULT, MIN_MINOR, TargetVersion, introduced

_CEL_GO_0_23 = 33  # optional values version 2, two-variable comprehensions
_SEMVER_NORMALIZE_SINCE = 34
_LISTS_V3 = 35

BASE_DEVICE_FIELDS = frozenset({"driver", "attributes", "capacity"})
MULTIPLE_ALLOCATIONS = "allowMultipleAllocations"  # also its feature in the gate table
CONSUMABLE_CAPACITY_GATE = DEFAULT.supports(MULTIPLE_ALLOCATIONS).gate

# Two-variable comprehensions (cel-go ext.TwoVarComprehensions): all/exists/existsOne/exists_one
# with three arguments, and the transform macros.
TWO_VARIABLE_MACROS = frozenset({"transformList", "transformMap", "transformMapEntry"})
THREE_ARGUMENT_MACROS = frozenset({"all", "exists", "existsOne", "exists_one"})


@dataclass(frozen=True, slots=True)
class CelEnvironment:
    """What a new selector may use on one release, with its default feature gates unless
    `consumable_capacity` says otherwise."""

    target: TargetVersion = DEFAULT
    consumable_capacity: bool | None = None  # DRAConsumableCapacity; None: the default

    @property
    def multiple_allocations(self) -> bool:
        """``device.allowMultipleAllocations`` is declared."""
        support = self.target.supports(MULTIPLE_ALLOCATIONS)
        if not support.available:
            return False
        if self.consumable_capacity is not None:
            return self.consumable_capacity
        return support.default_on

    @property
    def device_fields(self) -> frozenset[str]:
        extra = {MULTIPLE_ALLOCATIONS} if self.multiple_allocations else set()
        return BASE_DEVICE_FIELDS | extra

    @property
    def semver_normalize(self) -> bool:
        """``semver(s, true)`` and ``isSemver(s, true)`` (semver library version 1)."""
        return self.target.minor >= _SEMVER_NORMALIZE_SINCE

    @property
    def optional_version(self) -> int:
        """The engine's optional-values extension version with cel-go's functions of the
        release: version 2 adds list ``first()`` and ``last()`` (cel-go 0.23, Kubernetes 1.33)."""
        return 2 if self.target.minor >= _CEL_GO_0_23 else 1

    @property
    def macros(self) -> frozenset[str]:
        """Macros beyond the standard ones (has, all, exists, exists_one, map, filter,
        optMap, optFlatMap, cel.bind) that the release offers and the engine lacks."""
        names: set[str] = set()
        if self.target.minor >= _CEL_GO_0_23:
            names |= TWO_VARIABLE_MACROS | THREE_ARGUMENT_MACROS
        if self.target.minor >= _LISTS_V3:
            names.add("sortBy")
        return frozenset(names)

    def field_note(self, name: str) -> str | None:
        """Why `device.<name>` is undefined here, when another release or gate has it."""
        if name != MULTIPLE_ALLOCATIONS:
            return None
        if not self.target.supports(MULTIPLE_ALLOCATIONS).available:
            return (f"device.{name} is new in Kubernetes {introduced(MULTIPLE_ALLOCATIONS)}, "
                    f"with feature gate {CONSUMABLE_CAPACITY_GATE}")
        return (f"device.{name} needs feature gate {CONSUMABLE_CAPACITY_GATE}, off by default "
                f"in Kubernetes {self.target}")

    def function_note(self, name: str) -> str | None:
        """Why the function or macro `name` is undeclared here, when a later release has it."""
        if name in ("semver", "isSemver"):
            return f"{name}(s, true) is new in Kubernetes 1.{_SEMVER_NORMALIZE_SINCE}"
        since = {f.name: f.since for f in LIBRARY}.get(name)
        if name in ("first", "last") or name in TWO_VARIABLE_MACROS:
            since = _CEL_GO_0_23
        elif name in THREE_ARGUMENT_MACROS:
            return (f"{name}() with three arguments is new in Kubernetes 1.{_CEL_GO_0_23}"
                    if self.target.minor < _CEL_GO_0_23 else None)
        elif name == "sortBy":
            since = _LISTS_V3
        return f"{name}() is new in Kubernetes 1.{since}" if since and since > self.target.minor \
            else None

    def functions(self) -> tuple[Function, ...]:
        return tuple(f for f in LIBRARY if f.since <= self.target.minor)


@dataclass(frozen=True, slots=True)
class Overload:
    id: str
    member: bool
    params: tuple[str, ...]  # CEL type names: "int", "list(string)", "kubernetes.URL", "dyn"
    result: str


@dataclass(frozen=True, slots=True)
class Function:
    """One library function: Kubernetes' overloads and gpudra's implementation (None: gpudra
    cannot evaluate it). `since`: the first minor whose new selectors may use it."""

    name: str
    overloads: tuple[Overload, ...]
    impl: Callable[..., Any] | None = None
    since: int = MIN_MINOR


# --- Python implementations ------------------------------------------------------------------

def _same_kind(a: Any, b: Any) -> bool:
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    if isinstance(a, numbers) and isinstance(b, numbers):
        return True
    return type(a) is type(b) or (isinstance(a, dict) and isinstance(b, dict)) or (
        isinstance(a, list) and isinstance(b, list))


def cel_equal(a: Any, b: Any) -> bool:
    """CEL's equality on plain values (bools are not numbers; ints and doubles compare by
    value; lists and maps element by element)."""
    if not _same_kind(a, b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(cel_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(cel_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _is_sorted(items: list[Any]) -> bool:
    return all(not items[i] > items[i + 1] for i in range(len(items) - 1))


def _sum(items: list[Any]) -> Any:
    if not items:
        return 0
    total = items[0]
    for item in items[1:]:
        total = total + item
    return total


def _extreme(name: str, pick: Callable[[list[Any]], Any]) -> Callable[[list[Any]], Any]:
    def extreme(items: list[Any]) -> Any:
        if not items:
            raise ValueError(f"{name} called on empty list")
        return pick(items)

    return extreme


def _index_of(items: list[Any], item: Any) -> int:
    return next((i for i, x in enumerate(items) if cel_equal(x, item)), -1)


def _last_index_of(items: list[Any], item: Any) -> int:
    found = [i for i, x in enumerate(items) if cel_equal(x, item)]
    return found[-1] if found else -1


def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"Illegal regex: {exc}") from None


def _find(text: str, pattern: str) -> str:
    found = _regex(pattern).search(text)
    return found.group(0) if found else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in _regex(pattern).finditer(text)]
    return found if limit < 0 else found[:limit]


def _contains_all(a: list[Any], b: list[Any]) -> bool:
    return all(any(cel_equal(x, y) for x in a) for y in b)


def _intersects(a: list[Any], b: list[Any]) -> bool:
    return any(cel_equal(x, y) for x in a for y in b)


def _slice(items: list[Any], start: int, end: int) -> list[Any]:
    if start < 0 or end < 0:
        raise ValueError(f"cannot slice({start}, {end}), negative indexes not supported")
    if start > end:
        raise ValueError(f"cannot slice({start}, {end}), start index must be less than or "
                         "equal to end index")
    if end > len(items):
        raise ValueError(f"cannot slice({start}, {end}), list is length {len(items)}")
    return items[start:end]


def _flatten(items: list[Any], depth: int = 1) -> list[Any]:
    if depth < 0:
        raise ValueError("level must be non-negative")
    out: list[Any] = []
    for item in items:
        if isinstance(item, list) and depth > 0:
            out.extend(_flatten(item, depth - 1))
        else:
            out.append(item)
    return out


def _distinct(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if not any(cel_equal(item, seen) for seen in out):
            out.append(item)
    return out


def _range(n: int) -> list[int]:
    return list(range(n))


# --- the table -------------------------------------------------------------------------------

_COMPARABLE = ("int", "uint", "double", "bool", "google.protobuf.Duration",
               "google.protobuf.Timestamp", "string", "bytes")
_SUMMABLE = ("int", "uint", "double", "google.protobuf.Duration")


def _short(type_name: str) -> str:
    return type_name.rpartition(".")[2].lower()


def _per_type(name: str, types: Sequence[str],
              result: Callable[[str], str]) -> tuple[Overload, ...]:
    return tuple(Overload(f"list_{_short(t)}_{name}", True, (f"list({t})",), result(t))
                 for t in types)


def _fn(name: str, impl: Callable[..., Any] | None,
        *overloads: tuple[str, bool, tuple[str, ...], str], since: int = MIN_MINOR) -> Function:
    return Function(name, tuple(Overload(*o) for o in overloads), impl, since)


_GLOBAL, _MEMBER = False, True
_URL, _IP, _CIDR = "kubernetes.URL", "net.IP", "net.CIDR"
_FORMAT = "kubernetes.NamedFormat"
_AUTHZ = "kubernetes.authorization."
_AUTHORIZER, _PATH_CHECK = _AUTHZ + "Authorizer", _AUTHZ + "PathCheck"
_GROUP_CHECK, _RESOURCE_CHECK, _DECISION = (_AUTHZ + "GroupCheck", _AUTHZ + "ResourceCheck",
                                            _AUTHZ + "Decision")
_NAMED_FORMATS = ("dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName",
                  "dns1123LabelPrefix", "dns1123SubdomainPrefix", "dns1035LabelPrefix",
                  "labelValue", "uri", "uuid", "byte", "date", "datetime")

LIBRARY: tuple[Function, ...] = (
    # Kubernetes lists library (apiserver pkg/cel/library/lists.go)
    Function("isSorted", _per_type("is_sorted_bool", _COMPARABLE, lambda t: "bool"), _is_sorted),
    Function("sum", _per_type("sum", _SUMMABLE, lambda t: t), _sum),
    Function("min", _per_type("min", _COMPARABLE, lambda t: t), _extreme("min", min)),
    Function("max", _per_type("max", _COMPARABLE, lambda t: t), _extreme("max", max)),
    _fn("indexOf", _index_of, ("list_a_index_of_int", _MEMBER, ("list(dyn)", "dyn"), "int")),
    _fn("lastIndexOf", _last_index_of,
        ("list_a_last_index_of_int", _MEMBER, ("list(dyn)", "dyn"), "int")),
    # regex (regex.go)
    _fn("find", _find, ("string_find_string", _MEMBER, ("string", "string"), "string")),
    _fn("findAll", _find_all,
        ("string_find_all_string", _MEMBER, ("string", "string"), "list(string)"),
        ("string_find_all_string_int", _MEMBER, ("string", "string", "int"), "list(string)")),
    # sets (cel-go ext.Sets)
    _fn("sets.contains", _contains_all,
        ("list_sets_contains_list", _GLOBAL, ("list(dyn)", "list(dyn)"), "bool")),
    _fn("sets.equivalent", lambda a, b: _contains_all(a, b) and _contains_all(b, a),
        ("list_sets_equivalent_list", _GLOBAL, ("list(dyn)", "list(dyn)"), "bool")),
    _fn("sets.intersects", _intersects,
        ("list_sets_intersects_list", _GLOBAL, ("list(dyn)", "list(dyn)"), "bool")),
    # URLs (urls.go): compile only
    _fn("url", None, ("string_to_url", _GLOBAL, ("string",), _URL)),
    _fn("isURL", None, ("is_url_string", _GLOBAL, ("string",), "bool")),
    *(_fn(name, None, (f"url_{snake}", _MEMBER, (_URL,), "string"))
      for name, snake in (("getScheme", "get_scheme"), ("getHost", "get_host"),
                          ("getHostname", "get_hostname"), ("getPort", "get_port"),
                          ("getEscapedPath", "get_escaped_path"))),
    _fn("getQuery", None, ("url_get_query", _MEMBER, (_URL,), "map(string, list(string))")),
    # IP and CIDR (ip.go, cidr.go): compile only. string(ip) cannot be declared beside the
    # engine's string(): such a selector is one gpudra cannot check.
    _fn("ip", None, ("string_to_ip", _GLOBAL, ("string",), _IP),
        ("cidr_ip", _MEMBER, (_CIDR,), _IP)),
    _fn("isIP", None, ("is_ip", _GLOBAL, ("string",), "bool")),
    _fn("ip.isCanonical", None, ("ip_is_canonical", _GLOBAL, ("string",), "bool")),
    _fn("family", None, ("ip_family", _MEMBER, (_IP,), "int")),
    *(_fn(name, None, (f"ip_{snake}", _MEMBER, (_IP,), "bool"))
      for name, snake in (("isUnspecified", "is_unspecified"), ("isLoopback", "is_loopback"),
                          ("isLinkLocalMulticast", "is_link_local_multicast"),
                          ("isLinkLocalUnicast", "is_link_local_unicast"),
                          ("isGlobalUnicast", "is_global_unicast"))),
    _fn("cidr", None, ("string_to_cidr", _GLOBAL, ("string",), _CIDR)),
    _fn("isCIDR", None, ("is_cidr", _GLOBAL, ("string",), "bool")),
    _fn("containsIP", None, ("cidr_contains_ip_string", _MEMBER, (_CIDR, "string"), "bool"),
        ("cidr_contains_ip_ip", _MEMBER, (_CIDR, _IP), "bool")),
    _fn("containsCIDR", None,
        ("cidr_contains_cidr_string", _MEMBER, (_CIDR, "string"), "bool"),
        ("cidr_contains_cidr", _MEMBER, (_CIDR, _CIDR), "bool")),
    _fn("masked", None, ("cidr_masked", _MEMBER, (_CIDR,), _CIDR)),
    _fn("prefixLength", None, ("cidr_prefix_length", _MEMBER, (_CIDR,), "int")),
    # format (format.go): compile only
    _fn("format.named", None, ("format-named", _GLOBAL, ("string",), f"optional_type({_FORMAT})")),
    *(_fn(f"format.{name}", None, (f"format.{name}", _GLOBAL, (), _FORMAT))
      for name in _NAMED_FORMATS),
    _fn("validate", None,
        ("format-validate", _MEMBER, (_FORMAT, "string"), "optional_type(list(string))")),
    # authorizer (authz.go): no `authorizer` variable in DRA, declared for the same verdicts
    _fn("path", None, ("authorizer_path", _MEMBER, (_AUTHORIZER, "string"), _PATH_CHECK)),
    _fn("group", None, ("authorizer_group", _MEMBER, (_AUTHORIZER, "string"), _GROUP_CHECK)),
    _fn("serviceAccount", None,
        ("authorizer_serviceaccount", _MEMBER, (_AUTHORIZER, "string", "string"), _AUTHORIZER)),
    _fn("resource", None,
        ("groupcheck_resource", _MEMBER, (_GROUP_CHECK, "string"), _RESOURCE_CHECK)),
    *(_fn(name, None, (f"resourcecheck_{name.lower()}", _MEMBER, (_RESOURCE_CHECK, "string"),
                       _RESOURCE_CHECK))
      for name in ("subresource", "namespace", "name")),
    *(_fn(name, None, (f"authorizer_{name.lower()}", _MEMBER, (_RESOURCE_CHECK, "string"),
                       _RESOURCE_CHECK))
      for name in ("fieldSelector", "labelSelector")),
    _fn("check", None, ("pathcheck_check", _MEMBER, (_PATH_CHECK, "string"), _DECISION),
        ("resourcecheck_check", _MEMBER, (_RESOURCE_CHECK, "string"), _DECISION)),
    *(_fn(name, None, (f"decision_{name}", _MEMBER, (_DECISION,), result))
      for name, result in (("allowed", "bool"), ("reason", "string"), ("errored", "bool"),
                           ("error", "string"))),
    # optional values version 2, cel-go 0.23+ (Kubernetes 1.33+): compile only
    _fn("optional.unwrap", None,
        ("optional_unwrap", _GLOBAL, ("list(optional_type(dyn))",), "list(dyn)"),
        since=_CEL_GO_0_23),
    _fn("unwrapOpt", None,
        ("optional_unwrapOpt", _MEMBER, ("list(optional_type(dyn))",), "list(dyn)"),
        since=_CEL_GO_0_23),
    # cel-go's lists extension version 3, in the base environment from 1.34: new selectors
    # from 1.35
    _fn("slice", _slice, ("list_slice", _MEMBER, ("list(dyn)", "int", "int"), "list(dyn)"),
        since=_LISTS_V3),
    _fn("flatten", _flatten, ("list_flatten", _MEMBER, ("list(list(dyn))",), "list(dyn)"),
        ("list_flatten_int", _MEMBER, ("list(dyn)", "int"), "list(dyn)"), since=_LISTS_V3),
    _fn("distinct", _distinct, ("list_distinct", _MEMBER, ("list(dyn)",), "list(dyn)"),
        since=_LISTS_V3),
    _fn("reverse", lambda items: items[::-1],
        ("list_reverse", _MEMBER, ("list(dyn)",), "list(dyn)"), since=_LISTS_V3),
    Function("sort", _per_type("sort", _COMPARABLE, lambda t: f"list({t})"), sorted,
             since=_LISTS_V3),
    _fn("lists.range", _range, ("lists_range", _GLOBAL, ("int",), "list(int)"),
        since=_LISTS_V3),
)

