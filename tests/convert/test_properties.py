"""Property tests for `gpudra convert`'s surgical rewriter.

A Hypothesis strategy writes realistic GPU workload manifests *as text*, with the formatting
variety real repositories have: 2- or 4-space indentation, flush or indented sequences, flow
mappings at random levels, comments at line ends and on their own lines, blank lines, quoted and
plain scalars (including YAML 1.1 traps such as "yes", "on", "0777"), CRLF, a BOM, trailing
spaces, no final newline, and unrelated ConfigMaps before/after the workload.

For every generated file the converter (default options, target 1.37) must:

1. write YAML that parses, whose DRA objects and converted workload pass strict schema and
   semantic validation, and whose every object (input and output) Kubernetes' own strict
   decoder accepts (the Go oracle, tests/oracle);
2. mean what an independent oracle (below, written from the input data alone, not from gpudra's
   planner) says: each GPU/MIG container lost its device requests and NVIDIA_VISIBLE_DEVICES and
   gained a claim on a pod resourceClaims entry whose template has a request of the right class
   and count; a pod that requested `nvidia.com/gpu` without tolerating its taint gained the
   toleration; every other key of every object is unchanged; and every pod gets what the device
   plugin gave it (the whole-pod oracle of entitlements.py);
3. be faithful to the text: unrelated documents byte-identical, every *stable* input line present
   unchanged and in order, CRLF kept, BOM kept iff present;
4. be a fixed point: converting its output changes nothing;
5. never raise: a workload is converted, or reported blocked with a reason.

The "may change" set (property 3). The generator knows the structure it writes, so it marks
each line it emits as *volatile* (allowed to change or go) when it is:

* an entry that names a GPU device resource (`nvidia.com/gpu`, `nvidia.com/mig-*`) in limits or
  requests, with all its lines;
* a nodeSelector entry with a GFD label the converter moves into the claim (translatable
  gpu.product / gpu.memory / gpu.family values);
* an `env` item named NVIDIA_VISIBLE_DEVICES of a GPU container, with all its lines (its `value:`
  line carries no GPU token, which is why a token-based rule is not enough);
* the key line of a `limits:`, `requests:`, `env:` or `nodeSelector:` whose every entry is
  volatile (the emptied collection is pruned), and every own-line comment or blank line inside
  such a collection (it goes with it);
* a line holding a flow collection (`{...}`/`[...]`) that contains anything volatile: the
  converter rewrites the flow text;
* the lines right after a volatile entry that sits on a sequence dash (`- env: [...]` first in
  a container), up to the first non-blank one: when the entry goes, that line's content moves
  up onto the dash line (`- name: x`) and the blank lines between go.

Everything else must survive byte for byte, including comments that mention `nvidia.com/gpu`,
non-GPU labels, tolerations for `nvidia.com/gpu` and NVIDIA_VISIBLE_DEVICES in containers
without GPUs. The list is an upper bound of what may change, not a demand that it changes.
"""

from __future__ import annotations

import copy
import difflib
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudra.convert.converter import ConvertReport, convert_paths
from gpudra.convert.planner import ConvertOptions
from gpudra.dra.validate import StrictValidator, UnavailableError, semantic_errors
from gpudra.dra.versions import TargetVersion
from tests.oracle.client import Oracle, documents

from .entitlements import whole_pod_problems

