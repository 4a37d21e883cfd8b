"""`convert --diff` never prints a credential a manifest holds (docs/security.md: every output is
redacted), and says where it showed one as `***`: `-o json` lists the diff's redacted lines
(`diff_redacted_lines`), the text diff a line on stderr; such a diff does not apply as printed
(git apply refuses it rather than writing `***`), and a diff without one applies as before."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.run import gpudra_process

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  annotations:
    note: {annotation}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: trainer:1
        env:
        - name: DATA_URL
          value: {url}
        resources:
          limits:
            nvidia.com/gpu: 1
"""
# (case, the annotation, the env value, the secrets that must never be printed, whether the
# diff shows one: the annotation is outside every hunk's context, the env value inside)
CASES = [
    ("url userinfo", "plain", "https://alice:s3cret@data.example.com/set", ("alice:s3cret",),
     True),
    ("bearer token", "plain", "Bearer tok.en-123", ("tok.en-123",), True),
    ("both", "plain", "Bearer tok.en-123 https://alice:s3cret@data.example.com/set",
     ("alice:s3cret", "tok.en-123"), True),
    # YAML folds the indented next line into the value: one scalar "Bearer tok.en-123".
    ("bearer, token on the next line", "plain", "Bearer\n            tok.en-123",
     ("tok.en-123",), True),
    ("outside the diff", "Bearer tok.en-123", "https://data.example.com/set", (), False),
    ("none", "plain", "https://data.example.com/set", (), False),
]
PARAMETERS = [case[1:] for case in CASES]
IDS = [case[0] for case in CASES]

def _tree(tmp_path: Path, annotation: str, url: str) -> Path:
    (tmp_path / "job.yaml").write_text(JOB.format(annotation=annotation, url=url))
    return tmp_path


def _starred(diff: str) -> list[int]:
    return [number for number, line in enumerate(diff.splitlines(), start=1) if "***" in line]


@pytest.mark.parametrize(("annotation", "url", "secrets", "shown"), PARAMETERS, ids=IDS)
def test_the_json_diff_says_which_lines_were_redacted(tmp_path: Path, annotation: str, url: str,
                                                      secrets: tuple[str, ...],
                                                      shown: bool) -> None:
    done = gpudra_process("convert", "job.yaml", "--diff", "-o", "json",
                          cwd=_tree(tmp_path, annotation, url))
    assert done.returncode == 1, done.stderr
    for secret in secrets:
        assert secret not in done.stdout + done.stderr
    [entry] = json.loads(done.stdout)["files"]
    assert entry["diff_redacted_lines"] == _starred(entry["diff"])
    assert bool(entry["diff_redacted_lines"]) == shown


@pytest.mark.parametrize(("annotation", "url", "secrets", "shown"), PARAMETERS, ids=IDS)
def test_the_text_diff_is_redacted_and_says_so(tmp_path: Path, annotation: str, url: str,
                                               secrets: tuple[str, ...], shown: bool) -> None:
    done = gpudra_process("convert", "job.yaml", "--diff", cwd=_tree(tmp_path, annotation, url))
    assert done.returncode == 1, done.stderr
    for secret in secrets:
        assert secret not in done.stdout + done.stderr
    lines = _starred(done.stdout)
    notes = [line for line in done.stderr.splitlines() if "shows a credential as ***" in line]
    if not shown:
        assert (lines, notes) == ([], [])
        return
    assert notes == [f"gpudra: job.yaml: the diff shows a credential as *** on its "
                     f"{'line' if len(lines) == 1 else 'lines'} {', '.join(map(str, lines))} "
                     "(credentials are never printed: docs/security.md), so it does not apply "
                     "as printed; `gpudra convert` without --diff writes the file itself"]


@pytest.mark.parametrize(("annotation", "url", "applies"), [
    ("plain", "https://alice:s3cret@data.example.com/set", False),
    ("plain", "https://data.example.com/set", True),
], ids=["redacted", "clean"])
def test_git_apply_takes_a_clean_diff_and_refuses_a_redacted_one(
        tmp_path: Path, annotation: str, url: str, applies: bool) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not on PATH")
    tree = _tree(tmp_path, annotation, url)
    diff = gpudra_process("convert", "job.yaml", "--diff", cwd=tree).stdout
    (tmp_path / "change.diff").write_text(diff)
    checked = subprocess.run(["git", "apply", "--check", "change.diff"], cwd=tree,
                             capture_output=True, text=True)
    assert (checked.returncode == 0) == applies, checked.stderr


# A "Bearer" (or "Basic") ending a line holds no credential: the next line is not its token
# (redaction never crosses a line break), so the diff stays a diff that applies as printed.
LINE_END_CASES = [
    ("comment before the change", "plain", "https://data.example.com/set  # Bearer"),
    ("value before the change", "plain", "Bearer"),
    ("lowercase, trailing blanks", "plain", "'x' # bearer  "),
    ("basic", "plain", "Basic"),
]


def _job_with_limits_comment(tmp_path: Path, annotation: str, url: str) -> Path:
    tree = _tree(tmp_path, annotation, url)
    job = tree / "job.yaml"
    # The line just before the `-` line of the limit ends in the word too.
    job.write_text(job.read_text().replace("limits:\n", f"limits:  # {url.split()[-1]}\n"))
    return tree


@pytest.mark.parametrize(("annotation", "url"), [case[1:] for case in LINE_END_CASES],
                         ids=[case[0] for case in LINE_END_CASES])
def test_a_word_ending_a_line_redacts_nothing(tmp_path: Path, annotation: str,
                                              url: str) -> None:
    tree = _job_with_limits_comment(tmp_path, annotation, url)
    done = gpudra_process("convert", "job.yaml", "--diff", cwd=tree)
    assert done.returncode == 1, done.stderr
    assert "***" not in done.stdout + done.stderr
    body = done.stdout.splitlines()[2:]
    assert body and all(line[:1] in " +-@\\" for line in body), done.stdout
    as_json = gpudra_process("convert", "job.yaml", "--diff", "-o", "json", cwd=tree)
    [entry] = json.loads(as_json.stdout)["files"]
    assert (entry["diff_redacted_lines"], "***" in entry["diff"]) == ([], False)
    if shutil.which("git") is not None:
        (tmp_path / "change.diff").write_text(done.stdout)
        checked = subprocess.run(["git", "apply", "--check", "change.diff"], cwd=tree,
                                 capture_output=True, text=True)
        assert checked.returncode == 0, checked.stderr
