"""A fixed vocabulary of words (an enum) as one phrase for messages: "a, b or c", where a
member another word also names says so ("rewrite (also spelled claims) or bridge")."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping


def words(vocabulary: type[enum.Enum]) -> str:
    """The values as "a, b or c", in declaration order, each followed by the other words that
    name it: what the vocabulary's `aliases()` (word -> member), if it has one, maps to it."""
    aliases: Callable[[], Mapping[str, enum.Enum]] | None = getattr(vocabulary, "aliases", None)
    others: dict[enum.Enum, list[str]] = {}
    for word, member in (aliases() if aliases is not None else {}).items():
        others.setdefault(member, []).append(word)
    values = [str(member.value) + (f" (also spelled {', '.join(others[member])})"
                                   if member in others else "")
              for member in vocabulary]
    return " or ".join([", ".join(values[:-1]), values[-1]]) if len(values) > 1 else values[0]
