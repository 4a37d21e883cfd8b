"""The two cel-expr-python environments of one release: the check environment (Quantity and
Semver as abstract types, so CEL refuses what Kubernetes refuses) and the runtime environment
(both as tagged maps, their functions dispatched in Python, :mod:`gpudra.dra.cel_values`).
``cel_engine`` is the engine's module, None without cel-expr-python."""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable
from typing import Any

from gpudra.dra.cel_env import CelEnvironment, Function
from gpudra.dra.cel_equality import EQUALS, IN_CONSTANTS
from gpudra.dra.cel_static import split_types
from gpudra.dra.cel_values import (
    QUANTITY_ADD,
    QUANTITY_SUB,
    as_float,
    as_int64,
    as_quantity,
    as_version,
    compare_values,
    in_constants,
    is_integer,
    is_quantity,
    is_semver,
    make_quantity,
    make_semver,
    overload_errors,
    quantity_sign,
    signed,
    values_equal,
)

__all__ = ["cel_engine", "engine_available", "new_env"]  # what gpudra.dra.cel imports

try:  # pragma: no cover - exercised by the environment, not by a test switch
    from cel_expr_python import cel as cel_engine
    from cel_expr_python.ext import ext_bindings as _ext_bindings
    from cel_expr_python.ext import ext_optional as _ext_optional
    from cel_expr_python.ext import ext_strings as _ext_strings
except ImportError:  # a platform without a wheel
    cel_engine = None
    _ext_bindings = None
    _ext_optional = None
    _ext_strings = None


def engine_available() -> bool:
    """Whether the real CEL engine is importable (else compile checks are minimal)."""
    return cel_engine is not None


def _declarations(quantity_type: Any, semver_type: Any) -> list[Any]:
    """Function declarations. With two distinct types (check env) every overload exists; with
    one map type (runtime env) the overloads per name collapse into one Python-dispatched one."""
    T, Over = cel_engine.Type, cel_engine.Overload
    Q, S = quantity_type, semver_type
    runtime = Q == S

    def member(name: str, returns: Any, params: list[Any], impl: Any, suffix: str) -> Any:
        return Over(f"{name}_{suffix}", returns, params, is_member=True,
                 impl=overload_errors(name, impl))

    decls = {
        "quantity": [Over("quantity_string", Q, [T.STRING], impl=make_quantity)],
        "isQuantity": [Over("is_quantity_string", T.BOOL, [T.STRING], impl=is_quantity)],
        # both arities on every release: static_checks refuses the normalize argument before
        # 1.34 in Kubernetes' words (the engine would call it an undeclared reference)
        "semver": [Over("semver_string", S, [T.STRING], impl=make_semver),
                   Over("semver_string_bool", S, [T.STRING, T.BOOL], impl=make_semver)],
        "isSemver": [Over("is_semver_string", T.BOOL, [T.STRING], impl=is_semver),
                     Over("is_semver_string_bool", T.BOOL, [T.STRING, T.BOOL], impl=is_semver)],
        # a global function in Kubernetes (cel.Overload, not MemberOverload), whatever the
        # library's doc comment says: `sign(quantity("1"))`
        "sign": [Over("sign_quantity", T.INT, [Q], impl=overload_errors("sign", quantity_sign))],
        "asInteger": [member("asInteger", T.INT, [Q], lambda q: as_int64(as_quantity(q)), "quantity")],
        "isInteger": [member("isInteger", T.BOOL, [Q], is_integer, "quantity")],
        "asApproximateFloat": [member("asApproximateFloat", T.DOUBLE, [Q], as_float, "quantity")],
        "add": [member("add", Q, [Q, Q], QUANTITY_ADD[0], "quantity_quantity"),
                member("add", Q, [Q, T.INT], QUANTITY_ADD[1], "quantity_int")],
        "sub": [member("sub", Q, [Q, Q], QUANTITY_SUB[0], "quantity_quantity"),
                member("sub", Q, [Q, T.INT], QUANTITY_SUB[1], "quantity_int")],
        "major": [member("major", T.INT, [S], lambda v: signed(as_version(v).major),
                          "semver")],
        "minor": [member("minor", T.INT, [S], lambda v: signed(as_version(v).minor),
                          "semver")],
        "patch": [member("patch", T.INT, [S], lambda v: signed(as_version(v).patch),
                          "semver")],
    }
    comparisons = {
        "compareTo": (T.INT, compare_values),
        "isGreaterThan": (T.BOOL, lambda a, b: compare_values(a, b) > 0),
        "isLessThan": (T.BOOL, lambda a, b: compare_values(a, b) < 0),
    }
    for name, (returns, impl) in comparisons.items():
        decls[name] = [member(name, returns, [Q, Q], impl, "quantity")]
        if not runtime:
            decls[name].append(member(name, returns, [S, S], impl, "semver"))
    return [cel_engine.FunctionDecl(name, overloads) for name, overloads in decls.items()]


_PRIMITIVES = {"int": "INT", "uint": "UINT", "double": "DOUBLE", "bool": "BOOL",
               "string": "STRING", "bytes": "BYTES", "dyn": "DYN",
               "google.protobuf.Duration": "DURATION", "google.protobuf.Timestamp": "TIMESTAMP"}


