"""Grove (NVIDIA Dynamo's scheduling layer): a PodCliqueSet clique in a multi-node NVLink group.

A clique joins an MNNVL group through the annotation `grove.io/mnnvl-group` on the clique, else
on the scaling group that lists it, else on the PodCliqueSet: the first layer that has the
annotation decides, and `none` opts out (ResolveGroupNameHierarchically). For a clique in a
group, Grove creates a ComputeDomain per set replica and injects the IMEX channel claim into
each container that has a nonzero `nvidia.com/gpu` limit or request (containerHasGPU,
InjectAutoMNNVLIntoPodSpec); a pod without one gets no channel. Converted, the clique's
containers ask for claims instead, so Grove injects nothing and the job runs without multi-node
NVLink. (ai-dynamo/grove operator/internal/mnnvl helpers.go, injection.go, constants.go;
docs/facts.md.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpudra.convert.records import Blocked
from gpudra.k8s.objects import PathT, as_mapping, dig

GROUP_ANNOTATION = "grove.io/mnnvl-group"
OPT_OUT = "none"
GPU = "nvidia.com/gpu"
_CLIQUES = ("spec", "template", "cliques")


def mnnvl_group(data: Mapping[str, Any], clique: Mapping[str, Any]) -> str | None:
    """The MNNVL group the clique is in, None when it is in none."""
    name = clique.get("name")
    groups = dig(data, "spec", "template", "podCliqueScalingGroups")
    scaling = next((g for g in (groups if isinstance(groups, list) else ())
                    if isinstance(g, Mapping) and isinstance(g.get("cliqueNames"), list)
                    and name in g["cliqueNames"]), {})
    for layer in (clique, scaling, as_mapping(data.get("metadata"))):
        annotations = as_mapping(as_mapping(layer).get("annotations"))
        if GROUP_ANNOTATION in annotations:
            value = annotations[GROUP_ANNOTATION]
            return None if value == OPT_OUT else str(value)
    return None


def check(data: Mapping[str, Any], pod: PathT, removed: Iterable[tuple[PathT, str]]) -> None:
    """Raise Blocked when convert would take nvidia.com/gpu off a clique in an MNNVL group."""
    if pod[:len(_CLIQUES)] != _CLIQUES or len(pod) <= len(_CLIQUES) or \
            not isinstance(pod[len(_CLIQUES)], int):
        return
    if not any(name == GPU for _, name in removed):
        return
    clique = as_mapping(dig(data, *pod[:len(_CLIQUES) + 1]))
    group = mnnvl_group(data, clique)
    if group is None:
        return
    raise Blocked(f"Grove clique {clique.get('name') or pod[len(_CLIQUES)]!r} is in MNNVL group "
                  f"{group!r} ({GROUP_ANNOTATION}): Grove creates its ComputeDomain and injects "
                  "the IMEX channel claim only into containers that request nvidia.com/gpu; "
                  "converted, the pods would run without multi-node NVLink. Keep it on the "
                  f"device plugin, or set {GROUP_ANNOTATION}: none and claim the ComputeDomain "
                  "channel yourself")
