"""Where a GPU pod may run, moved from node labels into the claim.

GPU Feature Discovery labels in `nodeSelector` and required node affinity become CEL selectors
on the device (gpudra.dra.selectors); the labels leave the pod unless the user keeps them.

One label changes *what* is requested rather than where: under GFD's MIG "single" strategy a
node exposes its MIG slices as `nvidia.com/gpu` and labels its product `<model>-MIG-<profile>`
(or sets `nvidia.com/mig.strategy=single`). The NVIDIA DRA driver publishes only MIG devices for
a MIG-enabled GPU, so such a request must become a `mig.nvidia.com` request for that profile;
a full-GPU claim would never be satisfied there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpudra.dra.selectors import ATTR, is_gfd_label, label_selector
from gpudra.k8s.objects import PathT, dig
from gpudra.k8s.workloads import PodSpecRef
from gpudra.yamledit.ops import Delete, Op

PRODUCT_LABEL = "nvidia.com/gpu.product"
STRATEGY_LABEL = "nvidia.com/mig.strategy"
MEMORY_LABEL = "nvidia.com/gpu.memory"
_REQUIRED = ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
             "nodeSelectorTerms")
# GFD's single-strategy product value: `<model>-MIG-<profile>`, `-SHARED` when time-sliced.
_MIG_PRODUCT = re.compile(r"^(?P<product>.*?)-MIG-(?P<profile>[^-]+)(?P<shared>-SHARED)?$")
_PROFILE = re.compile(r"^(?P<base>(?:\d+c\.)?\d+g\.\d+gb)(?:[+.]?(?P<extra>me|gfx|all))?$")


class PlacementBlocked(Exception):
    """The placement cannot be carried into a claim without changing what the pod gets."""


@dataclass(frozen=True, slots=True)
class MigSingle:
    """The pod's `nvidia.com/gpu` devices are MIG slices (GFD MIG single strategy)."""

    profile: str | None  # as the DRA driver spells it; None: any profile
    label: str           # the selector that said so, for notes


@dataclass
class Placement:
    selectors: list[tuple[str, str]] = field(default_factory=list)  # (label, CEL)
    mig: MigSingle | None = None
    notes: list[str] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)


def check_scheduled(spec: PodSpecRef) -> None:
    """Raises PlacementBlocked for a pod that skips the scheduler: only the scheduler allocates
    claims (and the extended-resource claims of the bridge), so it would never start."""
    node = spec.data.get("nodeName")
    if node:
        raise PlacementBlocked(
            f"spec.nodeName is set ({node}): the pod skips the scheduler, and only the scheduler "
            "allocates its claims, so it would never start (kubernetes/kubernetes#114005). Pin "
            "the node with a nodeSelector on kubernetes.io/hostname (usually the node's name) "
            "instead, then convert")


def plan_placement(spec: PodSpecRef, pod: PathT, keep_labels: bool,
                   whole_gpus: bool = True) -> Placement:
    """Selectors for the pod's requests, and the label deletions. Raises PlacementBlocked.

    `whole_gpus`: the pod asks for `nvidia.com/gpu` (or its `.shared` form), the only requests
    MIG single-strategy labels turn into MIG requests; otherwise such labels stay as they are.
    """
    placement = Placement()
    mig: list[tuple[str, str | None, list[str]]] = []  # (label text, profile, products)
    node_selector = spec.data.get("nodeSelector")
    for key, value in (node_selector.items() if isinstance(node_selector, Mapping) else ()):
        key, value = str(key), str(value)
        single = _mig_single([value]) if key == PRODUCT_LABEL and whole_gpus else None
        if single is not None:
            profile, products = single
            mig.append((f"{key}={value}", profile, products))
        elif key == STRATEGY_LABEL and value == "single" and whole_gpus:
            mig.append((f"{key}=single", None, []))
        else:
            translation = label_selector(key, "=", [value])
            if translation is None:
                continue
            if translation.expression:
                placement.selectors.append((key, translation.expression))
            if translation.note:
                placement.notes.append(translation.note)
        if not keep_labels:
            placement.ops.append(Delete(pod + ("nodeSelector", key)))
    _affinity(spec, pod, keep_labels, placement, mig, whole_gpus)
    if mig:
        _apply_mig(placement, mig)
    return placement


