"""`gpudra report merge`: the JSON reports of many clusters (or trees) as one fleet report.

Each input is validated against the JSON report's schema (report-schema.json, shipped with the
package) before anything is merged, and a report of another `schema_version` is refused: a
merge must never guess what a field means. The result is itself a valid report: `clusters`
holds one entry per cluster with its own summary, the top-level summary is their sum, and
every finding, error and workload names its cluster.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from gpudra.errors import UnreadableInputError, UsageError
from gpudra.input_files import decode_json, read_small
from gpudra.results.model import ExitCode, FailOn, Severity
from gpudra.printable import short_repr
from gpudra.report import json_text
from gpudra.report.formats import RenderOptions
from gpudra.report.json_report import SCHEMA_VERSION
from gpudra.report.summary import percent_of

_COUNTS = ("files_scanned", "documents_parsed", "objects_read", "skipped", "errors",
           "suppressed", "gpu_workloads", "on_device_plugin", "on_dra", "on_bridge")
# Counts a report may lack (written before they existed): summed where present.
_OPTIONAL_COUNTS = ("unchecked_kinds", "vouched_kinds")


# The largest report read. A report of 100,000 findings is ~70 MB, and reading, checking and
# merging it takes ~6 times its size in memory (71 MB: 420 MB peak): 64 MiB keeps one
# hostile report well under 1 GB.
MAX_REPORT_BYTES = 64 << 20


@dataclass(frozen=True, slots=True)
class LoadedReport:
    path: str
    data: Mapping[str, Any]
    name: str | None = None  # --name FILE=NAME


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    text = resources.files("gpudra.report").joinpath("report-schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)  # gpudra's own file: an object
    return loaded


def load_reports(paths: Sequence[str], names: Mapping[str, str]) -> list[LoadedReport]:
    """Every report, read and validated; when any is refused, one UnreadableInputError naming
    each refused file (all are read first, so one run tells every problem)."""
    loaded: list[LoadedReport] = []
    refused: list[str] = []
    for path in paths:
        try:
            loaded.append(load_report(path, names.get(path)))
        except UnreadableInputError as exc:
            refused.append(str(exc))
    if refused:
        raise UnreadableInputError("; ".join(refused))
    return loaded


def load_report(path: str, name: str | None = None) -> LoadedReport:
    """Read and validate one report; an UnreadableInputError names the file and its first problem."""
    try:
        data = decode_json(read_small(path, MAX_REPORT_BYTES))
    except ValueError as exc:  # not JSON, or JSON no report holds (too deep, huge numbers)
        raise UnreadableInputError(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise UnreadableInputError(f"{path}: not a gpudra report (a JSON object is expected)")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        what = ("has no schema_version (written by a gpudra before reports were versioned?)"
                if version is None else f"has schema_version {short_repr(version)}")
        raise UnreadableInputError(f"{path}: {what}; this gpudra reads schema_version "
                             f"{SCHEMA_VERSION}: write the report again with this version")
    problem = _first_problem(data)
    if problem:
        raise UnreadableInputError(f"{path}: not a valid gpudra report: {problem}")
    return LoadedReport(path, data, name)


def _first_problem(data: Any) -> str | None:
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "the top level"
    message = " ".join(error.message.split())
    return f"at {where}: {message[:200]}" + ("..." if len(message) > 200 else "")


def parse_names(values: Iterable[str]) -> dict[str, str]:
    """`--name FILE=NAME` (repeatable) -> {FILE: NAME}."""
    names: dict[str, str] = {}
    for value in values:
        file, sep, name = value.rpartition("=")
        if not sep or not file or not name.strip():
            raise UsageError(f"--name {value!r}: write FILE=NAME")
        names[file] = name.strip()
    return names


def cluster_name(report: LoadedReport) -> str:
    """A single-cluster report's name: --name, else the one cluster its workloads name,
    else the file's stem."""
    if report.name:
        return report.name
    named: set[str] = {w["cluster"] for w in report.data["workloads"] if w.get("cluster")}
    named |= {f["cluster_name"] for f in report.data["findings"] if f.get("cluster_name")}
    if len(named) == 1:
        return named.pop()
    return Path(report.path).name.removesuffix(".json") or report.path


