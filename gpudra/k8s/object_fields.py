"""Reading DaemonSets, Deployments and their pods as the API returns them: containers, image
tags, command-line flags, environment, readiness. Finding *which* workload is what (device
plugin, DRA driver, autoscaler) is left to its callers; this module only reads fields."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gpudra.k8s.objects import as_mapping, dig

_TAG_RE = re.compile(r"[\w][\w.-]{0,127}")  # the tag grammar of the distribution spec


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    image: str
    command: tuple[str, ...]
    args: tuple[str, ...]
    env: Mapping[str, str]

    @property
    def argv_text(self) -> str:
        return " ".join(self.command + self.args)


def workload_name(obj: Mapping[str, Any]) -> str:
    """`namespace/name` of a namespaced object."""
    meta = as_mapping(obj.get("metadata"))
    name = str(meta.get("name") or "(unnamed)")
    return f"{meta['namespace']}/{name}" if meta.get("namespace") else name


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return {str(k): str(v) for k, v in as_mapping(dig(obj, "metadata", "labels")).items()}


def pod_template_labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    labels = as_mapping(dig(obj, "spec", "template", "metadata", "labels"))
    return {str(k): str(v) for k, v in labels.items()}


def containers(obj: Mapping[str, Any], *, init: bool = False) -> tuple[Container, ...]:
    """The containers of a workload's pod template (or of a pod)."""
    spec = dig(obj, "spec", "template", "spec")
    if not isinstance(spec, Mapping):
        spec = as_mapping(obj.get("spec"))
    fields = ("initContainers", "containers") if init else ("containers",)
    found = []
    for field in fields:
        for item in _list(spec.get(field)):
            if not isinstance(item, Mapping):
                continue
            env = {str(e.get("name")): str(e.get("value", "")) for e in _list(item.get("env"))
                   if isinstance(e, Mapping) and e.get("name")}
            found.append(Container(str(item.get("name") or ""), str(item.get("image") or ""),
                                   _strings(item.get("command")), _strings(item.get("args")),
                                   env))
    return tuple(found)


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def image_repository(image: str) -> str:
    """`registry.k8s.io/autoscaling/cluster-autoscaler:v1.32.1` -> `.../cluster-autoscaler`."""
    without_digest = image.split("@", 1)[0]
    head, sep, tail = without_digest.rpartition(":")
    return head if sep and "/" not in tail else without_digest


def image_tag(image: str) -> str | None:
    """The tag of an image reference, None for a digest-only or untagged reference."""
    without_digest = image.split("@", 1)[0]
    _, sep, tail = without_digest.rpartition(":")
    return tail if sep and "/" not in tail and _TAG_RE.fullmatch(tail) else None


def flag_value(container: Container, flag: str) -> str | None:
    """The value of `--flag=value`, `--flag value` or a bare `--flag` ("true") on the command
    line; the last occurrence wins, as with Go's flag package."""
    value = None
    words = list(container.command + container.args)
    # Shell-wrapped command lines (`bash -c "... --flag=x"`) are split into words as well.
    words = [w for word in words for w in word.split()]
    for i, word in enumerate(words):
        if word == flag:
            following = words[i + 1] if i + 1 < len(words) else ""
            value = following if following and not following.startswith("-") else "true"
        elif word.startswith(flag + "="):
            value = word[len(flag) + 1:]
    return value


def feature_gates(container: Container) -> dict[str, bool]:
    """`--feature-gates=A=true,B=false` parsed; unparsable entries are skipped."""
    gates: dict[str, bool] = {}
    raw = flag_value(container, "--feature-gates")
    for entry in (raw or "").split(","):
        name, sep, value = entry.strip().partition("=")
        if sep and value.lower() in ("true", "false"):
            gates[name] = value.lower() == "true"
    return gates


def owned_pods(pods: Iterable[Mapping[str, Any]], owner: Mapping[str, Any],
               kind: str = "DaemonSet") -> Iterator[Mapping[str, Any]]:
    """Pods whose controller is `owner` (by uid when both have one, else by namespace and name)."""
    uid = dig(owner, "metadata", "uid")
    name = dig(owner, "metadata", "name")
    namespace = dig(owner, "metadata", "namespace")
    for pod in pods:
        if dig(pod, "metadata", "namespace") != namespace:
            continue
        for ref in dig(pod, "metadata", "ownerReferences") or ():
            if not isinstance(ref, Mapping) or ref.get("kind") != kind:
                continue
            by_uid = bool(uid and ref.get("uid"))
            if (ref.get("uid") == uid) if by_uid else (ref.get("name") == name):
                yield pod
                break


def pod_ready(pod: Mapping[str, Any]) -> bool:
    for condition in dig(pod, "status", "conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def pod_node(pod: Mapping[str, Any]) -> str:
    return str(dig(pod, "spec", "nodeName") or "(not scheduled)")


@dataclass(frozen=True, slots=True)
class DaemonSetStatus:
    desired: int
    ready: int

    @property
    def all_ready(self) -> bool:
        return self.desired > 0 and self.ready >= self.desired


def daemonset_status(obj: Mapping[str, Any]) -> DaemonSetStatus:
    status = as_mapping(obj.get("status"))
    return DaemonSetStatus(_int(status.get("desiredNumberScheduled")),
                           _int(status.get("numberReady")))


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _list(value: Any) -> list[Any]:
    """A list field as written; anything else (`containers: 1`) holds no items."""
    return value if isinstance(value, list) else []
