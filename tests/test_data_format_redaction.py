"""Every data format (JSON, YAML, SARIF) redacts the credentials in what it prints, whatever
characters they hold: before, `convert -o json` and `cutover -o json` wrote `\\u00e9` escapes
(json.dumps' ensure_ascii), so `https://usér:hunter2@` reached stdout as `us\\u00e9r:hunter2@`,
out of reach of the redaction of the text; and an escape any encoder writes (`\\u0001`, YAML's
`\\xE9` in a double-quoted string) split a credential the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gpudra.printable import redacted_data
from gpudra.report import json_text, yaml_report
from tests.support.run import invoke
from tests.verify import fleet as f

# What must never be printed: a non-ASCII userinfo and a bearer token with a non-ASCII letter.
SECRET = "https://usér:hunter2@data.example/x Bearer tökenvalue"
LEAKS = ("hunter2", "kenvalue")
JOB = f"""\
apiVersion: batch/v1
kind: Job
metadata: {{name: train, namespace: ml}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: trainer:1
        env:
        - {{name: U, value: "{SECRET}"}}
        resources:
          limits:
            nvidia.com/gpu: 1
"""


def _manifest(tmp_path: Path) -> str:
    """A manifest whose path, as given, holds the credentials (every report names its file)."""
    folder = tmp_path / "https:" / "usér:hunter2@data.example" / "Bearer tökenvalue"
    folder.mkdir(parents=True)
    (folder / "job.yaml").write_text(JOB, encoding="utf-8")
    return f"{tmp_path}/https://usér:hunter2@data.example/Bearer tökenvalue/job.yaml"


def _fleet(tmp_path: Path) -> str:
    """A fleet whose node pool (a label value, printed by cutover) holds the credentials."""
    fleet = [f.node("a-1", 8, pool=SECRET), f.node("b-1", 8, pool="b"),
             f.deployment("ml", "llm", f.pod_spec(gpus=2))]
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump_all(fleet, allow_unicode=True),
                                         encoding="utf-8")
    return str(tmp_path / "fleet.yaml")


# (command and format, arguments before the input, how the input is given, what the output
# must show redacted). SARIF passes through json_text too (the unit cases below); its artifact
# URIs percent-encode a file's path, which names a file on disk, not a credential.
RUNS = {
    "audit -o json": (["audit", "-o", "json"], _manifest, "https://***@data.example"),
    "audit -o yaml": (["audit", "-o", "yaml"], _manifest, "https://***@data.example"),
    "plan -o json": (["plan", "-o", "json", "--inventory", "{inventory}"], _manifest,
                     "https://***@data.example"),
    "convert --diff -o json": (["convert", "--diff", "-o", "json"], _manifest,
                               "Bearer ***"),
    "cutover -o json": (["cutover", "--target-version", "1.36", "-o", "json", "--from"],
                        _fleet, "Bearer ***"),
}


@pytest.mark.parametrize("run", sorted(RUNS))
def test_a_data_format_prints_no_credential(run: str, tmp_path: Path) -> None:
    arguments, given, shown = RUNS[run]
    inventory = tmp_path / "nodes.yaml"
    inventory.write_text(yaml.safe_dump(f.node("a-1", 8, dra=True)), encoding="utf-8")
    done = invoke(*(a.format(inventory=inventory) for a in arguments), given(tmp_path))
    assert done.exit_code in (0, 1), done.output
    for leak in LEAKS:
        assert leak not in done.stdout, done.stdout
    assert shown in done.stdout


def test_the_json_diff_is_redacted_where_it_says() -> None:
    from gpudra.convert.summary import _diff_data

    diff = f"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a: {SECRET}\n+b: {SECRET}\n context\n"
    data = _diff_data(diff)
    lines = data["diff"].splitlines()
    assert data["diff_redacted_lines"] == [n for n, line in enumerate(lines, start=1)
                                           if "***" in line] == [4, 5]


# Strings an encoder escapes, so that the credential in them is split in the text:
# a C0 control (JSON `\u0001`, YAML `\x01`), a non-ASCII letter beside one (YAML writes the
# whole string with `\xE9`), a quote.
SPLIT = [
    "https://us\x01er:hunter2@host/x",
    "https://usér\x01:hunter2@host/x",
    "auth: Bearer kenvalue\x01é",
    "Bearer tökenvalue",
]


@pytest.mark.parametrize("text", SPLIT)
@pytest.mark.parametrize("dump", [json_text.dumps, yaml_report.dump], ids=["json", "yaml"])
def test_an_escape_never_splits_a_credential_from_its_redaction(text: str, dump: object) -> None:
    assert callable(dump)
    written = dump({"message": text, "items": [{text: (text,)}]})
    for leak in LEAKS:
        assert leak not in written
    assert written.count("***") == 3


def test_redacted_data_copies_and_redacts_every_string() -> None:
    data = {"a": [SECRET, ("x", SECRET)], SECRET: {"n": 1, "b": None}}
    assert redacted_data(data) == {
        "a": ["https://***@data.example/x Bearer ***",
              ["x", "https://***@data.example/x Bearer ***"]],
        "https://***@data.example/x Bearer ***": {"n": 1, "b": None}}
    assert data[SECRET] == {"n": 1, "b": None}  # the input is kept as it was
    assert json.loads(json_text.dumps(data)) == redacted_data(data)


@pytest.mark.parametrize("fmt", ["json", "junit", "table"])
def test_verify_prints_no_credential_a_cluster_s_event_holds(fmt: str) -> None:
    """verify quotes the scheduler's events: an event's message is the cluster's text."""
    import subprocess
    import sys

    from tests.fakeapi import FakeCluster

    deploy = f.deployment("ml", "nomatch", f.pod_spec(template_name="gpu"))
    pod = f.pod("ml", "nomatch-0", f.pod_spec(template_name="gpu"), phase="Pending",
                owner=("ReplicaSet", "nomatch-rs"), claims={"gpu": "nomatch-0-gpu"})
    state = f.state(f.node("dra-1", 8, dra=True), f.gpu_slice("dra-1", 8), f.device_class(),
                    f.template("ml", "gpu"), deploy, f.replicaset(deploy), pod,
                    f.claim("ml", "nomatch-0-gpu"),
                    f.failed_scheduling("ml", "nomatch-0", f"0/1 nodes are available: {SECRET}"))
    with FakeCluster(state, tls=False) as cluster:
        done = subprocess.run([sys.executable, "-m", "gpudra", "verify", "--kubeconfig",
                               str(cluster.kubeconfig), "-o", fmt], capture_output=True,
                              text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    assert "***" in done.stdout, done.stdout
    for leak in LEAKS:
        assert leak not in done.stdout + done.stderr
