"""`gpudra audit --context a --context b` and `--all-contexts`: several fake API servers, each
with its own state and token, read at once; one that cannot be read is an entry, not the end."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from gpudra.cli import app
from gpudra.cluster import ClusterOptions
from gpudra.config import Config
from gpudra.dra.versions import DEFAULT
from gpudra.errors import UsageError
from gpudra.audit.multicluster import audit_contexts
from gpudra.results.model import Report
from tests.fakeapi import FakeCluster
from tests.fakeapi.kubeconfig import dead_port

STATES = Path(__file__).parent / "states"
SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "report-schema.json").read_text())
ENV = {"KUBECONFIG": "", "HOME": "/nonexistent"}

# "west": one GPU Deployment still on the device plugin, and nothing else.
WEST = {"version": "1.34.2", "token": "west-token", "objects": [
    {"apiVersion": "apps/v1", "kind": "Deployment",
     "metadata": {"name": "trainer", "namespace": "ml"},
     "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "t"}},
              "template": {"metadata": {"labels": {"app": "t"}},
                           "spec": {"containers": [{
                               "name": "main", "image": "cuda",
                               "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}}}}]}


def _east_state() -> dict[str, Any]:
    state = yaml.safe_load((STATES / "midmigration.yaml").read_text())
    return {**state, "token": "east-token"}  # its own token: a shared client would mix them


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A kubeconfig with east and west (two fakes, different tokens), down (nothing listens)
    and anon (east's server, no credentials: every read but /version is 403)."""
    with FakeCluster(_east_state(), tls=False) as east, FakeCluster(WEST, tls=False) as west:
        servers = {"east": east.url, "west": west.url, "down": f"http://127.0.0.1:{dead_port()}",
                   "anon": east.url}
        users = {"east": {"token": "east-token"}, "west": {"token": "west-token"},
                 "down": {"token": "x"}, "anon": {}}
        path = tmp_path_factory.mktemp("fleet") / "kubeconfig"
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "east",
            "clusters": [{"name": n, "cluster": {"server": s}} for n, s in servers.items()],
            "users": [{"name": n, "user": u} for n, u in users.items()],
            "contexts": [{"name": n, "context": {"cluster": n, "user": n}} for n in servers]},
            sort_keys=False))
        yield {"kubeconfig": str(path), "east": east, "west": west}


def _audit(fleet: dict[str, Any], *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["audit", "--kubeconfig", fleet["kubeconfig"], *args],
                                env=ENV)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


def test_every_cluster_is_read_and_a_failed_one_is_an_entry(fleet: dict[str, Any]) -> None:
    code, out, err = _audit(fleet, "-o", "json", "--context", "east", "--context", "west",
                            "--context", "down", "--context", "anon", "--context", "nope")
    report = json.loads(out)
    jsonschema.Draft202012Validator(SCHEMA).validate(report)
    assert code == 3  # the worst cluster: some could not be read
    clusters = {c["name"]: c for c in report["clusters"]}
    assert [c["name"] for c in report["clusters"]] == ["east", "west", "down", "anon", "nope"]
    assert clusters["east"]["error"] is None and clusters["west"]["error"] is None
    assert "connection refused" in clusters["down"]["error"]
    assert "403" in clusters["anon"]["error"] and "system:anonymous" in clusters["anon"]["error"]
    assert clusters["nope"]["error"].startswith('context "nope" not found')
    assert clusters["east"]["summary"]["gpu_workloads"] == 10  # states/midmigration.yaml
    assert clusters["west"]["summary"]["gpu_workloads"] == 1
    assert clusters["west"]["summary"]["findings"]["warning"] >= 1
    # Each finding names its cluster; west's Deployment is west's alone.
    contexts = {f["cluster_name"] for f in report["findings"]}
    assert contexts == {"east", "west"}
    trainer = [f for f in report["findings"] if f["name"] == "trainer" and f["rule"] == "GPU101"]
    assert [f["cluster_name"] for f in trainer] == ["west"]
    assert trainer[0]["cluster"]["replicas"] == 1  # the live facts are still there
    # The failed ones are errors too (the exit code, every format's error list) ...
    assert {e["cluster_name"] for e in report["errors"]} == {"down", "anon", "nope"}
    trainers = [w for w in report["workloads"] if w["name"] == "trainer"]
    assert [w["cluster"] for w in trainers] == ["west"]
    # ... and on stderr, once each, after a line per cluster as it finished.
    for name in ("east", "west", "down", "anon", "nope"):
        assert f"gpudra: cluster {name}: " in err
    assert err.count("connection refused") == 1


