"""`-o FORMAT[=PATH]`, repeatable: one run, several reports. The report is built once; each
format is rendered once and each file written once, so `-o json=a.json -o sarif=b.sarif`
costs one scan plus two renderings."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from gpudra.errors import GpudraError, UnreadableInputError, UsageError
from gpudra.safe_write import WriteRefused, replace

CONFIGMAP = "configmap:"  # -o json=configmap:NS/NAME: a ConfigMap in the cluster audited
CONFIGMAP_FORMATS = ("json",)


@dataclass(frozen=True, slots=True)
class OutputTarget:
    format: str
    path: str | None = None  # None: stdout

    @property
    def to_stdout(self) -> bool:
        return self.path is None

    @property
    def configmap(self) -> str | None:
        """`NS/NAME` (or `NAME`) of a `configmap:` target; None for stdout and files."""
        if self.path is None or not self.path.startswith(CONFIGMAP):
            return None
        return self.path[len(CONFIGMAP):]


def parse_targets(values: Sequence[str], formats: Sequence[str],
                  default: str = "table", *, configmaps: bool = False
                  ) -> tuple[OutputTarget, ...]:
    """`["table", "sarif=gpudra.sarif"]` -> targets. At most one goes to stdout (`FORMAT` or
    `FORMAT=-`), a file is named once, and an unknown format is a usage error; so is
    `configmap:` unless the command writes ConfigMaps (`configmaps`)."""
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
        if targets[-1].configmap is not None and not configmaps:
            raise UsageError(f"-o {value!r}: only gpudra audit writes ConfigMaps")
        if targets[-1].configmap is not None and fmt not in CONFIGMAP_FORMATS:
            raise UsageError(f"-o {value!r}: a ConfigMap holds the JSON report only "
                             f"(-o json={path})")
    if sum(t.to_stdout for t in targets) > 1:
        raise UsageError("only one -o may write to stdout: give the others a file "
                         "(-o FORMAT=PATH)")
    paths = [t.path if t.configmap is not None else str(Path(t.path).absolute())
             for t in targets if t.path]
    twice = sorted({p for p in paths if paths.count(p) > 1})
    if twice:
        raise UsageError(f"-o names {twice[0]} more than once")
    return tuple(targets)


def write_targets(targets: Sequence[OutputTarget], render: Callable[[str, bool], str],
                  stdout: IO[str],
                  publish: Callable[[str, str], None] | None = None) -> None:
    """Render each (format, for the terminal or not) once and write every target; `publish`
    writes `configmap:` targets, given the target's `[NS/]NAME` and the text (a usage error
    where a command has none). A file or ConfigMap that cannot be written is an input error
    (exit 3), after the others are written."""
    if publish is None and any(t.configmap is not None for t in targets):
        raise UsageError("-o FORMAT=configmap:NAME is for cluster audits (gpudra audit "
                         "with no PATH, one cluster)")
    # Every text first, files' encoded: a rendering that fails must leave every file as it was.
    texts = {key: render(*key) for key in dict.fromkeys((t.format, t.to_stdout) for t in targets)}
    encoded = {key: text.encode("utf-8") for key, text in texts.items() if not key[1]}
    failed: list[str] = []
    for target in targets:
        key = (target.format, target.to_stdout)
        if target.path is None:
            stdout.write(texts[key])
            stdout.flush()
            continue
        if target.configmap is not None and publish is not None:
            try:
                publish(target.configmap, texts[key])
            except GpudraError as exc:
                failed.append(str(exc))
            continue
        try:  # never through a committed link, into a FIFO or a device
            replace(target.path, (encoded[key],))
        except WriteRefused as exc:
            failed.append(f"{target.path}: {exc}")
        except OSError as exc:
            failed.append(f"{target.path}: cannot write: {exc.strerror or exc}")
    if failed:
        raise UnreadableInputError("; ".join(failed))
