"""`gpudra report merge` (issue 20): reports of three fake clusters become one fleet report
that validates against the schema, whose counts are the sums of the clusters', and whose
HTML groups by cluster; invalid or other-version reports are refused with one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from gpudra.cli import app
from tests.fakeapi import FakeCluster
from tests.report.page import Page, network_urls
from tests.report.test_html import check_counts

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "report-schema.json").read_text())
STATES = ROOT / "tests" / "cluster" / "states"
ENV = {"KUBECONFIG": "", "HOME": "/nonexistent"}
COUNTS = ("files_scanned", "documents_parsed", "objects_read", "skipped", "errors",
          "suppressed", "gpu_workloads", "on_device_plugin", "on_dra", "on_bridge")


def small_lab() -> dict[str, Any]:
    """A third cluster: one workload on claims, one bare GPU pod."""
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "one-gpu", "namespace": "lab"},
                "spec": {"spec": {"devices": {"requests": [
                    {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}}
    on_claims = {"apiVersion": "apps/v1", "kind": "Deployment",
                 "metadata": {"name": "embed", "namespace": "lab", "uid": "d-embed"},
                 "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "embed"}},
                          "template": {"metadata": {"labels": {"app": "embed"}}, "spec": {
                              "resourceClaims": [{"name": "gpu",
                                                  "resourceClaimTemplateName": "one-gpu"}],
                              "containers": [{"name": "main", "image": "x", "resources": {
                                  "claims": [{"name": "gpu"}]}}]}}}}
    bare = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "debug", "namespace": "lab", "uid": "p-debug"},
            "spec": {"containers": [{"name": "main", "image": "x", "resources": {
                "limits": {"nvidia.com/gpu": "2"}}}]}, "status": {"phase": "Running"}}
    return {"version": "1.34.2", "token": "t0ken", "user": "system:serviceaccount:x:y",
            "objects": [template, on_claims, bare]}


def run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), env=ENV)


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> list[Path]:
    """Live audit reports of three fake clusters, named by their files."""
    out = tmp_path_factory.mktemp("fleet")
    paths = []
    for name, state in (("east", STATES / "audit.yaml"), ("west", STATES / "midmigration.yaml"),
                        ("lab", small_lab())):
        with FakeCluster(state, tls=False) as fake:
            path = out / f"{name}.json"
            result = run("audit", "--kubeconfig", str(fake.kubeconfig), "-q",
                         "-o", f"json={path}")
            assert result.exit_code in (1, 3), result.output
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def merged(reports, tmp_path_factory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("merged")
    result = run("report", "merge", *map(str, reports), "-o", f"json={out / 'fleet.json'}",
                 "-o", f"html={out / 'fleet.html'}", "-o", f"markdown={out / 'fleet.md'}")
    # east's audit could not list PrometheusRules (the state denies it): the worst input is 3
    assert result.exit_code == 3, result.output
    data = json.loads((out / "fleet.json").read_text())
    data["_html"] = (out / "fleet.html").read_text()
    data["_markdown"] = (out / "fleet.md").read_text()
    return data


def test_merged_report_is_valid_and_adds_up(reports, merged):
    html, markdown = merged.pop("_html"), merged.pop("_markdown")
    jsonschema.Draft202012Validator(SCHEMA).validate(merged)
    inputs = {p.stem: json.loads(p.read_text()) for p in reports}
    assert [c["name"] for c in merged["clusters"]] == ["east", "west", "lab"]
    for cluster in merged["clusters"]:
        own = inputs[cluster["name"]]
        assert cluster["summary"] == own["summary"] and cluster["error"] is None
        assert [f for f in merged["findings"] if f["cluster_name"] == cluster["name"]] == \
            [{**f, "cluster_name": cluster["name"]} for f in own["findings"]]
        assert [w for w in merged["workloads"] if w["cluster"] == cluster["name"]] == \
            [{**w, "cluster": cluster["name"]} for w in own["workloads"]]
    total = merged["summary"]
    for key in COUNTS:
        assert total[key] == sum(r["summary"][key] for r in inputs.values()), key
    for severity in ("error", "warning", "info"):
        assert total["findings"][severity] == sum(r["summary"]["findings"][severity]
                                                  for r in inputs.values())
    assert len(merged["findings"]) == sum(len(r["findings"]) for r in inputs.values())
    assert total["gpu_workloads"] == len(merged["workloads"]) >= 12
    assert total["on_dra"] >= 2 and total["on_bridge"] == 1  # lab and west's claims, rerank
    assert total["percent_migrated"] == round(
        100 * (total["on_dra"] + total["on_bridge"]) / total["gpu_workloads"], 1)
    lab = {w["name"]: w for w in merged["workloads"] if w["cluster"] == "lab"}
    assert lab["embed"]["state"] == "claims" and lab["debug"]["gpus"] == 2

    page = Page(html)
    check_counts(merged, page)
    rows = page.text_by_id["clusters"]
    for cluster in merged["clusters"]:
        s = cluster["summary"]
        assert f"{cluster['name']} {s['gpu_workloads']} {s['on_device_plugin']} " \
               f"{s['on_bridge']} {s['on_dra']}" in rows
    namespaces = page.text_by_id["namespaces"]
    assert namespaces.count("%") == sum(len(c["summary"]["namespaces"])
                                        for c in merged["clusters"])
    assert "lab lab 2" in namespaces  # the cluster column, then the namespace
    assert network_urls(page, html) == []
    for name in ("east", "west", "lab"):
        assert f"\n| {name} | " in markdown


def test_a_fleet_report_merges_again_with_its_clusters(reports, merged, tmp_path):
    fleet = tmp_path / "fleet.json"
    fleet.write_text(json.dumps({k: v for k, v in merged.items() if not k.startswith("_")}))
    more = tmp_path / "more.json"
    more.write_text(reports[2].read_text())
    result = run("report", "merge", str(fleet), str(more), "-o", "json", "--fail-on", "never")
    assert result.exit_code == 3  # east still had an unreadable input
    again = json.loads(result.stdout)
    assert [c["name"] for c in again["clusters"]] == ["east", "west", "lab", "more"]
    assert again["summary"]["gpu_workloads"] == merged["summary"]["gpu_workloads"] + sum(
        1 for w in merged["workloads"] if w["cluster"] == "lab")
    result = run("report", "merge", str(fleet), str(reports[2]))
    assert result.exit_code == 2
    assert "cluster 'lab' is in" in result.stderr and "--name" in result.stderr


def file_report(tmp_path: Path, name: str, text: str) -> Path:
    (tmp_path / name).mkdir()
    (tmp_path / name / "w.yaml").write_text(text)
    out = tmp_path / f"{name}.json"
    result = run("audit", str(tmp_path / name), "-q", "-o", f"json={out}")
    assert result.exit_code in (0, 1), result.output
    return out


CLEAN = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
GPU = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml}\nspec:\n  containers:\n"
       "  - {name: a, image: x, resources: {limits: {nvidia.com/gpu: 1}}}\n")


def test_exit_code_follows_the_worst_input_and_fail_on(tmp_path):
    clean, gpu = file_report(tmp_path, "clean", CLEAN), file_report(tmp_path, "gpu", GPU)
    assert run("report", "merge", str(clean), str(clean.with_name("clean.json"))).exit_code == 2
    assert run("report", "merge", str(clean)).exit_code == 0
    assert run("report", "merge", str(clean), str(gpu)).exit_code == 1
    assert run("report", "merge", str(clean), str(gpu), "--fail-on", "error").exit_code == 0
    named = run("report", "merge", str(gpu), "--name", f"{gpu}=prod", "-o", "json")
    assert [c["name"] for c in json.loads(named.stdout)["clusters"]] == ["prod"]


def test_a_cluster_that_could_not_be_read_is_kept_and_fails_the_merge(tmp_path):
    gpu = json.loads(file_report(tmp_path, "gpu", GPU).read_text())
    empty = {**gpu["summary"], **{k: 0 for k in COUNTS}, "findings": {
        "error": 0, "warning": 0, "info": 0}, "percent_migrated": None, "namespaces": []}
    fleet = {**gpu, "findings": [{**f, "cluster_name": "ok"} for f in gpu["findings"]],
             "workloads": [{**w, "cluster": "ok"} for w in gpu["workloads"]],
             "clusters": [{"name": "ok", "summary": gpu["summary"], "error": None},
                          {"name": "down", "summary": empty,
                           "error": "cannot reach https://10.0.0.1:6443: connection refused"}]}
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps(fleet))
    out = tmp_path / "fleet.html"
    result = run("report", "merge", str(path), "-o", f"html={out}")
    assert result.exit_code == 3
    rows = Page(out.read_text()).text_by_id["clusters"]
    assert "down" in rows and "connection refused" in rows


@pytest.mark.parametrize("change, problem", [
    (lambda d: {**d, "schema_version": 2}, "has schema_version 2; this gpudra reads "
                                           "schema_version 1"),
    (lambda d: {k: v for k, v in d.items() if k != "schema_version"}, "has no schema_version"),
    (lambda d: {k: v for k, v in d.items() if k != "summary"},
     "not a valid gpudra report: at the top level: 'summary' is a required property"),
    (lambda d: {**d, "workloads": [{**d["workloads"][0], "state": "nowhere"}]},
     "not a valid gpudra report: at workloads/0/state: 'nowhere' is not one of"),
    (lambda d: [d], "not a gpudra report"),
])
def test_invalid_and_other_version_reports_are_refused_in_one_line(tmp_path, change, problem):
    good = file_report(tmp_path, "gpu", GPU)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(change(json.loads(good.read_text()))))
    result = run("report", "merge", str(good), str(bad), "-o", f"json={tmp_path / 'out.json'}")
    assert result.exit_code == 3
    assert result.stderr.count("\n") == 1 and f"{bad}: " in result.stderr, result.stderr
    assert problem in result.stderr
    assert not (tmp_path / "out.json").exists()  # nothing written from a refused merge


def test_unreadable_and_misnamed_inputs(tmp_path):
    (tmp_path / "x.json").write_text("{not json")
    result = run("report", "merge", str(tmp_path / "x.json"))
    assert result.exit_code == 3 and "x.json: not JSON" in result.stderr
    result = run("report", "merge", str(tmp_path / "missing.json"))
    assert result.exit_code == 3 and "missing.json: cannot read" in result.stderr
    result = run("report", "merge", str(tmp_path / "x.json"), "--name", "other.json=a")
    assert result.exit_code == 2 and "no such REPORT" in result.stderr