def test_report_merge_reads_it_and_keeps_every_cluster(fleet: dict[str, Any],
                                                       tmp_path: Path) -> None:
    """The multi-cluster report is the shape `gpudra report merge` writes and reads."""
    _, out, _ = _audit(fleet, "-q", "-o", "json", "--context", "west", "--context", "down")
    (tmp_path / "fleet.json").write_text(out)
    result = CliRunner().invoke(app, ["report", "merge", str(tmp_path / "fleet.json"),
                                      "-o", "json"])
    merged = json.loads(result.stdout)
    assert result.exit_code == 3, result.stderr  # down could not be read
    assert [(c["name"], c["error"] is None) for c in merged["clusters"]] == \
        [("west", True), ("down", False)]
    assert merged["summary"]["gpu_workloads"] == json.loads(out)["summary"]["gpu_workloads"]


def test_the_top_summary_is_the_sum_of_the_clusters(fleet: dict[str, Any]) -> None:
    _, out, _ = _audit(fleet, "-o", "json", "--context", "east", "--context", "west")
    report = json.loads(out)
    top, parts = report["summary"], [c["summary"] for c in report["clusters"]]
    for key in ("objects_read", "errors", "gpu_workloads", "on_dra", "on_bridge",
                "on_device_plugin", "suppressed"):
        assert top[key] == sum(p[key] for p in parts), key
    for severity in ("error", "warning", "info"):
        assert top["findings"][severity] == sum(p["findings"][severity] for p in parts)
    assert len(report["findings"]) == sum(sum(p["findings"].values()) for p in parts)
    migrated = top["on_dra"] + top["on_bridge"]
    assert top["percent_migrated"] == round(100 * migrated / top["gpu_workloads"], 1)
    ml = {ns["namespace"]: ns for ns in top["namespaces"]}["ml"]  # in both clusters
    assert ml["gpu_workloads"] == 4 + 1


def test_exit_code_follows_the_worst_cluster(fleet: dict[str, Any]) -> None:
    assert _audit(fleet, "-q", "--context", "east", "--context", "west")[0] == 1  # findings
    assert _audit(fleet, "-q", "--context", "east", "--context", "west",
                  "--fail-on", "never")[0] == 0
    assert _audit(fleet, "-q", "--context", "west", "--context", "down",
                  "--fail-on", "never")[0] == 3  # unreadable beats everything


def test_table_and_markdown_group_by_cluster(fleet: dict[str, Any]) -> None:
    _, table, err = _audit(fleet, "-q", "--context", "west", "--context", "down")
    assert err.count("gpudra: cluster ") == 0  # -q: no progress lines
    west, down, overview = table.index("Cluster west"), table.index("Cluster down"), \
        table.index("Clusters (2)")
    assert west < table.index("Deployment/trainer") < down < overview
    assert "1 of 2 clusters read" in table
    _, markdown, _ = _audit(fleet, "-o", "markdown", "--context", "west", "--context", "down")
    assert markdown.startswith("## gpudra: 2 clusters, ")
    assert "### Cluster `west`: " in markdown and "### Cluster `down`: " in markdown
    assert "| down | 0 | 0 | - | not read: cannot reach the cluster" in markdown