TARGET = TargetVersion.parse("1.37")
OPTIONS = ConvertOptions(target=TARGET)
try:
    VALIDATOR: StrictValidator | None = StrictValidator(TARGET)
    VALIDATOR.errors({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"}})
except UnavailableError:  # pragma: no cover - kubernetes-validate is a test extra
    VALIDATOR = None

# Reproducible in CI: no example database, derandomized generation, no per-example deadline
# (the first example builds the schema validators). ~0.07 s per example on a 2-core box.
PROPERTY_SETTINGS = settings(
    max_examples=300,
    derandomize=True,
    database=None,
    deadline=None,
    report_multiple_bugs=False,  # shrink one failure well rather than several slowly
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

GPU = "nvidia.com/gpu"
MIG_RESOURCES = {"nvidia.com/mig-1g.10gb": "1g.10gb", "nvidia.com/mig-1g.10gb.me": "1g.10gb+me"}
GPU_CLASS, MIG_CLASS = "gpu.nvidia.com", "mig.nvidia.com"
HIDE_ENV = "NVIDIA_VISIBLE_DEVICES"
TOLERATION = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
_DEVICE = re.compile(r"^nvidia\.com/(?:gpu|mig-.+)$")

# GFD nodeSelector values and whether the converter should move them into the claim. This is
# the oracle's own table (from the GFD / DRA driver docs), not gpudra's selector module.
GFD_LABELS: dict[str, list[tuple[str, bool]]] = {
    "nvidia.com/gpu.product": [("NVIDIA-A100-SXM4-80GB", True), ("NVIDIA-H100-80GB-HBM3", True),
                               ("Tesla-T4", True), ("Tesla-T4-SHARED", True),
                               ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", True)],
    "nvidia.com/gpu.memory": [("81920", True), ("40960", True), ("081920", False)],
    "nvidia.com/gpu.family": [("ampere", True), ("hopper", True), ("ada-lovelace", True),
                              ("tesla", False)],
    "nvidia.com/gpu.count": [("8", False)],
}
PLAIN_LABELS = [("kubernetes.io/arch", "amd64"), ("node.kubernetes.io/instance-type", "p4d.24xlarge"),
                ("example.com/enabled", "yes"), ("example.com/mode", "0777"),
                ("example.com/power", "on"), ("cloud.google.com/gke-accelerator", "nvidia-tesla-t4"),
                ("example.com/empty", ""), ("example.com/ratio", "1.5")]
COMMENTS = ["# nightly fine-tune", "# GPU node pool", "# was: nvidia.com/gpu: 2", "#tight",
            "# limits: {}", "# see NVIDIA_VISIBLE_DEVICES", "# requests:", "# nodeSelector: x",
            "# - name: gpu"]
# Own-line comments; `|` marks one written at column 0 (a commented-out line).
OWN_LINE = COMMENTS + ["|#        nvidia.com/gpu: 2", "|#- name: old", "|#"]


# --- a formatting-aware model of the text we write ------------------------------------------

@dataclass
class Sc:
    text: str  # exactly as written: quoting included


@dataclass
class Lit:
    lines: list[str]  # a `|` literal block's lines


@dataclass
class Ent:
    key: str  # as written (maybe quoted)
    value: Node
    comment: str = ""  # end-of-line comment with its leading spaces, or ""
    before: tuple[str, ...] = ()  # own-line comments ("# ...") and blank lines ("") before it
    volatile: bool = False  # the entry may be rewritten or deleted


@dataclass
class Map:
    entries: list[Ent]
    flow: bool = False
    removable: bool = False  # may be emptied and pruned: key line and inner comments may go


@dataclass
class Itm:
    value: Node
    before: tuple[str, ...] = ()
    volatile: bool = False


@dataclass
class Seq:
    items: list[Itm]
    flow: bool = False
    removable: bool = False
    offset: int = 0  # columns between the parent key and the dashes


Node = Sc | Lit | Map | Seq


def flow_text(v: Node) -> str:
    if isinstance(v, Sc):
        return v.text
    if isinstance(v, Map):
        return "{" + ", ".join(f"{e.key}: {flow_text(e.value)}" for e in v.entries) + "}"
    if isinstance(v, Seq):
        return "[" + ", ".join(flow_text(i.value) for i in v.items) + "]"
    raise TypeError(v)


def has_volatile(v: Node) -> bool:
    if isinstance(v, Map):
        return v.removable or any(e.volatile or has_volatile(e.value) for e in v.entries)
    if isinstance(v, Seq):
        return v.removable or any(i.volatile or has_volatile(i.value) for i in v.items)
    return False


class Writer:
    """Block YAML lines, each paired with its volatility (see the module docstring)."""

    def __init__(self, indent: int, dash_pad: int = 1) -> None:
        self.indent = indent
        self.dash_pad = dash_pad  # spaces after a dash: `- name` or `-   name`
        self.lines: list[tuple[str, bool]] = []

        self.merge_next = False

    def add(self, text: str, volatile: bool) -> None:
        self.lines.append((text, volatile or self.merge_next))
        self.merge_next = self.merge_next and not text.strip()  # blank lines go with it

    def mapping(self, m: Map, col: int, vol: bool, cvol: bool, first: str | None = None) -> None:
        """`vol`: an ancestor may go; `cvol`: comments here may go (a removable ancestor)."""
        cvol = cvol or m.removable
        for i, e in enumerate(m.entries):
            evol = vol or e.volatile
            on_dash = i == 0 and first is not None
            for c in e.before:
                self.add(self.own_line(c, col - 1 - self.dash_pad if on_dash else col),
                         cvol or evol and on_dash)
            prefix = first if on_dash else " " * col
            head = f"{prefix}{e.key}:"
            v = e.value
            removable_head = isinstance(v, (Map, Seq)) and v.removable
            if isinstance(v, Sc) or (isinstance(v, (Map, Seq)) and v.flow):
                self.add(f"{head} {flow_text(v)}{e.comment}", evol or has_volatile(v))
            elif isinstance(v, Lit):
                self.add(f"{head} |{e.comment}", evol)
                for line in v.lines:
                    self.add(" " * (col + self.indent) + line if line else "", evol)
            elif isinstance(v, Map):
                self.add(head + e.comment, evol or removable_head)
                self.mapping(v, col + self.indent, evol, cvol)
            else:
                self.add(head + e.comment, evol or removable_head)
                self.sequence(v, col + v.offset, evol, cvol)
            if on_dash and (evol or removable_head):
                # `- env: ...` removed: the next line moves up onto the dash line.
                self.merge_next = True

    def sequence(self, q: Seq, col: int, vol: bool, cvol: bool) -> None:
        cvol = cvol or q.removable
        for it in q.items:
            ivol = vol or it.volatile
            for c in it.before:
                self.add(self.own_line(c, col), cvol)
            v = it.value
            dash = " " * col + "-" + " " * self.dash_pad
            if isinstance(v, Map) and not v.flow:
                self.mapping(v, len(dash), ivol, cvol or it.volatile, first=dash)
            else:
                self.add(dash + flow_text(v), ivol or has_volatile(v))

    @staticmethod
    def own_line(comment: str, col: int) -> str:
        """A blank line, or a comment at `col` (at column 0 when it starts with `|`)."""
        if comment.startswith("|"):
            return comment[1:]
        return " " * col + comment if comment else ""


# --- scalars -----------------------------------------------------------------------------------

_INDICATORS = set("-?:,[]{}#&*!|>'\"%@`")
# What go-yaml v2 (sigs.k8s.io/yaml: kubectl and the API server) resolves to a bool or a number
# where PyYAML keeps a string: `y`/`n`, and digits with leading zeros such as `081920`, which
# it reads as a float (the Go oracle found the second: nodeSelector `081920` is refused with
# "cannot unmarshal number into ... of type string").
_GO_YAML_BOOL = frozenset({"y", "Y", "n", "N"})
_GO_YAML_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")


def plain_ok(text: str, in_flow: bool) -> bool:
    if not text or text != text.strip() or text[0] in _INDICATORS:
        return False
    if text in _GO_YAML_BOOL or _GO_YAML_FLOAT.match(text):
        return False
    if ": " in text or " #" in text or text.endswith(":"):
        return False
    if in_flow and any(c in text for c in ",[]{}"):
        return False
    try:
        return yaml.safe_load(f"k: {text}") == {"k": text}
    except yaml.YAMLError:
        return False


@st.composite
def s_str(draw, value: str, in_flow: bool = False) -> str:
    """A string scalar as text: plain when YAML 1.1 reads it back as the same string."""
    styles = ["double", "single"] + (["plain"] * 4 if plain_ok(value, in_flow) else [])
    style = draw(st.sampled_from(styles))
    if style == "plain":
        return value
    if style == "single":
        return "'" + value.replace("'", "''") + "'"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@st.composite
def s_count(draw, value: int | str) -> str:
    """A quantity (int-or-string in the API): `2` or `"2"`."""
    if isinstance(value, int):
        return draw(st.sampled_from([str(value)] * 3 + [f'"{value}"', f"'{value}'"]))
    return draw(s_str(value))


@st.composite
def decor(draw, allow_before: bool = True) -> dict:
    """Random comments: before the entry (own lines, blank lines) and at the end of its line."""
    before: tuple[str, ...] = ()
    if allow_before and draw(st.integers(0, 9)) == 0:
        before = tuple(draw(st.lists(st.sampled_from(OWN_LINE + [""]), min_size=1, max_size=2)))
    comment = ""
    if draw(st.integers(0, 9)) == 0:
        comment = draw(st.sampled_from(["  ", " "])) + draw(st.sampled_from(COMMENTS))
    return {"before": before, "comment": comment}


@st.composite
def ent(draw, key: str, value: Node, *, in_flow: bool = False, volatile: bool = False,
        quote_key: bool = False) -> Ent:
    quote_key = quote_key or draw(st.integers(0, 19)) == 0  # JSON-ish files quote every key
    key_text = draw(s_str(key, in_flow)) if quote_key and key[:1] not in "'\"" else key
    extra = {} if in_flow else draw(decor())
    return Ent(key_text, value, volatile=volatile, **extra)


@dataclass(frozen=True)
class Fmt:
    indent: int
    seq_mode: str  # flush | indented | mixed
    dash_pad: int = 1  # 3 gives the `-   name: x` style of 4-space files


@st.composite
def seq_offset(draw, fmt: Fmt) -> int:
    if fmt.seq_mode == "flush":
        return 0
    if fmt.seq_mode == "indented":
        return fmt.indent
    return draw(st.sampled_from([0, fmt.indent]))


# --- containers and pod specs -------------------------------------------------------------------

@dataclass
class DevicePlan:
    resource: str
    count: int
    both: bool  # also in requests
    blocker: str | None = None  # "differ" | "requests-only": the planner must refuse


@st.composite
def resource_map(draw, items: list[tuple[str, Any, bool]], in_flow: bool) -> Map:
    """`items`: (key, value text, volatile). Removable when every entry is volatile."""
    flow = in_flow or draw(st.integers(0, 4)) == 0
    entries = []
    for key, text, volatile in items:
        entries.append(draw(ent(key, Sc(text), in_flow=flow, volatile=volatile,
                                quote_key=draw(st.integers(0, 6)) == 0)))
    return Map(entries, flow=flow, removable=all(v for _, _, v in items))


@st.composite
def resources(draw, device: DevicePlan | None, in_flow: bool) -> Map | None:
    limits: list[tuple[str, Any, bool]] = []
    requests: list[tuple[str, Any, bool]] = []
    if draw(st.booleans()):
        cpu = draw(st.sampled_from([1, 2, "500m", "4"]))
        limits.append(("cpu", draw(s_count(cpu)), False))
        if draw(st.booleans()):
            requests.append(("cpu", draw(s_count(cpu)), False))
    if draw(st.booleans()):
        mem = draw(st.sampled_from(["4Gi", "512Mi", "120Gi"]))
        limits.append(("memory", draw(s_count(mem)), False))
        if draw(st.booleans()):
            requests.append(("memory", draw(s_count(mem)), False))
    if device is not None:
        count_text = draw(s_count(device.count))
        gpu = (device.resource, count_text, True)
        if device.blocker != "requests-only":
            limits.insert(draw(st.integers(0, len(limits))), gpu)
        if device.both or device.blocker:
            other = device.count + 1 if device.blocker == "differ" else device.count
            requests.insert(draw(st.integers(0, len(requests))),
                            (device.resource, draw(s_count(other)), True))
    if not limits and not requests:
        return None
    flow = in_flow or draw(st.integers(0, 5)) == 0
    parts = [("limits", limits), ("requests", requests)]
    if draw(st.booleans()):
        parts.reverse()
    entries = [draw(ent(name, draw(resource_map(items, flow)), in_flow=flow))
               for name, items in parts if items]
    return Map(entries, flow=flow)


@st.composite
def env_list(draw, gpu: bool, fmt: Fmt) -> Seq | None:
    items: list[Itm] = []
    flow = draw(st.integers(0, 6)) == 0
    pool = [("LOG_LEVEL", "info"), ("OMP_NUM_THREADS", "8"), ("FEATURE", "on"), ("DEBUG", "no")]
    for name, value in draw(st.lists(st.sampled_from(pool), unique=True, max_size=2)):
        items.append(draw(env_item(name, value, flow, volatile=False)))
    if draw(st.integers(0, 2)) == 0:
        hide = draw(st.sampled_from(["all", "void", "none", "0", "0,1"]))
        items.insert(draw(st.integers(0, len(items))), draw(env_item(HIDE_ENV, hide, flow, gpu)))
    if not items:
        return None
    return Seq(items, flow=flow, removable=all(i.volatile for i in items),
               offset=draw(seq_offset(fmt)))


@st.composite
def env_item(draw, name: str, value: str, flow: bool, volatile: bool) -> Itm:
    flow = flow or draw(st.integers(0, 5)) == 0
    entries = [draw(ent("name", Sc(draw(s_str(name, flow))), in_flow=flow)),
               draw(ent("value", Sc(draw(s_str(value, flow))), in_flow=flow))]
    entries[0].before = ()
    before = () if flow else draw(decor())["before"]
    return Itm(Map(entries, flow=flow), before=before, volatile=volatile)


@st.composite
def container(draw, name: str, device: DevicePlan | None, fmt: Fmt) -> Map:
    image = draw(st.sampled_from(["ghcr.io/example/bert:7", "nvcr.io/nvidia/pytorch:24.05-py3",
                                  "busybox", "registry.local:5000/app@sha256:" + "a" * 64]))
    fields: list[Ent] = [draw(ent("image", Sc(draw(s_str(image))))),
                         draw(ent("name", Sc(draw(s_str(name)))))]
    if draw(st.integers(0, 3)) == 0:
        args = ["--epochs", "3", "--flag=yes"]
        fields.append(draw(ent("args", Seq([Itm(Sc(draw(s_str(a, True)))) for a in args],
                                           flow=True))))
    env = draw(env_list(device is not None, fmt))
    if env is not None:
        fields.append(draw(ent("env", env)))
    res = draw(resources(device, False))
    if res is not None:
        fields.append(draw(ent("resources", res)))
    if draw(st.integers(0, 4)) == 0:
        fields.append(draw(ent("imagePullPolicy", Sc("IfNotPresent"))))
    # Usually `- name:` first, as people write; sometimes any order (a key on the dash line).
    if draw(st.integers(0, 4)) == 0:
        fields = draw(st.permutations(fields))
    else:
        fields = [fields[1], fields[0]] + fields[2:]
    return Map(list(fields), flow=False)


@st.composite
def node_selector(draw, fmt: Fmt) -> Map | None:
    picks: list[tuple[str, str, bool]] = []
    for label in draw(st.lists(st.sampled_from(sorted(GFD_LABELS)), unique=True, max_size=3)):
        value, moves = draw(st.sampled_from(GFD_LABELS[label]))
        picks.append((label, value, moves))
    for label, value in draw(st.lists(st.sampled_from(PLAIN_LABELS), unique=True, max_size=2)):
        picks.append((label, value, False))
    if not picks:
        return None
    picks = draw(st.permutations(picks))
    flow = draw(st.integers(0, 3)) == 0
    entries = [draw(ent(k, Sc(draw(s_str(v, flow))), in_flow=flow, volatile=moves,
                        quote_key=draw(st.integers(0, 8)) == 0))
               for k, v, moves in picks]
    return Map(entries, flow=flow, removable=all(m for _, _, m in picks))


@st.composite
def tolerations(draw, fmt: Fmt) -> Seq:
    items = []
    for key in draw(st.lists(st.sampled_from([GPU, "dedicated", "nvidia.com/mig"]),
                             unique=True, min_size=1, max_size=2)):
        flow = draw(st.integers(0, 3)) == 0
        entries = [draw(ent("key", Sc(draw(s_str(key, flow))), in_flow=flow)),
                   draw(ent("operator", Sc("Exists"), in_flow=flow)),
                   draw(ent("effect", Sc("NoSchedule"), in_flow=flow))]
        if not flow:
            entries[0].before = ()
        items.append(Itm(Map(entries, flow=flow)))
    return Seq(items, offset=draw(seq_offset(fmt)))


@st.composite
def device_plan(draw) -> DevicePlan:
    kind = draw(st.sampled_from(["gpu", "gpu", "gpu", "mig"]))
    if kind == "gpu":
        resource, count = GPU, draw(st.integers(1, 8))
    else:
        resource, count = draw(st.sampled_from(sorted(MIG_RESOURCES))), draw(st.integers(1, 2))
    return DevicePlan(resource, count, draw(st.booleans()))


@st.composite
def pod_spec(draw, fmt: Fmt, kind: str, allow_blocker: bool) -> tuple[Map, bool]:
    """A pod spec and whether it carries a request the planner must refuse."""
    n, n_init = draw(st.integers(1, 3)), draw(st.integers(0, 1))
    names = draw(st.lists(st.sampled_from(["trainer", "main", "worker", "pytorch", "sidecar",
                                           "eval", "app", "x", "init", "setup"]),
                          unique=True, min_size=n + n_init, max_size=n + n_init))
    devices = [draw(st.one_of(st.none(), device_plan())) for _ in names]
    if all(d is None for d in devices) and draw(st.integers(0, 5)) != 0:
        devices[draw(st.integers(0, len(names) - 1))] = draw(device_plan())
    if draw(st.integers(0, 4)) == 0:  # count 0 asks for nothing: left alone
        i = draw(st.integers(0, len(names) - 1))
        if devices[i] is None:
            devices[i] = DevicePlan(GPU, 0, draw(st.booleans()))
    blocked = False
    if allow_blocker and draw(st.integers(0, 11)) == 0:
        i = draw(st.integers(0, len(names) - 1))
        devices[i] = DevicePlan(GPU, draw(st.integers(1, 4)), True,
                                draw(st.sampled_from(["differ", "requests-only"])))
        blocked = True
    conts = [draw(container(name, dev, fmt)) for name, dev in zip(names, devices)]
    fields: list[Ent] = []
    off = draw(seq_offset(fmt))
    fields.append(draw(ent("containers", Seq([Itm(c, **_item_decor(draw)) for c in conts[:n]],
                                             offset=off))))
    if n_init:
        fields.append(draw(ent("initContainers", Seq([Itm(c) for c in conts[n:]],
                                                     offset=draw(seq_offset(fmt))))))
    if kind in ("Job", "CronJob", "PyTorchJob") or draw(st.booleans()):
        policy = {"Job": "Never", "CronJob": "OnFailure", "PyTorchJob": "OnFailure"}.get(kind,
                                                                                       "Always")
        if kind in ("Deployment", "StatefulSet"):
            policy = "Always"
        fields.append(draw(ent("restartPolicy", Sc(policy))))
    selector = draw(st.one_of(st.none(), node_selector(fmt)))
    if selector is not None:
        fields.append(draw(ent("nodeSelector", selector)))
    if draw(st.booleans()):
        fields.append(draw(ent("tolerations", draw(tolerations(fmt)))))
    if draw(st.integers(0, 3)) == 0:
        fields.append(draw(ent("terminationGracePeriodSeconds", Sc("30"))))
    return Map(list(draw(st.permutations(fields)))), blocked


def _item_decor(draw) -> dict:
    return {"before": draw(decor())["before"]}


# --- whole documents ----------------------------------------------------------------------------

@st.composite
def metadata(draw, name: str, namespace: str | None, labels: bool) -> Map:
    entries = [draw(ent("name", Sc(draw(s_str(name)))))]
    if namespace:
        entries.append(draw(ent("namespace", Sc(draw(s_str(namespace))))))
    if labels:
        flow = draw(st.integers(0, 3)) == 0
        pairs = [("app", name)] + draw(st.lists(st.sampled_from(
            [("team", "nlp"), ("gpu", "yes"), ("tier", "0777"), ("spot", "off")]),
            unique=True, max_size=2))
        entries.append(draw(ent("labels", Map(
            [draw(ent(k, Sc(draw(s_str(v, flow))), in_flow=flow)) for k, v in pairs],
            flow=flow))))
    return Map(entries)


def _m(*entries: Ent) -> Map:
    return Map(list(entries))


@st.composite
def workload(draw, fmt: Fmt) -> tuple[Map, bool]:
    kind = draw(st.sampled_from(["Pod", "Deployment", "Job", "CronJob", "StatefulSet",
                                 "PyTorchJob"]))
    name = draw(st.sampled_from(["train-bert", "infer", "a", "llm-serving", "nightly-eval"]))
    namespace = draw(st.sampled_from([None, "nlp", "default"]))
    def E(k: Any, v: Any) -> Any:
        return draw(ent(k, v))

    api = {"Pod": "v1", "Deployment": "apps/v1", "StatefulSet": "apps/v1", "Job": "batch/v1",
           "CronJob": "batch/v1", "PyTorchJob": "kubeflow.org/v1"}[kind]
    blocked = False

    def pod(labels: bool) -> Map:
        nonlocal blocked
        spec, b = draw(pod_spec(fmt, kind, allow_blocker=not blocked))
        blocked |= b
        parts = [E("spec", spec)]
        if labels:
            flow = draw(st.booleans())
            parts.insert(0, E("metadata", _m(E("labels", Map(
                [draw(ent("app", Sc(name), in_flow=flow))], flow=flow)))))
        return Map(parts)

    if kind == "Pod":
        spec, blocked = draw(pod_spec(fmt, kind, allow_blocker=True))
    elif kind in ("Deployment", "StatefulSet"):
        entries = [E("replicas", Sc(str(draw(st.integers(0, 4))))),
                   E("selector", _m(E("matchLabels", _m(E("app", Sc(name)))))),
                   E("template", pod(True))]
        if kind == "StatefulSet":
            entries.insert(0, E("serviceName", Sc(name)))
        spec = Map(entries)
    elif kind == "Job":
        spec = _m(E("backoffLimit", Sc("2")), E("template", pod(draw(st.booleans()))))
    elif kind == "CronJob":
        spec = _m(E("schedule", Sc(draw(s_str("*/30 * * * *")))),
                  E("jobTemplate", _m(E("spec", _m(E("template", pod(False)))))))
    else:
        replicas = []
        for role in draw(st.sampled_from([["Master"], ["Worker"], ["Master", "Worker"]])):
            replicas.append(E(role, _m(E("replicas", Sc("1")),
                                       E("restartPolicy", Sc("OnFailure")),
                                       E("template", pod(False)))))
        spec = _m(E("pytorchReplicaSpecs", Map(replicas)))
    top = [E("apiVersion", Sc(api)), E("kind", Sc(kind)),
           E("metadata", draw(metadata(name, namespace, draw(st.booleans())))), E("spec", spec)]
    if draw(st.integers(0, 5)) == 0:
        top[0], top[1] = top[1], top[0]
    return Map(top), blocked


@st.composite
def config_map(draw, name: str) -> Map:
    def E(k: Any, v: Any) -> Any:
        return draw(ent(k, v))

    data = [E(HIDE_ENV, Sc("all")),
            E(draw(s_str("nvidia.com/gpu")), Sc(draw(s_str("1")))),
            E("enabled", Sc(draw(s_str("yes")))),
            E("limits", Sc(draw(s_str("nvidia.com/gpu: 1")))),
            E("script.sh", Lit(["#!/bin/sh", "  nvidia-smi -L  # nvidia.com/gpu", "",
                                "resources:", "  limits:", "    nvidia.com/gpu: 1"]))]
    data = draw(st.lists(st.sampled_from(data), unique_by=id, min_size=1, max_size=5))
    return _m(E("apiVersion", Sc("v1")), E("kind", Sc("ConfigMap")),
              E("metadata", _m(E("name", Sc(name)))), E("data", Map(list(data))))


@dataclass
class Case:
    raw: bytes
    text: str  # without BOM
    lines: list[tuple[str, bool]]  # text's lines (no newline) with volatility
    bom: bool
    crlf: bool
    before: str | None  # unrelated documents' exact text (with their `---` line)
    after: str | None
    blocked: tuple[bool, ...]  # per workload: it carries a request the planner must refuse
    extras: dict = field(default_factory=dict)


@st.composite
def manifests(draw) -> Case:
    indent = draw(st.sampled_from([2, 4]))
    fmt = Fmt(indent, draw(st.sampled_from(["flush", "indented", "mixed"])),
              draw(st.sampled_from([1, 1, 3])) if indent == 4 else 1)
    workloads = [draw(workload(fmt)) for _ in range(draw(st.sampled_from([1, 1, 1, 2])))]
    cm_before = draw(config_map("settings")) if draw(st.booleans()) else None
    cm_after = draw(config_map("more-settings")) if draw(st.integers(0, 2)) == 0 else None

    segments: list[tuple[str, list[tuple[str, bool]]]] = []
    docs = [("before", cm_before)] + [(f"workload{i}", wl) for i, (wl, _) in enumerate(workloads)]
    for role, doc in docs + [("after", cm_after)]:
        if doc is None:
            continue
        w = Writer(fmt.indent, fmt.dash_pad)
        if segments or draw(st.integers(0, 3)) == 0:
            w.add(draw(st.sampled_from(["---", "---", "--- # next", "---  "])), False)
        if draw(st.integers(0, 5)) == 0:
            w.add(Writer.own_line(draw(st.sampled_from(OWN_LINE)), 0), False)
        w.mapping(doc, 0, False, False)
        if draw(st.integers(0, 5)) == 0:
            w.add("", False)
        segments.append((role, w.lines))

    crlf = draw(st.integers(0, 3)) == 0
    nl = "\r\n" if crlf else "\n"
    final_newline = draw(st.integers(0, 4)) != 0
    trailing = draw(st.integers(0, 3)) == 0
    lines: list[tuple[str, bool]] = []
    spans: dict[str, tuple[int, int]] = {}
    for role, seg in segments:
        start = len(lines)
        for text, vol in seg:
            if trailing and draw(st.integers(0, 4)) == 0:
                text += draw(st.sampled_from([" ", "  "]))
            lines.append((text, vol))
        spans[role] = (start, len(lines))
    if lines[-1][0] == "":
        final_newline = True  # "no final newline" after an empty last line is no such line
    text = nl.join(t for t, _ in lines) + (nl if final_newline else "")
    bom = draw(st.integers(0, 5)) == 0

    def seg_text(role: str) -> str | None:
        if role not in spans:
            return None
        a, b = spans[role]
        last = b == len(lines)
        return nl.join(t for t, _ in lines[a:b]) + (nl if (final_newline or not last) else "")

    raw = (("\ufeff" if bom else "") + text).encode("utf-8")
    return Case(raw, text, lines, bom, crlf, seg_text("before"), seg_text("after"),
                tuple(b for _, b in workloads))


# --- the oracle ------------------------------------------------------------------------------------

def pod_spec_paths(obj: dict) -> list[tuple]:
    kind = obj["kind"]
    if kind == "Pod":
        return [("spec",)]
    if kind in ("Deployment", "StatefulSet", "Job"):
        return [("spec", "template", "spec")]
    if kind == "CronJob":
        return [("spec", "jobTemplate", "spec", "template", "spec")]
    if kind == "PyTorchJob":
        return [("spec", "pytorchReplicaSpecs", role, "template", "spec")
                for role in obj["spec"]["pytorchReplicaSpecs"]]
    return []


def get(obj: Any, path: tuple) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def containers_of(spec: dict) -> list[dict]:
    return list(spec.get("initContainers") or []) + list(spec.get("containers") or [])


def device_requests(c: dict) -> list[tuple[str, int]]:
    """(resource, count) of the container's non-zero NVIDIA device requests, from limits."""
    limits = (c.get("resources") or {}).get("limits") or {}
    return [(k, int(v)) for k, v in limits.items() if _DEVICE.match(k) and int(v) > 0]


def gfd_moves(key: str, value: Any, whole_gpus: bool = True) -> bool:
    # A MIG single-strategy product (`...-MIG-<profile>`) turns whole-GPU requests into MIG
    # requests; next to MIG requests alone it says nothing convert can use, and stays.
    if is_mig_single(key, value) and not whole_gpus:
        return False
    return any(v == value and moves for v, moves in GFD_LABELS.get(key, ()))


def is_mig_single(key: str, value: Any) -> bool:
    return key == "nvidia.com/gpu.product" and "-MIG-" in str(value)


def mig_single(spec: dict) -> str | None:
    """The MIG profile of a MIG single-strategy product label, if the pod selects one."""
    for key, value in (spec.get("nodeSelector") or {}).items():
        if is_mig_single(key, value):
            return str(value).rpartition("-MIG-")[2]
    return None


def whole_gpus(spec: dict) -> bool:
    return any(r == GPU for c in containers_of(spec) for r, _ in device_requests(c))


def expected_workload(obj: dict) -> dict:
    """What the workload must read as after conversion, without the added claims."""
    out = copy.deepcopy(obj)
    for path in pod_spec_paths(out):
        spec = get(out, path)
        gpu = [c for c in containers_of(spec) if device_requests(c)]
        if not gpu:
            continue
        whole = whole_gpus(spec)
        for c in gpu:
            res = c["resources"]
            asked = dict(device_requests(c))
            for section in ("limits", "requests"):
                if section in res:
                    for key in [k for k in res[section] if k in asked]:
                        del res[section][key]
                    if not res[section]:
                        del res[section]
            if "env" in c:
                c["env"] = [e for e in c["env"] if e.get("name") != HIDE_ENV]
                if not c["env"]:
                    del c["env"]
        # The toleration the ExtendedResourceToleration admission plugin gave pods that
        # request nvidia.com/gpu: a converted pod requests none, so convert writes it.
        if whole and not any(t.get("key") == GPU for t in spec.get("tolerations") or []):
            spec["tolerations"] = [*(spec.get("tolerations") or []), dict(TOLERATION)]
        selector = spec.get("nodeSelector")
        if selector:
            for key in [k for k, v in selector.items() if gfd_moves(k, v, whole)]:
                del selector[key]
            if not selector:
                del spec["nodeSelector"]
    return out


def check_converted(before: dict, after: dict, templates: dict) -> set:
    """Property 2 for one converted workload. `templates`: (namespace, name) -> template.
    Returns the templates it uses."""
    namespace = before["metadata"].get("namespace")
    stripped = copy.deepcopy(after)
    used_templates = set()
    for path in pod_spec_paths(before):
        spec_in, spec_out = get(before, path), get(stripped, path)
        gpu_in = {c["name"]: device_requests(c) for c in containers_of(spec_in)
                  if device_requests(c)}
        pod_claims = {e["name"]: e for e in spec_out.get("resourceClaims") or []}
        referenced: set[str] = set()
        used_requests: set[str] = set()
        single = mig_single(spec_in) if whole_gpus(spec_in) else None
        whole = whole_gpus(spec_in)
        for c in containers_of(spec_out):
            if c["name"] not in gpu_in:
                assert "claims" not in (c.get("resources") or {}), c["name"]
                continue
            claims = c["resources"].pop("claims")
            names = [ref["name"] for ref in claims]
            assert len(names) == len(set(names)), names  # a list keyed by name (SSA)
            (resource, count), = gpu_in[c["name"]]
            seen = 0
            for ref in claims:
                assert set(ref) <= {"name", "request"}, ref
                entry = pod_claims[ref["name"]]
                referenced.add(ref["name"])
                key = (namespace, entry["resourceClaimTemplateName"])
                template = templates[key]
                used_templates.add(key)
                requests = {r["name"]: r for r in template["spec"]["spec"]["devices"]["requests"]}
                visible = [ref["request"]] if "request" in ref else list(requests)
                for name in visible:
                    used_requests.add((key, name))
                    exactly = requests[name]["exactly"]
                    seen += exactly.get("count", 1)
                    mig = resource in MIG_RESOURCES or (resource == GPU and single is not None)
                    assert exactly["deviceClassName"] == (MIG_CLASS if mig else GPU_CLASS)
                    assert exactly.get("allocationMode", "ExactCount") == "ExactCount"
                    cel = [s["cel"]["expression"] for s in exactly.get("selectors", [])]
                    if resource in MIG_RESOURCES:
                        assert any(f'"{MIG_RESOURCES[resource]}"' in e for e in cel), cel
                    elif mig:
                        assert any(f'profile == "{single}"' in e for e in cel), cel
                    for label, value in (spec_in.get("nodeSelector") or {}).items():
                        if gfd_moves(label, value, whole) and \
                                not (mig and label.endswith("gpu.memory")):
                            needle = value.removesuffix("-SHARED").partition("-MIG-")[0]
                            assert any(needle in e for e in cel), (label, value, cel)
            # Every container sees exactly the devices it asked for; init containers share
            # (a piece of) an app container's devices instead of adding their own.
            assert seen == count, (c["name"], seen, count)
        if gpu_in:
            # every claim entry referenced, and every request of its template used
            assert referenced == set(pod_claims), (referenced, pod_claims)
            for name in referenced:
                key = (namespace, pod_claims[name]["resourceClaimTemplateName"])
                names = {r["name"] for r in templates[key]["spec"]["spec"]["devices"]["requests"]}
                assert {(key, n) for n in names} <= used_requests, (names, used_requests)
            spec_out.pop("resourceClaims")
        else:
            assert "resourceClaims" not in spec_out
    assert stripped == expected_workload(before)
    return used_templates


# --- running the converter -----------------------------------------------------------------------

def convert_bytes(raw: bytes) -> tuple[ConvertReport, bytes]:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "manifest.yaml"
        path.write_bytes(raw)
        report = convert_paths([str(path)], OPTIONS)  # property 5: never raises
    assert not report.errors, report.errors
    assert len(report.changes) <= 1
    return report, (report.changes[0].new if report.changes else raw)


def load_all(raw: bytes) -> list[dict]:
    text = raw.decode("utf-8").removeprefix("\ufeff")
    return [d for d in yaml.safe_load_all(text) if d is not None]


def without_new_documents(lines: list[str]) -> list[str]:
    """The output's lines minus the documents convert added (the generator writes none of
    resource.k8s.io), so stable lines cannot be matched against lines of new objects."""
    out: list[str] = []
    skipping = False
    for i, line in enumerate(lines):
        if line.startswith("---"):
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            skipping = nxt.startswith("apiVersion: resource.k8s.io/")
        if not skipping:
            out.append(line)
    return out


def stable_lines_kept(case: Case, out_text: str) -> None:
    """Every stable input line is in the output, unchanged and in order: the stable lines are a
    subsequence of the output's lines (greedy matching decides that exactly; a diff heuristic
    such as SequenceMatcher can pair a line with a look-alike and report false losses)."""
    old = [t for t, _ in case.lines]
    new = without_new_documents(out_text.split("\r\n" if case.crlf else "\n"))
    lost: list[str] = []
    at = 0
    for i, (line, volatile) in enumerate(case.lines):
        if volatile:
            continue
        try:
            at = new.index(line, at) + 1
        except ValueError:
            lost.append(f"{i + 1}: {line!r}")
    if lost:
        diff = "\n".join(difflib.unified_diff(old, new, "input", "output", lineterm=""))
        raise AssertionError("stable lines changed or lost:\n" + "\n".join(lost) + "\n" + diff)


@pytest.mark.skipif(VALIDATOR is None, reason="kubernetes-validate is not installed")
@PROPERTY_SETTINGS
@given(case=manifests())
def test_convert_properties(case: Case, oracle: Oracle) -> None:
    check_case(case, oracle)


def strictly_decoded(text: str, oracle: Oracle) -> None:
    """Every object of `text` decodes with Kubernetes' own strict decoder (the Go oracle), as
    the API server decodes a YAML body with fieldValidation=Strict (PyTorchJob: unregistered)."""
    for document, data in documents(text):
        decoded = oracle.decode(document)
        assert decoded.registered or data["kind"] == "PyTorchJob", data["kind"]
        assert decoded.errors == (), (data["kind"], decoded.errors, document)


def check_case(case: Case, oracle: Oracle) -> None:
    docs_in = load_all(case.raw)
    for doc in docs_in:  # the generator writes valid manifests (PyTorchJob: no schema)
        if doc["kind"] != "PyTorchJob":
            assert VALIDATOR.errors(doc) == [], (doc["kind"], VALIDATOR.errors(doc))
    strictly_decoded(case.raw.decode("utf-8"), oracle)

    report, out = convert_bytes(case.raw)

    # 5. converted or blocked with a reason
    results = list(report.results)
    workloads = [d for d in docs_in if d["kind"] != "ConfigMap"]
    assert len(workloads) == len(case.blocked)
    expected: list[str | None] = []
    for wl_in, blocked in zip(workloads, case.blocked):
        has_gpu = any(device_requests(c) for p in pod_spec_paths(wl_in)
                      for c in containers_of(get(wl_in, p)))
        expected.append("blocked" if blocked else "rewrite" if has_gpu else None)
    assert [r.strategy for r in results] == [e for e in expected if e], results
    assert all(r.reason for r in results if r.strategy == "blocked"), results
    if "rewrite" not in expected:
        assert out == case.raw  # nothing in the file needs a change
        return
    converted = iter(e == "rewrite" for e in expected)

    # 1. parses; DRA objects and the workload validate strictly
    docs_out = load_all(out)
    out_text = out.decode("utf-8")
    dra = [d for d in docs_out if d["apiVersion"].startswith("resource.k8s.io/")]
    others = [d for d in docs_out if not d["apiVersion"].startswith("resource.k8s.io/")]
    for doc in docs_out:
        if doc["kind"] == "PyTorchJob":
            assert semantic_errors(doc) == []
        else:
            assert VALIDATOR.errors(doc) == [], (doc["kind"], VALIDATOR.errors(doc))
    strictly_decoded(out_text, oracle)
    assert all(d["kind"] == "ResourceClaimTemplate" for d in dra)

    # 2. semantics, against the oracle, and the whole-pod oracle of entitlements.py
    assert whole_pod_problems(docs_in, docs_out) == []
    assert len(others) == len(docs_in)
    templates = {(d["metadata"].get("namespace"), d["metadata"]["name"]): d for d in dra}
    assert len(templates) == len(dra)
    used: set = set()
    for before, after in zip(docs_in, others):
        if before["kind"] == "ConfigMap" or not next(converted):
            assert after == before
        else:
            used |= check_converted(before, after, templates)
    assert used == set(templates), (used, set(templates))

    # 3. faithfulness
    assert out_text.startswith("\ufeff") == case.bom
    body = out_text.removeprefix("\ufeff")
    if case.crlf:
        assert body.count("\n") == body.count("\r\n")
    else:
        assert "\r" not in body
    if case.before is not None:
        assert body.startswith(case.before)
    if case.after is not None:
        assert body.endswith(case.after)
    stable_lines_kept(case, body)

    # 4. fixed point
    again, out2 = convert_bytes(out)
    assert out2 == out and not again.changes
    # only what was blocked is reported again, for the same reason
    assert [(r.kind, r.reason) for r in again.results] == \
        [(r.kind, r.reason) for r in results if r.strategy == "blocked"], again.results


# --- regressions found by the properties -------------------------------------------------------

def _case(text: str, volatile: set[int]) -> Case:
    """A hand-written case; `volatile`: 1-based numbers of the lines allowed to change."""
    lines = [(line, i + 1 in volatile) for i, line in enumerate(text.removesuffix("\n").split("\n"))]
    return Case(text.encode(), text, lines, False, False, None, None, (False,))


DASH_ENV = """apiVersion: v1
kind: Pod
metadata:
  name: a
spec:
  containers:
    - env:  # hide
        - name: NVIDIA_VISIBLE_DEVICES
          value: all
{gap}      name: main
      resources:
        limits:
          nvidia.com/gpu: 1
"""


@pytest.mark.skipif(VALIDATOR is None, reason="kubernetes-validate is not installed")
@pytest.mark.parametrize("gap, moved", [("", "    - name: main"),
                                        ("\n   \n", "    - name: main"),
                                        ("      # keep me\n", "    - # keep me")])
def test_removed_env_on_the_dash_line(gap: str, moved: str, oracle: Oracle) -> None:
    """`- env:` first in a container, holding only NVIDIA_VISIBLE_DEVICES, used to block the
    workload ("a key shares its line with a sequence dash"); now what follows moves up."""
    text = DASH_ENV.format(gap=gap)
    n = gap.count("\n")
    check_case(_case(text, {7, 8, 9, *range(10, 11 + n), 12 + n, 13 + n}), oracle)
    out = convert_bytes(text.encode())[1].decode()
    assert moved in out.splitlines()
