"""`-o github`: GitHub Actions workflow commands, which become annotations on the PR diff.

One ``::error|warning|notice file=F,line=L,title=T::message`` line per finding (info is a
notice), one ``::error`` per unreadable input, then one plain summary line for the log.

Escaping follows GitHub's runner (``toolkit/packages/core/src/command.ts``): in the message
``%``, CR and LF are percent-encoded; property values additionally encode ``:`` and ``,``,
which would otherwise end the value. Encoding newlines is also what keeps a hostile manifest
from smuggling a workflow command of its own onto a new line.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from collections.abc import Callable

from gpudra.results.diagnostic import Diagnostic, Level
from gpudra.results.model import Finding, InputError, Report
from gpudra.k8s.objects import plural
from gpudra.printable import without_lone_surrogates
from gpudra.report import RenderOptions
from gpudra.report.summary import severity_counts, summarize

STDIN = "-"
# The annotation of each level (a verdict report makes any level that fails its run an error).
COMMAND = {Level.FAIL: "error", Level.WARN: "warning", Level.UNAVAILABLE: "notice",
           Level.INFO: "notice"}


def render(report: Report, options: RenderOptions) -> str:
    names = {r.id: r.name for r in report.rules}
    lines = [_finding_command(f, names.get(f.rule)) for f in report.findings]
    lines += [_error_command(e) for e in report.errors]
    if report.cluster_read is not None:
        lines.append(escape_data(f"gpudra: {report.cluster_read.describe()}"))
    lines.append(summary_line(report))
    return "\n".join(lines) + "\n"


# Control characters the runner would pass through to the log viewer (which renders ANSI
# escapes); %0D and %0A are the runner's own escapes, these stay visible as written.
# (bidirectional overrides and isolates included, as in gpudra.printable).
_CONTROL = re.compile("[\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                      "\u202a-\u202e\u2066-\u2069]")


def escape_data(text: str) -> str:
    text = without_lone_surrogates(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return _CONTROL.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), text)


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, properties: dict[str, str | int | None], message: str) -> str:
    """A workflow command line; properties that are None are left out."""
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in properties.items()
                     if v is not None)
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def annotation(name: str, d: Diagnostic, title: str, suffix: str = "",
               place: Callable[[str], str | None] = str) -> str:
    """The one annotation of a diagnostic, whatever the command: `subject: message` and the
    `suffix`, on its file (as `place` names it for the runner) and line."""
    message = f"{d.subject}: {d.message}" if d.subject else d.message
    file = d.location.file if d.location is not None else None
    line = d.location.line if d.location is not None else None
    return command(name, _position(file, line, title, place), message + suffix)


def _finding_command(f: Finding, rule_name: str | None) -> str:
    title = f"{f.rule} {rule_name}" if rule_name else f.rule
    d = f.diagnostic
    template = f" (template {f.template})" if f.template else ""
    return annotation(COMMAND[d.level], d, title, template, _repo_path)


def _error_command(e: InputError) -> str:
    message = e.message if e.file else f"{e.where}: {e.message}"
    return command("error", _position(e.file, e.line, "gpudra input error"), message)


def _position(file: str | None, line: int | None, title: str,
              place: Callable[[str], str | None] | None = None) -> dict[str, str | int | None]:
    # An annotation without a file lands on the run summary; a line without a file means nothing.
    path = (place or _repo_path)(file) if file else None
    return {"file": path, "line": line if path else None, "title": title}


def _repo_path(file: str) -> str | None:
    """The file as a path in the repository the runner checked out; None: standard input."""
    if not file or file == STDIN:
        return None
    posix = PurePath(file).as_posix()
    return posix[2:] if posix.startswith("./") else posix


def summary_line(report: Report) -> str:
    s = summarize(report)
    counts = severity_counts(s.findings) or "no findings"
    scanned = (f"{plural(s.objects_read, 'object')} read" if s.source == "cluster"
               else f"{plural(s.files_scanned, 'file')} scanned")
    text = f"gpudra: {scanned}: {counts}"
    if s.errors:
        text += f", {s.errors} unreadable"
    if report.nothing_read and not s.errors:
        text += "; " + ("nothing could be read" if s.source == "cluster" else "no manifests found")
    if s.gpu_workloads:
        text += f"; {s.percent_migrated:.0f}% of {plural(s.gpu_workloads, 'GPU workload')} on DRA"
    return text