def test_sarif_junit_and_github_name_the_cluster(fleet: dict[str, Any], tmp_path: Path) -> None:
    sarif, junit = tmp_path / "a.sarif", tmp_path / "a.xml"
    _, github, _ = _audit(fleet, "-q", "--context", "east", "--context", "west", "-o", "github",
                          "-o", f"sarif={sarif}", "-o", f"junit={junit}")
    results = json.loads(sarif.read_text())["runs"][0]["results"]
    trainer = [r for r in results if r["properties"].get("name") == "trainer"]
    assert trainer and {r["properties"]["cluster_name"] for r in trainer} == {"west"}
    assert trainer[0]["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == \
        "west:ml/Deployment/trainer"
    assert "west/ml/Deployment/trainer: " in github
    assert "[west/ml/Deployment/trainer]" in junit.read_text()


def test_html_groups_by_cluster(fleet: dict[str, Any], tmp_path: Path) -> None:
    """The page of a many-cluster audit has a row per cluster (the failed one with its reason)
    and names each workload's and finding's cluster."""
    page = tmp_path / "fleet.html"
    _audit(fleet, "-q", "--context", "east", "--context", "west", "--context", "down",
           "-o", f"html={page}")
    text = page.read_text()
    assert "Clusters (3)" in text
    for name in ("east", "west", "down"):
        assert f'<th scope="row">{name}</th>' in text
    assert "connection refused" in text
    assert "<td>west</td>" in text  # west's trainer, in the workloads and findings tables


def test_one_context_is_todays_audit(fleet: dict[str, Any]) -> None:
    """`--context east` is the single-cluster audit, byte for byte: the same output as the
    kubeconfig's current context (east), no cluster grouping, no `cluster_name` keys."""
    for fmt in ("json", "table", "markdown", "sarif"):
        named = _unstamped(_audit(fleet, "-q", "-o", fmt, "--context", "east"))
        current = _unstamped(_audit(fleet, "-q", "-o", fmt))
        assert named == current, fmt
        assert "Cluster east" not in named[1] and '"cluster_name"' not in named[1]
    assert "clusters" not in json.loads(_audit(fleet, "-o", "json", "--context", "east")[1])
    # the same context twice is one cluster, too
    assert _unstamped(_audit(fleet, "-q", "--context", "east", "--context", "east")) == \
        _unstamped(_audit(fleet, "-q", "--context", "east"))


def _unstamped(run: tuple[int, str, str]) -> tuple[int, str, str]:
    """A run with the time its cluster was read left out: two runs read at different
    seconds (tests/test_cluster_read.py checks the time itself)."""
    return run[0], _STAMP.sub("<read at>", run[1]), run[2]


_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def test_all_contexts_reads_every_context_of_the_kubeconfig(fleet: dict[str, Any]) -> None:
    code, out, _ = _audit(fleet, "-q", "-o", "json", "--all-contexts", "--max-parallel", "2")
    assert [c["name"] for c in json.loads(out)["clusters"]] == ["east", "west", "down", "anon"]
    assert code == 3


@pytest.mark.parametrize("args, message", [
    (["--all-contexts", "--context", "east"], "choose one of --context and --all-contexts"),
    (["--context", "east", "--context", "west", "--baseline", "b.json"],
     "--baseline and --write-baseline take one cluster"),
    (["--context", "east", "--context", "west", "--max-parallel", "0"],
     "--max-parallel must be at least 1"),
    ([".", "--all-contexts"], "are for cluster audits"),
])
def test_usage_errors(fleet: dict[str, Any], args: list[str], message: str) -> None:
    code, _, err = _audit(fleet, *args)
    assert code == 2 and message in err


def test_no_more_than_max_parallel_clusters_are_read_at_once() -> None:
    """Six clusters, at most two at a time: each read waits until a second one is running (or
    a while), so the count reaches the bound, and never passes it."""
    lock, running, peak = threading.Lock(), [0], [0]
    two = threading.Event()
    seen: list[str | None] = []

    def read(options: ClusterOptions, config: Config, target: Any) -> Report:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            seen.append(options.context)
            if running[0] >= 2:
                two.set()
        two.wait(timeout=5)
        time.sleep(0.02)
        with lock:
            running[0] -= 1
        return Report((), (), (), 0, 0, 0, (), source="cluster", objects_read=1)

    names = [f"c{i}" for i in range(6)]
    report = audit_contexts(names, ClusterOptions(kubeconfig="k", namespace="ml"), Config(),
                            target=DEFAULT, max_parallel=2, audit_one=read)
    assert peak[0] == 2
    assert sorted(seen) == names
    assert [c.name for c in report.clusters] == names  # the order asked for, not finished
    assert report.objects_read == 6
    with pytest.raises(UsageError):
        audit_contexts(names, ClusterOptions(), Config(), target=DEFAULT, max_parallel=0,
                       audit_one=read)


def test_contexts_keep_their_other_flags() -> None:
    """Each cluster gets the same -n, --kubeconfig and --request-timeout, its own context."""
    got: list[ClusterOptions] = []
    lock = threading.Lock()

    def read(options: ClusterOptions, config: Config, target: Any) -> Report:
        with lock:
            got.append(options)
        return Report((), (), (), 0, 0, 0, (), source="cluster")

    base = ClusterOptions(kubeconfig="k", namespace="ml", request_timeout=5.0)
    audit_contexts(["a", "b"], base, Config(), target=DEFAULT, audit_one=read)
    assert sorted((o.context, o.kubeconfig, o.namespace, o.request_timeout) for o in got) == \
        [("a", "k", "ml", 5.0), ("b", "k", "ml", 5.0)]
