"""Standard input is `<stdin>` wherever a human format names a file (issue 36, item 5: a bare
`-` read as a missing value); the JSON keeps the path as given (`-`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudra.cli import app

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = (ROOT / "examples" / "apps").glob("*.yaml").__next__().read_text()
NOT_UTF8 = (b"apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, "
            b"resources: {limits: {nvidia.com/gpu: 1}}}]}\n\xff\xfe\n")


def _audit(text: str | bytes, *args: str) -> str:
    result = CliRunner().invoke(app, ["audit", "-", *args], input=text,
                                env={"NO_COLOR": "1", "COLUMNS": ""})
    return result.stdout + result.stderr


# (input, format, a line that names standard input as a person reads it)
CASES = [
    (MANIFEST, "table", lambda out: "<stdin>" in out.splitlines()),
    (MANIFEST, "markdown", lambda out: "| &lt;stdin&gt;:" in out),
    (NOT_UTF8, "table", lambda out: "  <stdin>: not UTF-8 text" in out),
]


@pytest.mark.parametrize(("text", "form", "named"), CASES)
def test_stdin_is_named_stdin(text: str, form: str, named) -> None:
    out = _audit(text, "-o", form)
    assert named(out), out
    assert "\n-\n" not in out and "| -:" not in out and "  -: " not in out


def test_the_json_keeps_the_path_as_given() -> None:
    data = json.loads(CliRunner().invoke(app, ["audit", "-", "-o", "json", "--fail-on", "never"],
                                         input=MANIFEST).stdout)
    assert {f["file"] for f in data["findings"]} == {"-"}
