"""`-o FORMAT[=PATH]`, repeatable: one run, several reports. The report is built once; each
format is rendered once and each file written once, so `-o json=a.json -o sarif=b.sarif`
costs one scan plus two renderings."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from gpudra.errors import UnreadableInputError, UsageError


@dataclass(frozen=True, slots=True)
class OutputTarget:
    format: str
    path: str | None = None  # None: stdout

    @property
    def to_stdout(self) -> bool:
        return self.path is None


def parse_targets(values: Sequence[str], formats: Sequence[str],
                  default: str = "table") -> tuple[OutputTarget, ...]:
    """`["table", "sarif=gpudra.sarif"]` -> targets. At most one goes to stdout (`FORMAT` or
    `FORMAT=-`), a file is named once, and an unknown format is a usage error."""
    if not values:
        return (OutputTarget(default),)
    targets: list[OutputTarget] = []
    for value in values:
        name, sep, path = value.partition("=")
        fmt = name.strip().lower()
        if fmt not in formats:
            raise UsageError(f"unknown format {name!r} in {value!r}; choose from "
                             f"{', '.join(formats)} (FORMAT=PATH writes a file)")
        if sep and not path:
            raise UsageError(f"-o {value!r}: name a file after '=' (or '-' for stdout)")
        targets.append(OutputTarget(fmt, None if not sep or path == "-" else path))
    if sum(t.to_stdout for t in targets) > 1:
        raise UsageError("only one -o may write to stdout: give the others a file "
                         "(-o FORMAT=PATH)")
    paths = [str(Path(t.path).absolute()) for t in targets if t.path]
    twice = sorted({p for p in paths if paths.count(p) > 1})
    if twice:
        raise UsageError(f"-o names {twice[0]} more than once")
    return tuple(targets)


def write_targets(targets: Sequence[OutputTarget], render: Callable[[str, bool], str],
                  stdout: IO[str]) -> None:
    """Render each (format, for the terminal or not) once and write every target. A file
    that cannot be written is an input error (exit 3), after the others are written."""
    texts: dict[tuple[str, bool], str] = {}
    failed: list[str] = []
    for target in targets:
        key = (target.format, target.to_stdout)
        if key not in texts:
            texts[key] = render(*key)
        if target.path is None:
            stdout.write(texts[key])
            stdout.flush()
            continue
        try:
            Path(target.path).write_text(texts[key], encoding="utf-8")
        except OSError as exc:
            failed.append(f"{target.path}: cannot write: {exc.strerror or exc}")
    if failed:
        raise UnreadableInputError("; ".join(failed))
