"""Where pod specs and containers live in each kind: one declarative table plus user JSONPaths.

Paths use a small JSONPath subset (``a.b``, ``a[*]``, ``*`` for any map value, ``a[0]``) that a
hand-written walker evaluates quickly; anything richer goes to jsonpath-ng. Pod-like mappings
that the table does not name (an unknown CRD, a new field) are still found by a generic search
for ``containers`` lists, so coverage never depends on the table being complete.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpudra.errors import ConfigError
from gpudra.k8s.objects import PLAIN_CONTAINERS, PathT

_KSERVE_CONTAINERS = ("model", "pytorch", "tensorflow", "sklearn", "xgboost", "onnx", "triton",
                      "lightgbm", "pmml", "paddle", "huggingface", "alibi", "art", "mlflow")
_REPLICA_SPECS = {"PyTorchJob": "pytorchReplicaSpecs", "TFJob": "tfReplicaSpecs",
                  "MPIJob": "mpiReplicaSpecs", "PaddleJob": "paddleReplicaSpecs",
                  "XGBoostJob": "xgbReplicaSpecs", "JAXJob": "jaxReplicaSpecs",
                  "MXJob": "mxReplicaSpecs"}
_RAY_CLUSTER = ("headGroupSpec.template.spec", "workerGroupSpecs[*].template.spec")


@dataclass(frozen=True, slots=True)
class WorkloadKind:
    """Pod-spec locations of one kind. `group` '*' matches any API group."""

    group: str
    kind: str
    pod_specs: tuple[str, ...]
    container_keys: tuple[str, ...] = ()

    def matches(self, group: str, kind: str) -> bool:
        return self.kind == kind and self.group in ("*", group)


def _ray(prefix: str) -> tuple[str, ...]:
    return tuple(f"{prefix}.{p}" for p in _RAY_CLUSTER)


BUILTIN_KINDS: tuple[WorkloadKind, ...] = (
    WorkloadKind("", "Pod", ("spec",)),
    WorkloadKind("", "PodTemplate", ("template.spec",)),
    WorkloadKind("", "ReplicationController", ("spec.template.spec",)),
    *(WorkloadKind("apps", k, ("spec.template.spec",))
      for k in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")),
    WorkloadKind("batch", "Job", ("spec.template.spec",)),
    WorkloadKind("batch", "CronJob", ("spec.jobTemplate.spec.template.spec",)),
    *(WorkloadKind("kubeflow.org", kind, (f"spec.{field_}.*.template.spec",))
      for kind, field_ in _REPLICA_SPECS.items()),
    WorkloadKind("ray.io", "RayCluster", _ray("spec")),
    WorkloadKind("ray.io", "RayJob", (*_ray("spec.rayClusterSpec"), "spec.submitterPodTemplate.spec")),
    WorkloadKind("ray.io", "RayService", _ray("spec.rayClusterConfig")),
    WorkloadKind("orchestration.aibrix.ai", "RayClusterFleet", _ray("spec.template.spec")),
    WorkloadKind("jobset.x-k8s.io", "JobSet", ("spec.replicatedJobs[*].template.spec.template.spec",)),
    WorkloadKind("leaderworkerset.x-k8s.io", "LeaderWorkerSet",
                 ("spec.leaderWorkerTemplate.leaderTemplate.spec",
                  "spec.leaderWorkerTemplate.workerTemplate.spec")),
    WorkloadKind("batch.volcano.sh", "Job", ("spec.tasks[*].template.spec",)),
    *(WorkloadKind("argoproj.io", k, ("spec.templates[*]",), ("container", "script"))
      for k in ("Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate")),
    WorkloadKind("argoproj.io", "CronWorkflow", ("spec.workflowSpec.templates[*]",),
                 ("container", "script")),
    WorkloadKind("serving.kserve.io", "InferenceService",
                 ("spec.predictor", "spec.transformer", "spec.explainer"), _KSERVE_CONTAINERS),
    WorkloadKind("serving.kserve.io", "ServingRuntime", ("spec",)),
    WorkloadKind("serving.kserve.io", "ClusterServingRuntime", ("spec",)),
    WorkloadKind("serving.knative.dev", "Service", ("spec.template.spec",)),
    # Kubeflow Trainer v2: runtimes hold a JobSet template; a TrainJob has no pod spec of its
    # own, but its `spec.trainer.resourcesPerNode` holds requests (reported as such).
    *(WorkloadKind("trainer.kubeflow.org", k,
                   ("spec.template.spec.replicatedJobs[*].template.spec.template.spec",))
      for k in ("TrainingRuntime", "ClusterTrainingRuntime")),
    WorkloadKind("trainer.kubeflow.org", "TrainJob", ()),
)

# Pod-spec fields that hold lists of containers; Argo adds sidecars and containerSet.
# Ephemeral containers may not have resources at all (the API server rejects them), but a
# manifest can still carry some: they are listed so that such requests are reported as such.
CONTAINER_LISTS: tuple[PathT, ...] = (("initContainers",), ("containers",), ("sidecars",),
                                      ("containerSet", "containers"), ("ephemeralContainers",))


@dataclass(frozen=True, slots=True)
class ContainerRef:
    path: PathT
    data: Mapping[str, Any]
    init: bool
    outside: bool = False  # a resources block found outside any pod spec (CRD-specific shape)
    ephemeral: bool = False

    @property
    def name(self) -> str | None:
        value = self.data.get("name")
        return str(value) if value is not None else None


@dataclass(frozen=True, slots=True)
class PodSpecRef:
    path: PathT
    data: Mapping[str, Any]
    containers: tuple[ContainerRef, ...]


@dataclass(frozen=True)
class WorkloadTable:
    """Built-in kinds plus the user's; the lookup is by (API group, kind)."""

    kinds: tuple[WorkloadKind, ...] = BUILTIN_KINDS
    _by_kind: dict[str, list[WorkloadKind]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        for entry in self.kinds:
            self._by_kind.setdefault(entry.kind, []).append(entry)
        for entry in self.kinds:
            for path in entry.pod_specs:
                compile_path(path)  # fail early, with the path named

    def with_kinds(self, extra: Iterable[WorkloadKind]) -> WorkloadTable:
        # User entries come first so they can refine a built-in kind.
        return WorkloadTable((*extra, *self.kinds))

    def lookup(self, group: str, kind: str) -> list[WorkloadKind]:
        return [e for e in self._by_kind.get(kind, ()) if e.matches(group, kind)]

    def pod_specs(self, group: str, kind: str, data: Mapping[str, Any]) -> list[PodSpecRef]:
        """Every pod-like mapping in an object: table paths first, then the generic search."""
        found: dict[PathT, PodSpecRef] = {}
        for entry in self.lookup(group, kind):
            for path in entry.pod_specs:
                for where, value in evaluate(compile_path(path), data):
                    if isinstance(value, Mapping) and where not in found:
                        found[where] = _pod_spec(where, value, entry.container_keys)
        for where, value in _generic_pod_specs(data):
            if not any(where[: len(p)] == p for p in found):
                found[where] = _pod_spec(where, value, ())
        return sorted(found.values(), key=lambda ref: _sortable(ref.path))

    def pod_spec_mappings(self, group: str, kind: str, data: Mapping[str, Any]
                          ) -> Iterator[Mapping[str, Any]]:
        """Every mapping pod_specs returns, maybe with more (what the generic search finds
        below a table path), unordered and without container references: for a check that
        every pod spec passes, cheaper than pod_specs on each of a cluster's workloads."""
        for entry in self.lookup(group, kind):
            for path in entry.pod_specs:
                for _, value in evaluate(compile_path(path), data):
                    if isinstance(value, Mapping):
                        yield value
        for _, value in _generic_pod_specs(data):
            yield value


# Keys that only nest a pod spec deeper: the key or list item above them names its role.
POD_NESTING_KEYS = frozenset({"spec", "template", "jobTemplate", "leaderWorkerTemplate",
                              "rayClusterSpec", "rayClusterConfig", "workflowSpec"})


def pod_role(data: Any, path: PathT) -> str | None:
    """What tells one pod spec of a workload from its others, as the manifest spells it: a
    replica type (`Master`), a group's name (`gpu-workers`), a key (`headGroupSpec`), a list
    position (`#2`); None for a workload's one template (`spec.template.spec`)."""
    for depth in range(len(path) - 1, -1, -1):
        part = path[depth]
        if isinstance(part, int):
            item: Any = data
            for key in path[: depth + 1]:
                # `path` was read from `data`: a list's part is an int (else TypeError, as ever)
                item = item[key] if isinstance(item, (Mapping, list)) else None  # type: ignore[index]
            named = item.get("name") or item.get("groupName") if isinstance(item, Mapping) \
                else None
            return str(named) if named else f"#{part}"
        if part not in POD_NESTING_KEYS:
            return str(part)
    return None


def _sortable(path: PathT) -> tuple[tuple[bool, str], ...]:
    return tuple((isinstance(p, int), str(p) if not isinstance(p, int) else f"{p:09d}") for p in path)


def _pod_spec(path: PathT, spec: Mapping[str, Any], single_keys: tuple[str, ...]) -> PodSpecRef:
    containers: list[ContainerRef] = []
    for list_path in CONTAINER_LISTS:
        value: Any = spec
        for key in list_path:
            value = value.get(key) if value.__class__ is dict or isinstance(value, Mapping) \
                else None
        if isinstance(value, list):
            init = list_path == ("initContainers",)
            ephemeral = list_path == ("ephemeralContainers",)
            containers.extend(ContainerRef(path + list_path + (i,), c, init, ephemeral=ephemeral)
                              for i, c in enumerate(value)
                              if c.__class__ is dict or isinstance(c, Mapping))
    for key in single_keys:
        value = spec.get(key)
        if isinstance(value, Mapping):
            containers.append(ContainerRef(path + (key,), value, False))
    return PodSpecRef(path, spec, tuple(containers))


# Top-level fields that never hold a pod spec: the walk skips them (managedFields and status
# are most of a live object's size).
_NOT_POD_SPECS = frozenset({"metadata", "status"})


def _is_pod_like(value: Mapping[str, Any]) -> bool:
    containers = value.get("containers")
    return isinstance(containers, list) and any(
        c.__class__ is dict or isinstance(c, Mapping) for c in containers)


def _generic_pod_specs(data: Any, limit: int = 12) -> Iterator[tuple[PathT, Mapping[str, Any]]]:
    """Mappings with a `containers` list, wherever they are, at most `limit` levels deep (which
    also bounds the walk on recursive aliases); the walk does not descend into what it found."""
    stack: list[tuple[PathT, Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        if len(path) > limit:
            continue
        # Plain dicts and lists are decided before the ABC (gpudra.k8s.objects.PLAIN_CONTAINERS).
        if value.__class__ is dict or isinstance(value, Mapping):
            if _is_pod_like(value):
                yield path, value
                continue
            stack.extend((path + (k,), v) for k, v in value.items()
                         if (v.__class__ in PLAIN_CONTAINERS or isinstance(v, (Mapping, list)))
                         and isinstance(k, str) and (path or k not in _NOT_POD_SPECS))
        elif isinstance(value, list):
            stack.extend((path + (i,), v) for i, v in enumerate(value)
                         if v.__class__ in PLAIN_CONTAINERS or isinstance(v, (Mapping, list)))


# --- the path language -------------------------------------------------------------------

_SEGMENT = re.compile(r"([A-Za-z0-9_\-]+|\*)((?:\[(?:\*|\d+)\])*)")
# ("key", name) | ("any",) | ("each",) | ("index", n): the operand's type follows the tag,
# which the checker cannot follow on this hot path, hence Any.
_Step = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class CompiledPath:
    text: str
    steps: tuple[_Step, ...] | None  # None: needs jsonpath-ng
    jsonpath: Any = None


@functools.lru_cache(maxsize=512)
def compile_path(text: str) -> CompiledPath:
    """Compile once per distinct path text (pure, so caching is safe)."""
    body = text[2:] if text.startswith("$.") else text
    steps: list[_Step] = []
    simple = bool(body)
    for part in body.split("."):
        match = _SEGMENT.fullmatch(part)
        if not match:
            simple = False
            break
        name, brackets = match.groups()
        steps.append(("any",) if name == "*" else ("key", name))
        for index in re.findall(r"\[(\*|\d+)\]", brackets):
            steps.append(("each",) if index == "*" else ("index", int(index)))
    if simple:
        compiled = CompiledPath(text, tuple(steps))
    else:
        compiled = CompiledPath(text, None, _jsonpath(text))
    return compiled


def _jsonpath(text: str) -> Any:
    from jsonpath_ng import (
        parse,  # imported lazily: only user-supplied complex paths need it
    )
    from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError

    try:
        return parse(text)
    except (JsonPathLexerError, JsonPathParserError, Exception) as exc:
        raise ConfigError(f"invalid JSONPath {text!r}: {exc}") from None


def evaluate(path: CompiledPath, data: Any) -> Iterator[tuple[PathT, Any]]:
    """Yield (location, value) for every match of `path` in `data`."""
    if path.steps is None:
        for match in path.jsonpath.find(data):
            location = _jsonpath_location(match)
            if location is not None:  # a match that names no single place cannot be edited
                yield location, match.value
        return
    current: list[tuple[PathT, Any]] = [((), data)]
    for step in path.steps:
        nxt: list[tuple[PathT, Any]] = []
        for where, value in current:
            if step[0] == "key":
                if isinstance(value, Mapping) and step[1] in value:
                    nxt.append((where + (step[1],), value[step[1]]))
            elif step[0] == "any":
                if isinstance(value, Mapping):
                    nxt.extend((where + (k,), v) for k, v in value.items())
            elif step[0] == "each":
                if isinstance(value, list):
                    nxt.extend((where + (i,), v) for i, v in enumerate(value))
            elif isinstance(value, list) and -len(value) <= step[1] < len(value):
                nxt.append((where + (step[1],), value[step[1]]))
        current = nxt
    yield from current


def _jsonpath_location(match: Any) -> PathT | None:
    from jsonpath_ng.jsonpath import Fields, Index

    parts: list[Any] = []
    while match is not None and match.path is not None:
        if isinstance(match.path, Fields):
            parts.append(match.path.fields[0])
        elif isinstance(match.path, Index):
            # jsonpath-ng >= 1.7 holds `indices` (a slice such as [0,1] has several); older
            # releases one `index`. A match of several indices names none of them.
            indices = getattr(match.path, "indices", None) or (
                match.path.index,)  # type: ignore[attr-defined]  # jsonpath-ng < 1.7
            if len(indices) != 1:
                return None
            parts.append(indices[0])
        match = match.context
    return tuple(reversed(parts))
