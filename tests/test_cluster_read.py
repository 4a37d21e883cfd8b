"""Every live report names the cluster it read (kubeconfig context and API server, credentials
redacted) and when (UTC, ISO 8601), in every format it has (issue 32): audit, verify, preflight,
plan, cutover and convert --from-cluster, each run as users run it against the fake API
server. One value type says it everywhere (gpudra.results.model.ClusterRead)."""

from __future__ import annotations

import datetime
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudra.cluster.records import ClusterTarget, cluster_read
from tests.fakeapi import CONTEXT, FakeCluster
from tests.verify import fleet as f
from tests.verify.test_verify import after_cutover

STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")

# (command line, format): every live command in every format it renders.
RUNS = [
    *((("audit",), fmt) for fmt in ("table", "json", "yaml", "sarif", "junit", "markdown",
                                    "github", "html")),
    *((("verify",), fmt) for fmt in ("table", "json", "junit", "markdown", "github", "html")),
    *((("preflight",), fmt) for fmt in ("table", "json", "junit", "markdown", "github",
                                        "html")),
    *((("plan",), fmt) for fmt in ("table", "json", "junit", "markdown", "github", "html")),
    *((("cutover",), fmt) for fmt in ("table", "markdown", "json")),
    *((("convert", "--from-cluster"), fmt) for fmt in ("table", "json")),
]


@pytest.fixture(scope="module")
def cluster() -> Any:
    with FakeCluster(after_cutover(), tls=False) as fake:
        yield fake


def run(fake: Any, command: tuple[str, ...], fmt: str, tmp: Path) -> str:
    extra = ("--output-dir", str(tmp / "out")) if command[0] == "convert" else ()
    done = subprocess.run([sys.executable, "-m", "gpudra", *command, "-o", fmt, *extra,
                           "--kubeconfig", str(fake.kubeconfig)], capture_output=True,
                          text=True, timeout=120, cwd=tmp, check=False)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def read_of(text: str, fmt: str) -> dict[str, Any] | str:
    """The report's own word on the cluster: the structured value in machine formats, the
    text elsewhere."""
    if fmt == "json":
        return json.loads(text)["cluster"]
    if fmt == "yaml":
        return yaml.safe_load(text)["cluster"]
    if fmt == "sarif":
        return json.loads(text)["runs"][0]["invocations"][0]["properties"]["cluster"]
    if fmt == "junit":
        root = ET.fromstring(text)
        props = {p.get("name"): p.get("value") for p in root.iter("property")}
        return {key: props[f"cluster.{key}"] for key in ("context", "server", "read_at")}
    return text


@pytest.mark.parametrize("command,fmt", RUNS, ids=[f"{' '.join(c)}-{f}" for c, f in RUNS])
def test_every_live_report_names_the_cluster_and_when(cluster: Any, command: tuple[str, ...],
                                                      fmt: str, tmp_path: Path) -> None:
    before = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    said = read_of(run(cluster, command, fmt, tmp_path), fmt)
    after = datetime.datetime.now(datetime.UTC)
    if isinstance(said, dict):
        assert (said["context"], said["server"]) == (CONTEXT, cluster.url)
        stamp = said["read_at"]
        assert STAMP.fullmatch(stamp)
    else:
        assert CONTEXT in said and cluster.url in said, said[:400]
        found = STAMP.findall(said)
        assert found, said[:400]
        stamp = found[0]
    when = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.UTC)
    assert before <= when <= after  # the time of this read, not a fixed or local time


def test_a_report_from_files_names_no_cluster(tmp_path: Path) -> None:
    (tmp_path / "d.yaml").write_text(yaml.safe_dump(f.deployment("ml", "x", f.pod_spec(gpus=1))))
    done = subprocess.run([sys.executable, "-m", "gpudra", "audit", str(tmp_path), "-o", "json"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert "cluster" not in json.loads(done.stdout)


@pytest.mark.parametrize("server,shown", [
    ("https://admin:s3cret@api.example:6443", "https://***@api.example:6443"),
    ("https://api.example:6443/?token=abc#x", "https://api.example:6443/"),
    ("https://api.example:6443", "https://api.example:6443"),
])
def test_the_server_is_shown_without_credentials(server: str, shown: str) -> None:
    at = datetime.datetime(2026, 12, 7, 14, 3, 9, 999, tzinfo=datetime.timezone(
        datetime.timedelta(hours=2)))
    read = cluster_read(ClusterTarget(server, "prod", "default", True), at)
    assert read.as_data() == {"context": "prod", "server": shown,
                              "read_at": "2026-12-07T12:03:09Z"}
    assert read.describe() == f'cluster: context "prod" ({shown}), read 2026-12-07T12:03:09Z'
    in_pod = cluster_read(ClusterTarget(server, None, "default", True), at)
    assert in_pod.describe().startswith("cluster: the in-cluster service account (")


def test_each_cluster_of_a_multi_cluster_audit_names_its_read(cluster: Any,
                                                             tmp_path: Path) -> None:
    """`--context a --context b`: each cluster entry has its own read (the one that could not
    be read has none); the table and the page name it; report merge keeps each input's."""
    def audit(*args: str) -> str:
        return subprocess.run([sys.executable, "-m", "gpudra", "audit", *args, "--kubeconfig",
                               str(cluster.kubeconfig)], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path, check=False).stdout

    contexts = ("--context", CONTEXT, "--context", "fake-expired")
    entries = {c["name"]: c for c in json.loads(audit(*contexts, "-o", "json"))["clusters"]}
    assert entries[CONTEXT]["cluster"]["server"] == cluster.url
    assert STAMP.fullmatch(entries[CONTEXT]["cluster"]["read_at"])
    assert "cluster" not in entries["fake-expired"]
    for fmt in ("table", "html"):
        assert cluster.url in audit(*contexts, "-o", fmt), fmt
    one = tmp_path / "one.json"
    one.write_text(audit("-o", "json"))
    merged = subprocess.run([sys.executable, "-m", "gpudra", "report", "merge", str(one),
                             "-o", "json"], capture_output=True, text=True, timeout=120,
                            check=False)
    [entry] = json.loads(merged.stdout)["clusters"]
    assert entry["cluster"] == json.loads(one.read_text())["cluster"], merged.stderr
