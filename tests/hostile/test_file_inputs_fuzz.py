"""Bounded fuzzing of the readers of reports (report merge), baselines and .gpudra.yaml, in
process: a valid file with a hostile value planted somewhere, or damaged bytes, is read,
and what reads is used as the command would use it (merged and rendered in every format;
applied to a report; its waivers judged). Nothing but GpudraError may come out.

Derandomized and bounded (EXAMPLES per kind, a few seconds each); the campaign outside the
suite (benchmarks/) runs thousands per kind in child processes with memory and time limits.
"""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudra.audit.engine import AuditRequest, run_audit
from gpudra.results.baseline import apply_baseline, as_text, load_baseline
from gpudra.config import load_config
from gpudra.errors import GpudraError
from gpudra.results.model import FailOn
from gpudra.cli.formats import render
from gpudra.report.formats import Kind, RenderOptions
from gpudra.report.merge import exit_code, load_report, merge_reports
from gpudra.rules import catalogue
from tests.support.data import replaced
from tests.support.manifests import gpu_job

EXAMPLES = int(os.environ.get("GPUDRA_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                report_multiple_bugs=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

# Values that broke readers: other types, numbers past every limit, lone surrogates, nesting.
ODD_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.sampled_from([2**63, -(2**64), 10**4000])
    | st.floats(allow_nan=False) | st.text(max_size=8)
    | st.sampled_from(["\ud800", "a\udfffb", "\x1b[31m", "", "GPU101", "error"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=3),
    max_leaves=8)
DAMAGE = st.sampled_from([b"", b"[" * 2000, b"\xff", b"\xe9", b"\\ud800", b"9" * 400, b"{",
                          b"\x00", b"1e999", b"&a [*a]", b"*a", b"!!binary x", b": : :"])


def _places(value: Any, path: tuple = ()) -> list[tuple]:
    places = [path]
    items = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, list) else ()
    for key, child in items:
        places += _places(child, (*path, key))
    return places


def _get(value: Any, path: tuple) -> Any:
    for key in path:
        value = value[key]
    return value


def _odd_for(value: Any) -> st.SearchStrategy[Any]:
    """Odd values of the same type as `value` (they pass a schema's type checks) or of any."""
    if isinstance(value, str):
        same = st.sampled_from(["\ud800", "a\udfffb", "\x1b[31m\r", "", "x" * 5000]) | st.text()
    elif isinstance(value, int) and not isinstance(value, bool):
        same = st.sampled_from([2**63, 2**64, 10**4000, -1, 2**53 + 1]) | st.integers()
    else:
        same = ODD_JSON
    return st.one_of(same, same, ODD_JSON)  # mostly values a schema's type checks let through


def _damaged(text: bytes, at: int, junk: bytes) -> bytes:
    at %= len(text) + 1
    return text[:at] + junk + text[at + len(junk) // 2:]


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("seeds")
    (root / "job.yaml").write_text(gpu_job("train", namespace="ml"))
    report = run_audit(AuditRequest(paths=(str(root / "job.yaml"),)))
    text = render(Kind.AUDIT, "json", report, RenderOptions())
    config = {"rules": {"GPU303": "disable", "GPU101": {"severity": "error"}},
              "exclude": ["vendor/**"], "strict": False, "preflight": {"skip": ["NODE005"]},
              "workloads": [{"apiVersion": "x.io/v1", "kind": "Trainer",
                             "podSpecs": ["$.spec.template.spec"]}],
              "waivers": [{"rules": ["GPU101"], "reason": "known", "kind": "Job",
                           "expires": "2027-01-01"}],
              "vouch": [{"kind": "Trainer", "apiVersion": "x.io/v1", "owner": "ml",
                         "reason": "copies the template", "expires": "2027-01-01"}]}
    return {"report": json.loads(text), "baseline": json.loads(as_text(report.findings)),
            "audit": report, "config": config}


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _hostile(seed: Any, data: st.DataObject) -> bytes:
    """The seed with odd values planted, as JSON, sometimes with damaged bytes too."""
    planted = seed
    for _ in range(data.draw(st.integers(1, 3))):
        place = data.draw(st.sampled_from(_places(planted)[1:]))  # a root replaced is one case, not most
        planted = replaced(planted, place, data.draw(_odd_for(_get(planted, place))))
    text = json.dumps(planted).encode()  # a lone surrogate is escaped: \ud800
    if data.draw(st.booleans()):
        text = _damaged(text, data.draw(st.integers(0, len(text))), data.draw(DAMAGE))
    return text


@FUZZ
@given(data=st.data())
def test_merge_reads_renders_or_refuses(seeds: dict[str, Any], tmp_path_factory, data) -> None:
    tmp_path = tmp_path_factory.mktemp("merge")
    good = _write(tmp_path, "good.json", json.dumps(seeds["report"]).encode())
    bad = _write(tmp_path, "bad.json", _hostile(seeds["report"], data))
    try:
        merged = merge_reports([load_report(str(good)), load_report(str(bad))])
        exit_code(merged, FailOn.parse("warning"))
        for fmt in ("json", "markdown", "html"):
            render(Kind.FLEET, fmt, merged, RenderOptions()).encode("utf-8")
    except GpudraError as exc:
        assert "\n" not in str(exc)


@FUZZ
@given(data=st.data())
def test_baseline_reads_applies_or_refuses(seeds: dict[str, Any], tmp_path_factory,
                                           data) -> None:
    path = _write(tmp_path_factory.mktemp("baseline"), "baseline.json",
                  _hostile(seeds["baseline"], data))
    try:
        apply_baseline(seeds["audit"], load_baseline(path))
    except GpudraError as exc:
        assert "\n" not in str(exc)


ODD_YAML = st.sampled_from([None, 5, -1, 10**4000, 1.5, True, "", "x", "2026-13-45", [], {},
                            [1], {"a": 1}, [[[]]], "\x1b[31m", "$..*", "$[", datetime.date.max])


@FUZZ
@given(data=st.data())
def test_config_reads_or_refuses(seeds: dict[str, Any], tmp_path_factory, data) -> None:
    seed = seeds["config"]
    planted = replaced(seed, data.draw(st.sampled_from(_places(seed))),
                     data.draw(ODD_YAML | ODD_JSON.filter(lambda v: "\ud800" not in str(v)
                                                          and "\udfff" not in str(v))))
    text = yaml.safe_dump(planted, allow_unicode=True).encode() if isinstance(planted, dict) \
        else yaml.safe_dump({"rules": planted}).encode()
    if data.draw(st.booleans()):
        text = _damaged(text, data.draw(st.integers(0, len(text))), data.draw(DAMAGE))
    path = _write(tmp_path_factory.mktemp("config"), ".gpudra.yaml", text)
    try:
        config = load_config(path, catalogue())
        config.waiver_set(datetime.date(2026, 12, 7))
        vouches = config.vouch_set(datetime.date(2026, 12, 7))
        for vouch in vouches.vouches:  # what was read is whole, and lets its own kind through
            assert vouch.kind and vouch.owner.strip() and vouch.reason.strip()
            probe = vouch.api_version if vouch.api_version and "/" in vouch.api_version \
                else f"{vouch.api_version or 'x.io'}/v1"
            if not vouch.expired_on(vouches.today):
                assert vouches.vouch_for(probe, vouch.kind) is not None
    except GpudraError as exc:
        assert "\n" not in str(exc)