def merge_reports(reports: Sequence[LoadedReport]) -> dict[str, Any]:
    """One report of every cluster the inputs hold; cluster names must be unique."""
    clusters: list[dict[str, Any]] = []
    merged: dict[str, list[Any]] = {"findings": [], "errors": [], "skipped": [], "waived": [],
                               "workloads": [], "not_read": []}
    rules: dict[str, Any] = {}
    seen: dict[str, str] = {}
    baselines = []
    for report in reports:
        data = report.data
        if data.get("clusters"):  # already a fleet: its entries and tags are kept
            entries, tag = list(data["clusters"]), None
        else:
            tag = cluster_name(report)
            entries = [{"name": tag, "summary": data["summary"], "error": None,
                        **({"cluster": data["cluster"]} if data.get("cluster") else {})}]
        for entry in entries:
            if entry["name"] in seen:
                raise UsageError(f"cluster {entry['name']!r} is in {seen[entry['name']]} and "
                                 f"{report.path}: name one with --name {report.path}=NAME")
            seen[entry["name"]] = report.path
        clusters += entries
        merged["findings"] += [_tagged(f, "cluster_name", tag) for f in data["findings"]]
        merged["errors"] += [_tagged(x, "cluster_name", tag) for x in data["errors"]]
        merged["workloads"] += [_tagged(w, "cluster", tag) for w in data["workloads"]]
        merged["waived"] += [{**w, "finding": _tagged(w["finding"], "cluster_name", tag)}
                             for w in data.get("waived", [])]
        merged["skipped"] += data.get("skipped", [])
        merged["not_read"] += data.get("not_read", [])
        rules.update(data.get("rules", {}))
        if data.get("baseline"):
            baselines.append(data["baseline"])
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION,
                           "summary": total_summary([c["summary"] for c in clusters]),
                           "clusters": clusters, **merged, "rules": rules}
    if not out["not_read"]:
        del out["not_read"]
    if baselines:
        out["baseline"] = {"file": ", ".join(dict.fromkeys(b["file"] for b in baselines)),
                           "known": sum(b["known"] for b in baselines),
                           "fixed": sum(b["fixed"] for b in baselines)}
    return out


def _tagged(item: Mapping[str, Any], key: str, name: str | None) -> dict[str, Any]:
    return dict(item) if name is None else {**item, key: name}


def total_summary(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The sum of clusters' summaries; namespaces of the same name add up, and percentages
    are computed again from the sums (never averaged)."""
    total: dict[str, Any] = {key: sum(s[key] for s in summaries) for key in _COUNTS}
    total.update({key: sum(s.get(key, 0) for s in summaries) for key in _OPTIONAL_COUNTS
                  if any(key in s for s in summaries)})
    total["source"] = ("cluster" if any(s["source"] == "cluster" for s in summaries)
                       else "file")
    total["findings"] = {sev.value: sum(s["findings"][sev.value] for s in summaries)
                         for sev in Severity}
    unknown = any(s["percent_migrated"] is None for s in summaries)
    total["percent_migrated"] = (None if unknown and not total["gpu_workloads"] else
                                 percent_of(total["on_dra"] + total["on_bridge"],
                                          total["gpu_workloads"]))
    per_ns: dict[str, list[int]] = {}
    for s in summaries:
        for ns in s["namespaces"]:
            bucket = per_ns.setdefault(ns["namespace"], [0, 0, 0])
            bucket[0] += ns["gpu_workloads"]
            bucket[1] += ns["on_dra"]
            bucket[2] += ns["on_bridge"]
    total["namespaces"] = [{"namespace": name, "gpu_workloads": n, "on_dra": dra,
                            "on_bridge": bridge,
                            "percent_migrated": percent_of(dra + bridge, n)}
                           for name, (n, dra, bridge) in sorted(per_ns.items())]
    return total


def exit_code(data: Mapping[str, Any], fail_on: FailOn) -> ExitCode:
    """The worst input's: a cluster that could not be read (or read nothing, or had an
    unreadable input) exits 3, as its own audit did; else findings at or above --fail-on 1."""
    for cluster in data["clusters"]:
        s = cluster["summary"]
        if cluster["error"] or s["errors"] or not (s["files_scanned"] or s["objects_read"]):
            return ExitCode.INPUT_ERROR
    if any(fail_on.triggered_by(Severity(f["severity"])) for f in data["findings"]):
        return ExitCode.FINDINGS
    return ExitCode.OK


def render_json(merged: Mapping[str, Any], options: RenderOptions) -> str:
    """The merged report as JSON (`report merge -o json`), itself a report merge reads."""
    return json_text.dumps(merged)
