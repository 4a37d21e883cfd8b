"""The static checks' set-up (issue 35 item 2, docs/typing.md): CI runs ruff and mypy before the
tests, and every module that mypy's settings name exists, so that a moved or renamed module
cannot silently fall out of the strict set or linger on the burn-down list."""

from __future__ import annotations

import pathlib
import re
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
MYPY = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
CI = (ROOT / ".ci" / "run").read_text()


def _named_modules() -> list[tuple[str, str]]:
    """(module, what the override does) for every gpudra module an override names."""
    named = []
    for override in MYPY.get("overrides", []):
        what = ("ignore_errors" if override.get("ignore_errors")
                else "strict" if override.get("disallow_untyped_defs") else "other")
        named += [(m, what) for m in override["module"] if m.startswith("gpudra")]
    return named


def _exists(module: str) -> bool:
    path = ROOT.joinpath(*module.removesuffix(".*").split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


@pytest.mark.parametrize(("module", "what"), _named_modules(),
                         ids=[f"{w}:{m}" for m, w in _named_modules()])
def test_every_module_mypy_names_exists(module: str, what: str) -> None:
    assert _exists(module), f"[tool.mypy] names {module} ({what}), which is not a module"


def _covers(pattern: str, module: str) -> bool:
    """mypy's override patterns: a name, or `package.*` for the package and every module under
    it (mypy applies `pkg.*` to pkg/__init__.py too)."""
    if not pattern.endswith(".*"):
        return module == pattern
    package = pattern.removesuffix(".*")
    return module == package or module.startswith(package + ".")


def _strict(module: str) -> bool:
    return any(_covers(p, module) for p, w in _named_modules() if w == "strict")


def test_no_module_ignores_errors() -> None:
    """The burn-down list is gone (issue 35 item 2): every module is checked, and no module
    goes back to `ignore_errors`."""
    assert [o for o in MYPY.get("overrides", []) if o.get("ignore_errors")] == []


# The modules left at mypy's defaults, each for a library without types (docs/typing.md).
NOT_STRICT = frozenset({"gpudra.sources.documents", "gpudra.cluster.connection"})


def _gpudra_modules() -> list[str]:
    found = []
    for path in sorted((ROOT / "gpudra").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def test_every_module_is_strict_but_those_left() -> None:
    """A new module joins the strict override with the code it is written next to."""
    modules = _gpudra_modules()
    assert [m for m in modules if not _strict(m) and m not in NOT_STRICT] == []
    assert NOT_STRICT <= set(modules)


def test_no_module_is_both_strict_and_ignored() -> None:
    ignored = [m for m, w in _named_modules() if w == "ignore_errors"]
    assert [m for m in ignored if _strict(m)] == []


@pytest.mark.parametrize("module", ["gpudra.results.model", "gpudra.k8s.objects", "gpudra.errors"])
def test_the_records_are_strict(module: str) -> None:
    assert _strict(module)


def _failing_step(script: str, command: str) -> re.Match[str] | None:
    """`if ! COMMAND ...; then ... fi` at the script's top level: a step nested in another
    block (run only on some path) does not count."""
    return re.search(rf"^if ! {re.escape(command)}\b.*?^fi$", script, re.S | re.M)


NESTED = "if [ -n \"$lint\" ]; then\n  if ! mypy; then\n    status=1\n  fi\nfi\n"
TOP_LEVEL = "if ! mypy; then\n  status=1\nfi\n"


@pytest.mark.parametrize(("script", "found"), [(TOP_LEVEL, True), (NESTED, False)],
                         ids=["top-level", "nested"])
def test_a_failing_step_counts_only_at_the_top_level(script: str, found: bool) -> None:
    assert (_failing_step(script, "mypy") is not None) == found


@pytest.mark.parametrize("command", ["ruff check", "mypy"])
def test_ci_runs_the_check_before_the_tests_and_fails_on_it(command: str) -> None:
    check = _failing_step(CI, command)
    assert check, f".ci/run does not run `{command}` as a failing step at its top level"
    assert "status=1" in check.group(0)
    # the command itself, not a comment naming it
    assert check.start() < re.search(r"^python -m pytest\b", CI, re.M).start()


CI_DOC = (ROOT / "docs" / "ci.md").read_text()
CI_SECTION = CI_DOC[CI_DOC.index("## This repository's own CI"):]


@pytest.mark.parametrize("stage", re.findall(r'^elapsed "([^"]+)"$', CI, re.M))
def test_docs_ci_names_every_stage_ci_run_times(stage: str) -> None:
    # a stage's name may wrap at a line end in the Markdown
    assert f"`{stage}`" in re.sub(r"\s*\n\s*", " ", CI_SECTION), \
        f"docs/ci.md's CI section does not name the stage `{stage}` (.ci/run)"


def test_docs_ci_says_how_the_workers_are_grouped() -> None:
    """The grouping is the scheduler tests/conftest.py returns, not an xdist_group mark."""
    conftest = (ROOT / "tests" / "conftest.py").read_text()
    assert "def pytest_xdist_make_scheduler" in conftest and "xdist_group(" not in conftest
    assert "`pytest_xdist_make_scheduler`" in CI_SECTION
    assert "every test gets an `xdist_group` mark" not in CI_SECTION


SMOKE_CLEANUP = ('cat "$smoke_log"', 'rm -rf "$smoke_log" "$smoke_copy"')


def _early_exits(script: str) -> list[str]:
    """The top-level `if ...; then ... exit N; fi` blocks after the smoke stage starts (its
    log and its copy of the checkout exist from then on)."""
    after = script[script.index("smoke_log=$(mktemp)"):]
    return [block for block in re.findall(r"^if .*?^fi$", after, re.S | re.M)
            if re.search(r"^\s*exit \d", block, re.M)]


@pytest.mark.parametrize("block", _early_exits(CI) or ["(none found)"])
def test_an_early_exit_prints_and_removes_the_smoke_stages_files(block: str) -> None:
    assert block != "(none found)"
    ending = block[:re.search(r"^\s*exit \d", block, re.M).start()]
    for line in SMOKE_CLEANUP:
        assert line in ending, f"{line} missing before the exit in:\n{block}"
    assert ending.index('wait "$smoke_pid"') < ending.index(SMOKE_CLEANUP[0])
