"""Every format choice of the CLI and the code that writes a command's output: the -o
FORMAT[=PATH] targets, the formats each command offers, and how each renders to stdout or a
file. One module, so that a new format or a new way to render lands in one place."""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, TypeAlias

import typer

from gpudra import __version__
from gpudra.cli.options import Choice
from gpudra.cli.terminal import color, terminal, width
from gpudra.errors import UsageError
from gpudra.results.model import FailOn
from gpudra.cli.formats import names, render
from gpudra.report.formats import Kind, RenderOptions

if TYPE_CHECKING:  # each command's records load with the command that writes them
    from gpudra.catalogue import CatalogueResult
    from gpudra.guard.run import GuardResult
    from gpudra.rbac import RbacResult
    from gpudra.cutover.run import CutoverResult
    from gpudra.plan.run import PlanResult
    from gpudra.report.outcomes import OutcomeReport
    from gpudra.report.targets import OutputTarget
    from gpudra.results.model import Report


def _format_choice(name: str, kind: Kind) -> Any:
    """The -o words of `kind` as a Choice enum, in the registry's order: the registry
    (gpudra.cli.formats) is the one list of formats."""
    return Choice(name, {word.upper(): word for word in names(kind)})  # type: ignore[call-overload]


OutcomeFormat = _format_choice("OutcomeFormat", Kind.OUTCOMES)  # preflight, plan, verify
MergeFormat = _format_choice("MergeFormat", Kind.FLEET)  # gpudra report merge
RunbookFormat = _format_choice("RunbookFormat", Kind.RUNBOOK)  # cutover
CatalogueFormat = _format_choice("CatalogueFormat", Kind.CHECKS)  # checks and rules


class GuardFormat(Choice):
    """gpudra guard's -o: objects for kubectl, not a report, so not a line of the registry."""

    YAML = "yaml"
    JSON = "json"

if not names(Kind.RULES) == names(Kind.CHECKS) == names(Kind.CONTROLLERS):
    raise AssertionError("checks, rules and controllers share one -o choice")  # pragma: no cover

Targets: TypeAlias = "tuple[OutputTarget, ...]"


def given(output: list[str]) -> Targets:
    """The -o targets a command received. typer declares the option as list[str] (that is how
    it parses a repeatable option) and hands over, as a list, what its callback (_targets)
    returned."""
    from gpudra.report.targets import OutputTarget

    value: object = output
    if isinstance(value, (list, tuple)) and all(isinstance(t, OutputTarget) for t in value):
        return tuple(value)
    raise TypeError(f"-o: {output!r} did not go through the option's callback")

AUDIT_FORMATS = names(Kind.AUDIT)
OUTCOME_FORMATS = names(Kind.OUTCOMES)
MERGE_FORMATS = names(Kind.FLEET)


def _targets(values: Optional[list[str]], formats: tuple[str, ...], default: str = "table",
             configmaps: bool = False) -> tuple[OutputTarget, ...]:
    """-o FORMAT[=PATH], repeatable, as gpudra.report.targets.OutputTarget records; a bad one
    is click's usage error, like any bad option value."""
    from gpudra.report.targets import parse_targets

    try:
        return parse_targets(values or [], formats, default, configmaps=configmaps)
    except UsageError as exc:
        raise typer.BadParameter(str(exc)) from None


def audit_targets_option() -> Any:
    return typer.Option([], "-o", "--output", metavar="FORMAT[=PATH]",
                        callback=lambda v: _targets(v, AUDIT_FORMATS, configmaps=True),
                        help="Report format: table, json, yaml, sarif, junit, markdown, github "
                             "or html; FORMAT=PATH writes a file (repeatable: one scan, many "
                             "reports); json=configmap:[NS/]NAME creates or replaces a "
                             "ConfigMap in the cluster audited.")


def outcome_targets_option() -> Any:
    return typer.Option([], "-o", "--output", metavar="FORMAT[=PATH]",
                        callback=lambda v: _targets(v, OUTCOME_FORMATS),
                        help="table, json, junit, markdown, github or html; FORMAT=PATH "
                             "writes a file (repeatable).")


def merge_targets_option() -> Any:
    return typer.Option([], "-o", "--output", metavar="FORMAT[=PATH]",
                        callback=lambda v: _targets(v, MERGE_FORMATS, "markdown"),
                        help="json, markdown (the default) or html; FORMAT=PATH writes a file "
                             "(repeatable).")


def catalogue_format_option() -> Any:
    return typer.Option("table", "-o", "--output", help="table, json or markdown.")


