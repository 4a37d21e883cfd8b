"""JSON data as the types the records that carry it declare: what a report's or an object's
`-o json` holds, so that mypy checks a record's JSON fields instead of taking `Any`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

# A JSON value. Read-only containers (covariant): a `dict[str, int]` is a JsonObject.
JsonValue: TypeAlias = (
    "str | int | float | bool | None | Sequence[JsonValue] | Mapping[str, JsonValue]")
# A JSON object: a Kubernetes object, a report, a report's section.
JsonObject: TypeAlias = Mapping[str, JsonValue]
