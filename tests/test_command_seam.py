"""The command seam (issue 35, docs/architecture.md): every command's CLI function hands a typed
request to one core `run_x` that returns a result and neither prints nor exits; the CLI renders
the result and returns its exit code, which `guarded` maps."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer

from gpudra.cli import app
from gpudra.errors import UsageError
from gpudra.results.model import ExitCode
from tests.support.run import invoke

ROOT = Path(__file__).resolve().parents[1]

# Every command (as `gpudra --help` names it) -> the CLI module, and the core run function it
# calls (module, name). convert's core is `convert.run.convert` (cli.convert's own run_convert
# writes its result).
RUNS: dict[str, tuple[str, str, str]] = {
    "audit": ("audit", "gpudra.audit.run", "run_audit_command"),
    "convert": ("convert", "gpudra.convert.run", "convert"),
    "preflight": ("preflight", "gpudra.preflight.run", "run_preflight"),
    "plan": ("plan", "gpudra.plan.run", "run_plan"),
    "verify": ("verify", "gpudra.verify.run", "run_verify"),
    "cutover": ("cutover", "gpudra.cutover.run", "run_cutover"),
    "guard": ("guard", "gpudra.guard.run", "run_guard"),
    "rbac": ("rbac", "gpudra.rbac", "run_rbac"),
    "report merge": ("report", "gpudra.report.merge_run", "run_merge"),
    "checks": ("catalogue", "gpudra.catalogue", "run_catalogue"),
    "rules": ("catalogue", "gpudra.catalogue", "run_catalogue"),
    "controllers": ("catalogue", "gpudra.catalogue", "run_catalogue"),
    "explain": ("catalogue", "gpudra.catalogue", "run_explain"),
}


def _commands(group: Any, prefix: str = "") -> list[str]:
    """The leaf commands under typer's group, as `gpudra --help` names them."""
    found: list[str] = []
    for name, command in group.commands.items():
        if hasattr(command, "commands"):  # a group (typer bundles its own click)
            found += _commands(command, f"{prefix}{name} ")
        else:
            found.append(f"{prefix}{name}")
    return found


def test_the_table_names_every_command() -> None:
    group = typer.main.get_command(app)
    assert sorted(_commands(group)) == sorted(RUNS)


@pytest.mark.parametrize("command", sorted(RUNS))
def test_each_command_calls_one_core_run(command: str) -> None:
    cli_module, module, name = RUNS[command]
    run = getattr(importlib.import_module(module), name)
    assert callable(run) and not module.startswith("gpudra.cli")
    # the core run takes the request (and hooks only by keyword)
    positional = [p for p in inspect.signature(run).parameters.values()
                  if p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty]
    assert [p.name for p in positional] == ["request"]
    source = (ROOT / "gpudra" / "cli" / f"{cli_module}.py").read_text()
    assert f"{name}(" in source and module in source


def _merge_request(tmp_path: Path) -> tuple[Any, list[str]]:
    from gpudra.report.merge_run import MergeRequest

    paths = []
    for name in ("apps", "web"):
        path = tmp_path / f"{name}.json"
        assert invoke("audit", str(ROOT / "examples" / name), "-o", f"json={path}").exit_code \
            in (0, 1)
        paths.append(str(path))
    return (MergeRequest(tuple(paths), {paths[0]: "first"}),
            ["report", "merge", *paths, "-o", "json", "--name", f"{paths[0]}=first"])


def _request(command: str, tmp_path: Path) -> tuple[Any, list[str]]:
    """A request of each command that reads nothing but gpudra's own tables (or, merge, the
    reports it is given), and the argv the CLI builds it from."""
    from gpudra.catalogue import Catalogue, CatalogueRequest, ExplainRequest
    from gpudra.guard.policy import Action, Strategy
    from gpudra.guard.run import GuardRequest
    from gpudra.rbac import RbacRequest

    requests: dict[str, Callable[[], tuple[Any, list[str]]]] = {
        "guard": lambda: (GuardRequest(Strategy.BRIDGE, Action.DENY),
                          ["guard", "--strategy", "bridge", "--action", "deny"]),
        "rbac": lambda: (RbacRequest(user="alice", report_configmap="gpu-report"),
                         ["rbac", "--user", "alice", "--report-configmap", "gpu-report"]),
        "report merge": lambda: _merge_request(tmp_path),
        "checks": lambda: (CatalogueRequest(Catalogue.CHECKS), ["checks", "-o", "json"]),
        "rules": lambda: (CatalogueRequest(Catalogue.RULES), ["rules", "-o", "json"]),
        "controllers": lambda: (CatalogueRequest(Catalogue.CONTROLLERS),
                                ["controllers", "-o", "json"]),
        "explain": lambda: (ExplainRequest("GPU101"), ["explain", "GPU101"]),
    }
    return requests[command]()


READS_NO_INPUT = ("guard", "rbac", "report merge", "checks", "rules", "controllers", "explain")


@pytest.mark.parametrize("command", READS_NO_INPUT)
def test_a_run_prints_nothing_and_its_result_is_what_the_cli_writes(
        command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, module, name = RUNS[command]
    request, argv = _request(command, tmp_path)
    capsys.readouterr()
    result = getattr(importlib.import_module(module), name)(request)
    assert capsys.readouterr() == ("", "")
    assert isinstance(result.exit_code(), ExitCode)
    # the CLI adds nothing of its own: what it writes is the result rendered
    ran = invoke(*argv)
    assert (ran.stdout, ran.exit_code) == (_shown(command, result), int(result.exit_code()))


def _shown(command: str, result: Any) -> str:
    from gpudra.cli.formats import render
    from gpudra.guard.render import as_yaml
    from gpudra.rbac import render as rbac_yaml
    from gpudra.report.formats import Kind, RenderOptions

    from gpudra import __version__

    if command == "guard":
        return as_yaml(result.objects)
    if command == "rbac":
        return rbac_yaml(list(result.objects))
    if command == "report merge":
        return render(Kind.FLEET, "json", result.merged, RenderOptions(tool_version=__version__))
    if command == "explain":
        return str(result.text)
    return render(Kind(command), "json", list(result.entries))


@pytest.mark.parametrize(("command", "fields", "refusal"), [
    ("rbac", {"user": "alice", "group": "team"}, "choose one of"),
    ("rbac", {"report_configmap": "ns/name"}, "takes a NAME"),
    ("report merge", {"reports": ("a.json",), "names": {"b.json": "x"}}, "no such REPORT"),
])
def test_a_run_refuses_a_bad_request_before_reading(command: str, fields: dict[str, Any],
                                                   refusal: str) -> None:
    from gpudra.rbac import RbacRequest
    from gpudra.report.merge_run import MergeRequest

    _, module, name = RUNS[command]
    request = (RbacRequest if command == "rbac" else MergeRequest)(**fields)
    with pytest.raises(UsageError, match=refusal):
        getattr(importlib.import_module(module), name)(request)