def _affinity(spec: PodSpecRef, pod: PathT, keep_labels: bool, placement: Placement,
              mig: list[tuple[str, str | None, list[str]]], whole_gpus: bool) -> None:
    terms = dig(spec.data, *_REQUIRED)
    if not isinstance(terms, list) or not terms:
        return
    translated: list[tuple[int, int, str, Any]] = []
    for t, term in enumerate(terms):
        for e, expr in enumerate(dig(term, "matchExpressions") or []):
            if not isinstance(expr, Mapping):
                continue
            key, operator = str(expr.get("key")), str(expr.get("operator"))
            values = [str(v) for v in expr.get("values") or []]
            if key == PRODUCT_LABEL and whole_gpus and any(_MIG_PRODUCT.match(v) for v in values):
                if operator != "In":
                    raise PlacementBlocked(f"node affinity {key} {operator} names MIG "
                                           "single-strategy products; migrate by hand")
                single = _mig_single(values)
                if single is None:
                    raise PlacementBlocked(f"node affinity {key} In mixes MIG single-strategy "
                                           "and whole-GPU products, or several MIG profiles; "
                                           "one request cannot be both: migrate by hand")
                translated.append((t, e, key, ("mig", f"{key} In {values}", *single)))
            elif key == STRATEGY_LABEL and operator == "In" and values == ["single"] and whole_gpus:
                translated.append((t, e, key, ("mig", f"{key}=single", None, [])))
            else:
                translation = label_selector(key, operator, values)
                if translation is not None:
                    translated.append((t, e, key, translation))
                elif is_gfd_label(key):
                    placement.notes.append(f"node affinity {key} {operator} has no CEL "
                                           "equivalent on a device: kept as node affinity")
    if not translated:
        return
    if len(terms) > 1:
        if any(isinstance(tr, tuple) for *_, tr in translated):
            raise PlacementBlocked("MIG single-strategy products in one of several ORed "
                                   "nodeSelectorTerms; migrate by hand")
        placement.notes.append("node affinity has several nodeSelectorTerms (ORed): GPU terms "
                               "kept as node affinity, not moved into the claim")
        return
    for t, e, key, tr in translated:
        if isinstance(tr, tuple):
            mig.append(tr[1:])
        else:
            if tr.expression:
                placement.selectors.append((key, tr.expression))
            if tr.note:
                placement.notes.append(tr.note)
        if not keep_labels:
            placement.ops.append(Delete(pod + _REQUIRED + (t, "matchExpressions", e)))


def _mig_single(values: list[str]) -> tuple[str | None, list[str]] | None:
    """(driver profile, products) when every value is a MIG single-strategy product with one
    and the same profile; None otherwise. Raises PlacementBlocked for a value GFD writes when
    it could not name the layout."""
    profiles: set[str] = set()
    products: list[str] = []
    for value in values:
        match = _MIG_PRODUCT.match(value)
        if match is None:
            return None
        profile = driver_profile(match.group("profile"))
        if profile is None:
            raise PlacementBlocked(f"{PRODUCT_LABEL}={value}: the MIG profile "
                                   f"{match.group('profile')!r} is not one gpudra can name "
                                   "(GFD writes MIG-INVALID for mixed layouts); migrate by hand")
        profiles.add(profile)
        if match.group("product"):
            products.append(match.group("product"))
    if len(profiles) != 1:
        return None
    return profiles.pop(), products


def driver_profile(label_profile: str) -> str | None:
    """A MIG profile as a GFD label spells it -> as the DRA driver's `profile` attribute does."""
    match = _PROFILE.match(label_profile)
    if match is None:
        return None
    extra = match.group("extra")
    return match.group("base") + (f"+{extra}" if extra else "")


def _apply_mig(placement: Placement, mig: list[tuple[str, str | None, list[str]]]) -> None:
    profiles = {profile for _, profile, _ in mig if profile is not None}
    if len(profiles) > 1:
        raise PlacementBlocked(f"node labels name several MIG profiles ({', '.join(sorted(profiles))}); "
                               "one request cannot be all of them: migrate by hand")
    profile = profiles.pop() if profiles else None
    products = list(dict.fromkeys(p for _, _, names in mig for p in names))
    if products:
        subject = f'{ATTR}.productName.replace(" ", "-")'
        literals = [f'"{p}"' for p in products]
        expression = f"{subject} == {literals[0]}" if len(literals) == 1 else \
            f"{subject} in [{', '.join(literals)}]"
        placement.selectors.append((PRODUCT_LABEL, expression))
    labels = ", ".join(label for label, _, _ in mig)
    placement.mig = MigSingle(profile, labels)
    what = f"profile {profile}" if profile else "any profile"
    placement.notes.append(f"MIG single strategy ({labels}): nvidia.com/gpu on such nodes is a "
                           f"MIG slice, so it is requested from mig.nvidia.com ({what}); the "
                           "DRA driver publishes only MIG devices for a MIG-enabled GPU")
