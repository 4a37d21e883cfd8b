"""The README's lists of what gpudra offers are the CLI's own: every audit output format, every
command in "Status", and only `rev:` values pre-commit can check out (issue 36: `html` was
missing, Status named four commands, `rev: v0.1.0` named a tag that was never made)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import typer.main

from gpudra.cli import app
from gpudra.cli.formats import names
from gpudra.report.formats import Kind

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CODE = re.compile(r"`([^`]+)`")
REV = re.compile(r"^[#\s-]*rev:\s*(?P<rev>[^\s#]+)", re.M)
DEFAULT_BRANCH = "main"


def _section(title: str) -> str:
    found = re.search(rf"^## {re.escape(title)}\n(?P<body>.*?)(?=^## |\Z)", README, re.M | re.S)
    assert found, f"README has no '## {title}' section"
    return found.group("body")


def _paragraph_starting(prefix: str) -> str:
    paragraphs = re.split(r"\n\s*\n", README)
    found = [p for p in paragraphs if p.lstrip().startswith(prefix)]
    assert len(found) == 1, f"README: one paragraph starting {prefix!r}, found {len(found)}"
    return found[0]


def test_output_formats_paragraph_lists_every_audit_format() -> None:
    paragraph = _paragraph_starting("Output formats:")
    first_sentence = paragraph.split(" (audit's")[0]
    listed = CODE.findall(first_sentence)
    assert sorted(listed) == sorted(names(Kind.AUDIT)), listed


def test_output_formats_paragraph_names_the_verdict_formats_as_the_cli_has_them() -> None:
    paragraph = " ".join(_paragraph_starting("Output formats:").split())
    verdicts = paragraph.split("preflight, plan and verify take", 1)[1].split(")")[0]
    assert CODE.findall(verdicts) == list(names(Kind.OUTCOMES))


@pytest.mark.parametrize("command", sorted(typer.main.get_command(app).commands))
def test_status_names_every_command(command: str) -> None:
    assert command in CODE.findall(_section("Status")) or \
        any(code.startswith(f"{command} ") for code in CODE.findall(_section("Status"))), command


def _tags() -> set[str]:
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        return set()
    listed = subprocess.run([git, "-C", str(ROOT), "tag", "--list"], capture_output=True,
                            text=True, check=False)
    return set(listed.stdout.split())


@pytest.mark.parametrize("page", [".pre-commit-hooks.yaml", "README.md", "docs/ci.md"])
def test_pre_commit_revs_name_something_that_exists(page: str) -> None:
    revs = REV.findall((ROOT / page).read_text(encoding="utf-8"))
    allowed = _tags() | {DEFAULT_BRANCH}
    assert all(rev in allowed for rev in revs), (page, revs, sorted(allowed))


def test_the_hooks_file_shows_a_rev() -> None:
    assert REV.findall((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
