"""The values that differ from one run to the next, each with why; nothing else is masked.

A mask is applied to every text output (stdout, stderr, written files) before it is stored or
compared, so the record holds the masked text."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Mask:
    name: str
    pattern: re.Pattern[str]
    replacement: str
    reason: str


def _fixed(name: str, literal: str, replacement: str, reason: str) -> Mask:
    return Mask(name, re.compile(re.escape(literal)), replacement, reason)


# Fixed-shape values; the run's own directories are added per run (see masks_for).
VOLATILE: tuple[Mask, ...] = (
    Mask("port", re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<port>",
         "the fake API server listens on an ephemeral port"),
    Mask("read_at", re.compile(r'("read_at": ?"|read_at: ?\'?|read_at" value="|, read '
                               r'|read <time>)'
                               r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z'),
         r"\1<read_at>", "when the cluster was read: the wall clock"),
    Mask("seconds", re.compile(r'("seconds": ?|name="seconds" value=")[0-9.e-]+'),
         r"\1<seconds>", "plan's measured duration (JSON and JUnit property)"),
)


def masks_for(workdir: str, elsewhere: tuple[str, ...]) -> tuple[Mask, ...]:
    """VOLATILE plus the run's temporary directories: its working directory (where every path
    a run prints is rooted) and the others it is given (the fake cluster's kubeconfig folder,
    the cache), which a fresh temp name each run."""
    own = [_fixed("workdir", workdir, "<work>", "the run's temporary working directory")]
    own += [_fixed("tempdir", path, "<tmp>", "a temporary directory of the run")
            for path in elsewhere]
    return (*own, *VOLATILE)


def apply(text: str, masks: tuple[Mask, ...]) -> str:
    for mask in masks:
        text = mask.pattern.sub(mask.replacement, text)
    return text