def write_audit(targets: Targets, report: Report, level: FailOn, verbose: bool,
                inputs: tuple[str, ...],
                publish: Optional[Callable[[str, str], None]]) -> None:
    """Every -o target of an audit; `publish` writes json=configmap:NAME to the cluster."""
    from gpudra.report.targets import write_targets

    def text(fmt: str, to_stdout: bool) -> str:
        return render(Kind.AUDIT, fmt, report, RenderOptions(
            color=to_stdout and color(sys.stdout), width=width() if to_stdout else None,
            tool_version=__version__, fail_on=level, verbose=verbose, inputs=inputs))

    write_targets(targets, text, sys.stdout, publish)


def write_outcomes(targets: Targets, report: OutcomeReport) -> None:
    """Every -o target of preflight, plan or verify."""
    from gpudra.report.targets import write_targets

    def text(fmt: str, to_stdout: bool) -> str:
        return render(Kind.OUTCOMES, fmt, report, RenderOptions(
            color=to_stdout and color(sys.stdout), width=width() if to_stdout else None))

    write_targets(targets, text, sys.stdout)


def write_plan(targets: Targets, result: PlanResult) -> None:
    """plan's -o targets (its JSON is the plan's own contract, docs/plan.md: as_report
    carries it)."""
    from gpudra.plan.run import as_report

    write_outcomes(targets, as_report(result))


def write_runbook(fmt: enum.Enum, result: CutoverResult, where: Optional[str]) -> None:
    from gpudra.cutover.runbook import Runbook

    sys.stdout.write(render(Kind.RUNBOOK, fmt.value, Runbook(result.plan, where, result.pools,
                                                             result.context, result.cluster)))


_CATALOGUE_KINDS = {"checks": Kind.CHECKS, "rules": Kind.RULES, "controllers": Kind.CONTROLLERS}


def write_catalogue(result: CatalogueResult, fmt: enum.Enum) -> None:
    """A catalogue: the preflight checks, the rules or the controller registry."""
    sys.stdout.write(render(_CATALOGUE_KINDS[result.catalogue.value], fmt.value,
                            list(result.entries)))


def write_guard(result: GuardResult, fmt: enum.Enum, output_dir: Optional[Path]) -> None:
    """The guard's objects to stdout, or policy.FORMAT and binding.FORMAT in `output_dir`.
    They are objects to apply, not a report: written as rendered, never redacted (a redaction
    would change what the API server is given)."""
    from gpudra.guard.render import as_json, as_yaml

    text = as_json if fmt.value == "json" else as_yaml
    if output_dir is None:
        sys.stdout.write(text(result.objects))
        return
    _write_files(output_dir, {f"policy.{fmt.value}": text([result.policy]),
                              f"binding.{fmt.value}": text([result.binding])})


def _write_files(out: Path, files: dict[str, str]) -> None:
    from gpudra.convert.writer import WriteRefused, write_under
    from gpudra.errors import GpudraError

    if out.exists() and not out.is_dir():
        raise UsageError(f"--output-dir {out}: not a directory")
    for name, text in files.items():
        try:
            write_under(out, name, text.encode("utf-8"))
        except OSError as exc:
            raise GpudraError(f"{out / name}: cannot write: {exc.strerror or exc}") from None
        except WriteRefused as exc:
            raise GpudraError(str(exc)) from None
    typer.echo(f"gpudra: wrote {', '.join(str(out / n) for n in files)}", err=True)


def write_rbac(result: RbacResult) -> None:
    """The RBAC objects as one YAML stream, as rendered (objects to apply: never redacted,
    which would change a subject's name)."""
    from gpudra.rbac import render as rbac_yaml

    sys.stdout.write(rbac_yaml(list(result.objects)))


def write_explanation(text: str) -> None:
    """A rule's or check's Markdown: the source for pipes, files and docs, rendered for a
    person at a terminal (NO_COLOR keeps the layout and bold but drops the colours)."""
    if not terminal(sys.stdout):
        sys.stdout.write(text)
        return
    from rich.console import Console
    from rich.markdown import Markdown

    Console(force_terminal=True, no_color=not color(sys.stdout)).print(Markdown(text))


def write_merged(targets: Targets, merged: Mapping[str, Any]) -> None:
    """Every -o target of `gpudra report merge`."""
    from gpudra.report.targets import write_targets

    def text(fmt: str, to_stdout: bool) -> str:
        return render(Kind.FLEET, fmt, merged, RenderOptions(tool_version=__version__))

    write_targets(targets, text, sys.stdout)