def _cel_type(name: str) -> Any:
    """A CEL type from its cel-go name: ``list(string)``, ``map(string, list(string))``,
    ``net.IP``; an optional value is ``dyn`` (looser than Kubernetes)."""
    T = cel_engine.Type
    if name in _PRIMITIVES:
        return getattr(T, _PRIMITIVES[name])
    found = re.fullmatch(r"(list|map|optional_type)\((.*)\)", name)
    if found is None:
        return T.AbstractType(name)
    if found.group(1) == "optional_type":
        return T.DYN  # the engine's optional type cannot be declared from Python
    params = [_cel_type(p) for p in split_types(found.group(2))]
    return T.List(*params) if found.group(1) == "list" else T.Map(*params)


def _runtime_type(name: str) -> Any:
    """The runtime environment's loose form of a parameter: any list is ``list(dyn)``, any
    non-primitive ``dyn`` (the check environment has already checked the real types; results
    are ``dyn``, as one overload stands for all of Kubernetes' per-type ones)."""
    T = cel_engine.Type
    if name.startswith("list("):
        return T.List(T.DYN)
    return getattr(T, _PRIMITIVES[name]) if name in _PRIMITIVES else T.DYN


# Library functions that add overloads to one of the engine's extensions (strings): declared as
# an extension of their own, which merges. Others are plain declarations (an extension's
# declarations collide when an abstract type stands where another overload has a string).
_EXTENDING = frozenset({"indexOf", "lastIndexOf"})


def _plain_result(name: str, impl: Any) -> Any:
    """`impl`, refusing to return what the engine cannot take back from Python (a duration or
    a timestamp: ``[duration("1s")].max()``) with an error instead of the engine's crash."""
    def call(*args: Any) -> Any:
        result = impl(*args)
        if isinstance(result, (datetime.datetime, datetime.timedelta)):
            raise ValueError(f"gpudra cannot evaluate {name}() of durations or timestamps")
        return result

    return call


def _library(functions: Iterable[Function], runtime: bool) -> list[tuple[str, Any]]:
    """Kubernetes' library functions the engine lacks: every overload for the check
    environment; for the runtime one, those gpudra implements, one overload per shape."""
    decls = []
    for function in functions:
        # keyed by the runtime's shape (is member, parameter type names) or the check's id
        overloads: dict[tuple[bool, tuple[str, ...]] | str, Any] = {}
        for o in function.overloads:
            if runtime:
                if function.impl is None:
                    break
                params = [_runtime_type(p) for p in o.params]
                key = (o.member, tuple(p.name() for p in params))
                if key not in overloads:
                    overloads[key] = cel_engine.Overload(
                        f"gpudra_{o.id}", cel_engine.Type.DYN, params, is_member=o.member,
                        impl=_plain_result(function.name, function.impl))
            else:
                overloads[o.id] = cel_engine.Overload(o.id, _cel_type(o.result),
                                                [_cel_type(p) for p in o.params],
                                                is_member=o.member)
        if overloads:
            decls.append((function.name, cel_engine.FunctionDecl(function.name,
                                                           list(overloads.values()))))
    return decls


def new_env(quantity_type: Any, semver_type: Any, environment: CelEnvironment) -> Any:
    """Besides ``device``, the device's fields as variables of their Kubernetes types, for
    expressions rewritten by :func:`_typed_fields`."""
    T = cel_engine.Type
    variables = {
        "device": T.Map(T.STRING, T.DYN),
        "device_driver": T.STRING,
        "device_allowMultipleAllocations": T.BOOL,
        "device_attributes": T.Map(T.STRING, T.Map(T.STRING, T.DYN)),
        "device_capacity": T.Map(T.STRING, T.Map(T.STRING, quantity_type)),
    }
    runtime = quantity_type == semver_type
    library = _library(environment.functions(), runtime)
    # In an extension, not `functions=`: only there does the engine dispatch a dyn parameter
    # at run time.
    extending = [decl for name, decl in library if name in _EXTENDING]
    if runtime:  # the calls gpudra.dra.cel_equality writes
        extending += [
            cel_engine.FunctionDecl(EQUALS, [cel_engine.Overload("gpudra_equals", T.BOOL, [T.DYN, T.DYN],
                                                     impl=values_equal)]),
            cel_engine.FunctionDecl(IN_CONSTANTS, [cel_engine.Overload(
                "gpudra_in_constants", T.BOOL, [T.DYN, T.List(T.DYN)], impl=in_constants)])]
    return cel_engine.NewEnv(
        variables=variables,
        # Kubernetes has the strings extension at version 2 (no string reverse())
        extensions=[_ext_strings.ExtStrings(2), _ext_bindings.ExtBindings(),
                    _ext_optional.ExtOptional(environment.optional_version),
                    cel_engine.CelExtension("kubernetes", extending)],
        functions=_declarations(quantity_type, semver_type)
        + [decl for name, decl in library if name not in _EXTENDING],
    )
