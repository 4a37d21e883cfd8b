"""GPU Feature Discovery node labels → DRA: the one table of GFD labels (`GFD_LABELS`: the DRA
attribute the audit names, and the CEL device selectors `gpudra convert` writes).

:func:`label_selector` translates one nodeSelector entry (operator ``"="``) or one node-affinity
match expression (``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``, ``Lt``) on a GFD label
into a CEL condition on the device, chosen so that it selects the devices whose node the label
selected. Sources: NVIDIA/k8s-device-plugin v0.20.0 ``internal/lm`` (label values) and
kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 ``cmd/gpu-kubelet-plugin`` (attributes); the
details, with commits, are in docs/facts.md ("GFD labels → DRA selectors").

Results:

* ``Translation(expression, note)`` with a non-empty expression: AND it into the request's
  selectors. Expressions that contain ``||`` are parenthesised, so they can be joined with ``&&``.
* ``Translation("", note)``: the label needs no constraint (``Exists`` on a GFD label is true on
  every GPU node, and a GPU claim already implies one); the node selector can go.
* ``None``: no DRA equivalent; keep the node selector / affinity term as it is.

Per label:

* ``nvidia.com/gpu.product`` → ``productName.replace(" ", "-")``. GFD sanitises the NVML name
  (drops characters outside ``[A-Za-z0-9-_. ]``, turns whitespace runs into ``-``, trims); the
  CEL ``replace`` only turns single spaces into ``-``, so a name with other characters or double
  spaces will not match (no NVIDIA product name seen has them). A ``-SHARED`` suffix (time-slicing
  with ``renameByDefault: false``) is stripped and the product matched, with a note: sharing is
  configured per claim under DRA. ``-MIG-<profile>`` values (``migStrategy: single``) → ``None``:
  such a node exposes MIG devices as ``nvidia.com/gpu``, and under DRA a MIG device is chosen by
  class (``mig.nvidia.com``) and profile, which is the request conversion's job, not a selector's.
* ``nvidia.com/gpu.memory`` (MiB, ``floor(total bytes / 2^20)``) → ranges on the ``memory``
  capacity (bytes): ``= N`` is ``[N Mi, (N+1) Mi)``.
* ``nvidia.com/gpu.family`` → ``architecture.lowerAscii().replace(" ", "-")``: GFD's family names
  are the driver's architecture names in lower case with ``-`` for the space (``ada-lovelace`` ↔
  ``Ada Lovelace``). ``tesla``/``fermi`` (the driver cannot name them) and ``undefined`` → ``None``;
  ``rubin`` needs a driver built with go-nvlib ≥ v0.12.0 (newer than v0.4.1): translated, with a note.
* ``nvidia.com/gpu.compute.{major,minor}`` → ``cudaComputeCapability.major()/minor()``.
* ``nvidia.com/cuda.driver-version.{major,minor,revision,full}`` (and the deprecated
  ``cuda.driver.{major,minor,rev}``) → ``driverVersion.major()/minor()/patch()``;
  ``nvidia.com/cuda.runtime-version.{major,minor,full}`` (deprecated ``cuda.runtime.*``) →
  ``cudaDriverVersion`` likewise (GFD's "runtime" value is NVML's CUDA *driver* version).
  GFD writes the driver parts as NVML prints them (``570.124.06``: revision ``06``) while the DRA
  driver parses the string leniently (Masterminds semver: 570.124.6), so ``06`` is patch 6; a
  value GFD never writes (``6``, ``0570``, ``570.124.6``) matched no node and is not translated
  (dropped from In/NotIn lists, where it changed nothing).

Limits: the DRA attribute/capacity must exist on the device; where GFD omits a label (memory NVML
cannot report) the driver omits the capacity, and the selector then fails with a runtime
``no such key`` instead of simply not matching (``NotIn`` matched such nodes). Values GFD writes
with ``%d`` but given here with leading zeros (never matched a node) → ``None``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

ATTR = 'device.attributes["gpu.nvidia.com"]'
CAP = 'device.capacity["gpu.nvidia.com"]'
MEMORY = f"{CAP}.memory"

_CANONICAL_INT = re.compile(r"^(0|[1-9][0-9]*)$")
_DIGITS = re.compile(r"^[0-9]+$")
_SIGNED_INT = re.compile(r"^[+-]?[0-9]+$")
_DRIVER_FULL = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:\.([0-9]+))?$")
_RUNTIME_FULL = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")
_MIG_PRODUCT = re.compile(r"-MIG-[^-]+(?:-SHARED)?$|-MIG-INVALID$")
_GFD_LABEL = re.compile(r"^nvidia\.com/(?:gpu\.|cuda\.|mig\.|mig-|mps\.|vgpu\.|gfd\.)")

# GFD family (k8s-device-plugin internal/lm/resource.go getArchFamily) -> the DRA driver's
# `architecture` (go-nvlib GetArchitectureAsString; dra-reference section 8), for the families
# whose devices the driver can publish. The family is the architecture in lower case with "-"
# for the space: `_family` tests it that way, and plan's synthesis predicts the architecture
# from the family label with this table.
DRIVER_ARCHITECTURES: Mapping[str, str] = MappingProxyType({
    "kepler": "Kepler", "maxwell": "Maxwell", "pascal": "Pascal", "volta": "Volta",
    "turing": "Turing", "ampere": "Ampere", "ada-lovelace": "Ada Lovelace", "hopper": "Hopper",
    "blackwell": "Blackwell", "rubin": "Rubin"})
DRIVER_FAMILIES = frozenset(DRIVER_ARCHITECTURES)

OPERATORS = frozenset({"=", "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})


@dataclass(frozen=True, slots=True)
class Translation:
    """A CEL condition replacing a node label selector; ``expression == ""``: none needed."""

    expression: str
    note: str | None = None


def min_memory_selector(quantity: str) -> str:
    """Whole GPUs with at least `quantity` of memory (a MIG device's memory is its slice)."""
    return f'{MEMORY}.compareTo(quantity("{quantity}")) >= 0'


def product_prefix_selector(prefix: str) -> str:
    """Devices whose NVML product name starts with `prefix` (MIG devices carry the parent's)."""
    return f"{ATTR}.productName.startsWith({_str(prefix)})"


def label_selector(label: str, operator: str, values: Sequence[str]) -> Translation | None:
    """The CEL device condition for ``label <operator> values``; None: keep the node selector."""
    if operator not in OPERATORS:
        return None
    handler = _handler(label)
    if handler is None:
        return None
    if operator == "Exists":
        return Translation("", f"{label} exists on every GPU node; a GPU claim implies it")
    if operator == "DoesNotExist":
        return None  # "a node without GPU information" cannot be asked of a GPU device
    values = list(values)
    if operator in ("=", "Gt", "Lt") and len(values) != 1:
        return None
    if operator in ("In", "NotIn") and not values:
        return None
    return handler(operator, values)


# --- helpers -------------------------------------------------------------------------------

def _str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _set_test(subject: str, operator: str, literals: list[str]) -> str:
    """``subject == x`` / ``subject in [x, y]`` and their negations for NotIn."""
    unique = list(dict.fromkeys(literals))
    test = f"{subject} == {unique[0]}" if len(unique) == 1 else \
        f"{subject} in [{', '.join(unique)}]"
    if operator == "NotIn":
        return f"{subject} != {unique[0]}" if len(unique) == 1 else f"!({test})"
    return test


def _any_of(operator: str, clauses: list[str]) -> str:
    """OR of clauses (each already safe to AND); negated for NotIn."""
    unique = list(dict.fromkeys(clauses))
    if len(unique) == 1:
        joined = unique[0]
        return f"!({joined})" if operator == "NotIn" else joined
    joined = " || ".join(f"({c})" if "&&" in c else c for c in unique)
    return f"!({joined})" if operator == "NotIn" else f"({joined})"


def _int_value(value: str, canonical: bool) -> int | None:
    pattern = _CANONICAL_INT if canonical else _DIGITS
    return int(value) if pattern.match(value) else None


def _bound(value: str) -> int | None:
    """Gt/Lt operand: Kubernetes parses it as a (signed) int64."""
    return int(value) if _SIGNED_INT.match(value) else None


# --- product ----------------------------------------------------------------------------------

def _product(operator: str, values: list[str]) -> Translation | None:
    if operator in ("Gt", "Lt"):
        return None  # product names are not integers: Gt/Lt never matched
    names: list[str] = []
    shared = False
    for value in values:
        if _MIG_PRODUCT.search(value):
            return None
        if value.endswith("-SHARED"):
            shared = True
            value = value[: -len("-SHARED")]
        if not value:
            return None
        names.append(value)
    subject = f'{ATTR}.productName.replace(" ", "-")'
    note = None
    if shared:
        note = ("the -SHARED product suffix marks a time-sliced GPU under the device plugin; "
                "under DRA share a GPU through one ResourceClaim or GpuConfig sharing "
                "(the selector matches the product only)")
    return Translation(_set_test(subject, operator, [_str(n) for n in names]), note)


# --- memory -----------------------------------------------------------------------------------

def _mib(n: int) -> str:
    return f'quantity("{n}Mi")'


def _memory_range(n: int) -> str:
    return (f"{MEMORY}.compareTo({_mib(n)}) >= 0 && "
            f"{MEMORY}.compareTo({_mib(n + 1)}) < 0")


def _memory(operator: str, values: list[str]) -> Translation | None:
    if operator == "Gt":
        bound = _bound(values[0])
        return None if bound is None else \
            Translation(f"{MEMORY}.compareTo({_mib(bound + 1)}) >= 0")
    if operator == "Lt":
        bound = _bound(values[0])
        return None if bound is None else Translation(f"{MEMORY}.compareTo({_mib(bound)}) < 0")
    numbers = [_int_value(v, canonical=True) for v in values]
    if any(n is None for n in numbers):
        return None
    return Translation(_any_of(operator, [_memory_range(n) for n in numbers if n is not None]))


# --- family -----------------------------------------------------------------------------------

def _family(operator: str, values: list[str]) -> Translation | None:
    if operator in ("Gt", "Lt") or any(v not in DRIVER_FAMILIES for v in values):
        return None
    subject = f'{ATTR}.architecture.lowerAscii().replace(" ", "-")'
    note = None
    if "rubin" in values:
        note = ('architecture "Rubin" is published only by DRA driver builds with go-nvlib '
                ">= v0.12.0 (after v0.4.1)")
    return Translation(_set_test(subject, operator, [_str(v) for v in values]), note)


# --- integer parts of a version ---------------------------------------------------------------

def _version_part(attribute: str, part: str, form: str) -> Callable[[str, list[str]], Translation | None]:
    """`form`: how GFD writes the part: "int" (`%d`: no leading zeros) or "raw" (NVML's own
    text, a driver revision such as `06`, which the DRA driver reads as 6)."""
    subject = f"{ATTR}.{attribute}.{part}()"

    def translate(operator: str, values: list[str]) -> Translation | None:
        if operator in ("Gt", "Lt"):
            bound = _bound(values[0])
            if bound is None:
                return None
            return Translation(f"{subject} {'>' if operator == 'Gt' else '<'} {bound}")
        numbers = _label_numbers(operator, values, form)
        if numbers is None:
            return None
        return Translation(_set_test(subject, operator, [str(n) for n in numbers]))

    return translate


def _label_numbers(operator: str, values: list[str], form: str) -> list[int] | None:
    """The numbers the label values stand for. A value GFD never writes (`6` where NVML prints
    `06`, `0570`) matched no node: it is dropped from In/NotIn (which changes nothing) and
    makes `=`, or a list with nothing left, untranslatable (the label stays)."""
    numbers = [_written_int(v, form) for v in values]
    kept = [n for n in numbers if n is not None]
    if not kept or (operator == "=" and len(kept) != len(numbers)):
        return None
    return kept


def _written_int(value: str, form: str) -> int | None:
    """The integer of a label value, if GFD could have written it that way."""
    if form == "int":
        return _int_value(value, canonical=True)
    # NVML prints driver revisions with two digits ("570.124.06", "535.104.05").
    if _DIGITS.match(value) and value == f"{int(value):02d}":
        return int(value)
    return None


def _version_full(attribute: str, pattern: re.Pattern[str], with_patch: bool
                  ) -> Callable[[str, list[str]], Translation | None]:
    base = f"{ATTR}.{attribute}"

    def translate(operator: str, values: list[str]) -> Translation | None:
        if operator in ("Gt", "Lt"):
            return None  # "550.54.15" is not an integer: Gt/Lt never matched
        clauses = []
        for value in values:
            match = pattern.match(value)
            patch = match.group(3) if match and with_patch else None
            if not match or (patch is not None and _written_int(patch, "raw") is None):
                if operator == "=":
                    return None
                continue  # a value GFD never writes matched no node
            major, minor = int(match.group(1)), int(match.group(2))
            clause = f"{base}.major() == {major} && {base}.minor() == {minor}"
            if with_patch:
                clause += f" && {base}.patch() == {int(patch) if patch else 0}"
            clauses.append(clause)
        if not clauses:
            return None
        return Translation(_any_of(operator, clauses))

    return translate


Translator = Callable[[str, list[str]], Translation | None]


@dataclass(frozen=True, slots=True)
class LabelMapping:
    """What a GFD label becomes under DRA: the audit names `dra` and `note`, convert writes
    `translate`'s CEL (None: convert keeps the node selector)."""

    label: str
    dra: str | None  # the DRA attribute/capacity that replaces it; None: no equivalent
    note: str
    translate: Translator | None = None


# (DRA attribute, note) of the label families that are versions
_COMPUTE = ("attribute cudaComputeCapability",
            'a version: cudaComputeCapability.compareTo(semver("8.0.0"))')
_DRIVER_VERSION = ("attribute driverVersion",
                   'a version: driverVersion.compareTo(semver("550.0.0"))')
_DRIVER_DEPRECATED = ("attribute driverVersion",
                      "deprecated label; driverVersion.compareTo(semver(...))")
_RUNTIME = ("attribute cudaDriverVersion", "closest DRA attribute: cudaDriverVersion (a version)")

# The one table of GFD labels (label names and value formats from NVIDIA k8s-device-plugin v0.20
# internal/lm; DRA attribute names from the NVIDIA DRA driver v0.4.1; docs/facts.md).
GFD_LABELS: Mapping[str, LabelMapping] = MappingProxyType({m.label: m for m in (
    LabelMapping("nvidia.com/gpu.product", "attribute productName",
                 'compare productName.replace(" ", "-") with the label value', _product),
    LabelMapping("nvidia.com/gpu.memory", "capacity memory",
                 'label is MiB, capacity is bytes: memory.compareTo(quantity("<N>Mi"))', _memory),
    LabelMapping("nvidia.com/gpu.family", "attribute architecture",
                 'spelling differs: "ampere" -> "Ampere", "ada-lovelace" -> "Ada Lovelace"',
                 _family),
    LabelMapping("nvidia.com/gpu.compute.major", *_COMPUTE,
                 _version_part("cudaComputeCapability", "major", "int")),
    LabelMapping("nvidia.com/gpu.compute.minor", *_COMPUTE,
                 _version_part("cudaComputeCapability", "minor", "int")),
    LabelMapping("nvidia.com/gpu.count", None,
                 "the claim's count replaces it; drop it or keep it as a node selector"),
    LabelMapping("nvidia.com/gpu.present", None, "implied by any GPU claim; the selector can go"),
    LabelMapping("nvidia.com/gpu.sharing-strategy", None,
                 "sharing is configured per claim under DRA (GpuConfig)"),
    LabelMapping("nvidia.com/gpu.replicas", None, "time-slicing replicas have no DRA equivalent"),
    LabelMapping("nvidia.com/mig.strategy", None, "MIG devices are requested by class"),
    LabelMapping("nvidia.com/mig.capable", None, "request class mig.nvidia.com instead"),
    # driver version parts are the raw split of NVML's string ("535.104.05"): the major and
    # minor parts carry no leading zeros, the revision always two digits
    LabelMapping("nvidia.com/cuda.driver-version.major", *_DRIVER_VERSION,
                 _version_part("driverVersion", "major", "int")),
    LabelMapping("nvidia.com/cuda.driver-version.minor", *_DRIVER_VERSION,
                 _version_part("driverVersion", "minor", "int")),
    LabelMapping("nvidia.com/cuda.driver-version.revision", *_DRIVER_VERSION,
                 _version_part("driverVersion", "patch", "raw")),
    LabelMapping("nvidia.com/cuda.driver-version.full", *_DRIVER_VERSION,
                 _version_full("driverVersion", _DRIVER_FULL, True)),
    LabelMapping("nvidia.com/cuda.driver.major", *_DRIVER_DEPRECATED,
                 _version_part("driverVersion", "major", "int")),
    LabelMapping("nvidia.com/cuda.driver.minor", *_DRIVER_DEPRECATED,
                 _version_part("driverVersion", "minor", "int")),
    LabelMapping("nvidia.com/cuda.driver.rev", *_DRIVER_DEPRECATED,
                 _version_part("driverVersion", "patch", "raw")),
    LabelMapping("nvidia.com/cuda.runtime-version.major", *_RUNTIME,
                 _version_part("cudaDriverVersion", "major", "int")),
    LabelMapping("nvidia.com/cuda.runtime-version.minor", *_RUNTIME,
                 _version_part("cudaDriverVersion", "minor", "int")),
    LabelMapping("nvidia.com/cuda.runtime-version.full", *_RUNTIME,
                 _version_full("cudaDriverVersion", _RUNTIME_FULL, False)),
    LabelMapping("nvidia.com/cuda.runtime.major", *_RUNTIME,
                 _version_part("cudaDriverVersion", "major", "int")),
    LabelMapping("nvidia.com/cuda.runtime.minor", *_RUNTIME,
                 _version_part("cudaDriverVersion", "minor", "int")),
)})
# Labels of a family the table does not list take the family's mapping.
_FAMILIES = (("nvidia.com/cuda.driver-version.", _DRIVER_VERSION),
             ("nvidia.com/cuda.driver.", _DRIVER_DEPRECATED),
             ("nvidia.com/cuda.runtime-version.", _RUNTIME),
             ("nvidia.com/cuda.runtime.", _RUNTIME))

TRANSLATED_LABELS = frozenset(m.label for m in GFD_LABELS.values() if m.translate is not None)


def is_gfd_label(key: object) -> bool:
    return isinstance(key, str) and _GFD_LABEL.match(key) is not None


def mapping_for(label: str) -> LabelMapping:
    """What a GFD label becomes; unknown GFD labels have no DRA equivalent."""
    if label in GFD_LABELS:
        return GFD_LABELS[label]
    for prefix, (dra, note) in _FAMILIES:
        if label.startswith(prefix):
            return LabelMapping(label, dra, note)
    return LabelMapping(label, None, "no DRA attribute publishes this; keep it as a node selector")


def _handler(label: str) -> Translator | None:
    mapping = GFD_LABELS.get(label)
    return None if mapping is None else mapping.translate
