"""Names a selector reads that no device of its class publishes, or that the NVIDIA catalogue
does not know, with "did you mean" suggestions (`gpudra plan`'s hints)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from gpudra.dra import cel_lint
from gpudra.dra.attributes import (
    CLASS_DEVICE_TYPE,
    NVIDIA_ATTRIBUTES,
    NVIDIA_CAPACITIES,
    NVIDIA_DOMAIN,
    STANDARD_ATTRIBUTES,
    STANDARD_DOMAIN,
    attribute_problem,
    capacity_problem,
)
from gpudra.k8s.objects import plural
from gpudra.plan.inventory import Device


def unknown_names(expression: str, class_name: str, devices: Sequence[Device],
                  units: Sequence[tuple[int, tuple[int, ...]]]) -> tuple[str, ...]:
    """Names `expression` reads that the catalogue (for the class's device type) or the
    devices of the class do not have, each with a suggestion when one is close.
    `units`: the devices of the class; their representatives stand for the names
    published (members agree on every name the selectors read)."""
    device_type = CLASS_DEVICE_TYPE.get(class_name)
    published: dict[tuple[str, str], set[str]] = {}
    for rep, _ in units:
        view = devices[rep].by_domain
        for kind, key in (("attributes", "attribute"), ("capacity", "capacity")):
            for domain, names in view[kind].items():
                published.setdefault((key, domain), set()).update(names)
    predicted = any(devices[rep].predicted for rep, _ in units)
    candidates = sum(len(members) for _, members in units)
    hints: list[str] = []
    seen: set[tuple[str, str, str]] = set()
    for ref in cel_lint.references(expression):
        reference = (ref.kind, ref.domain, ref.name)
        if reference in seen or ref.guarded:
            continue
        seen.add(reference)
        problem = None
        if ref.domain in (NVIDIA_DOMAIN, STANDARD_DOMAIN):
            problem = (capacity_problem if ref.is_capacity else attribute_problem)(
                ref.domain, ref.name, device_type)
        found = published.get(("capacity" if ref.is_capacity else "attribute", ref.domain))
        missing = bool(candidates) and not predicted and ref.name not in (found or ())
        if problem is None and not missing:
            continue
        known = set(found or ())
        if ref.domain == NVIDIA_DOMAIN:
            known |= set(NVIDIA_CAPACITIES if ref.is_capacity else NVIDIA_ATTRIBUTES)
        elif ref.domain == STANDARD_DOMAIN and not ref.is_capacity:
            known |= set(STANDARD_ATTRIBUTES)
        close = difflib.get_close_matches(ref.name, sorted(known), n=1, cutoff=0.6)
        text = f"{ref.text}: {problem}" if problem else (
            f"{ref.text}: none of the {plural(candidates, 'device')} of class {class_name} "
            f"publishes {ref.name!r}")
        if close and close[0] != ref.name:
            text += f"; did you mean {close[0]!r}?"
        hints.append(text)
    return tuple(hints)
