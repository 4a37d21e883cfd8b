"""Issue 34 item 5, offline: over the whole grid of request shapes (tests/convert/repair_grid.py),
what convert repairs or leaves unreported has no error the audit reports (the audit's DRA rules
are held to the API server by tests/controlplane/test_dry_run_repairs.py), and what it reports
`manual` it leaves byte for byte, and the audit still reports. A second run changes nothing."""

from __future__ import annotations

import io
import json
from collections import defaultdict
from pathlib import Path

from gpudra.audit.engine import AuditRequest, run_audit
from gpudra.report import SummaryFormat
from gpudra.cli.convert import ConvertShow, run_convert
from gpudra.convert.run import ConvertRequest
from gpudra.results.model import Severity
from tests.convert.repair_grid import convert_grid

JSON = ConvertShow(output=SummaryFormat.JSON)  # -o json


def _errors(root: Path) -> dict[str, list[str]]:
    report = run_audit(AuditRequest(paths=(str(root),)))
    errors: dict[str, list[str]] = defaultdict(list)
    for f in report.findings:
        if f.severity is Severity.ERROR and f.file is not None:
            errors[Path(f.file).name].append(f"{f.rule}: {f.message}")
    return errors


def test_repairs_end_right_and_manual_is_left_whole(tmp_path: Path) -> None:
    result = convert_grid(tmp_path / "grid")
    errors = _errors(tmp_path / "grid")
    wrong = {name: errors[name] for name in result.after
             if result.strategies.get(name) not in ("manual", "blocked") and errors.get(name)}
    assert wrong == {}
    manual = [name for name, strategy in result.strategies.items() if strategy == "manual"]
    assert [n for n in manual if result.after[n] != result.before[n]] == []
    assert [n for n in manual if not errors.get(n)] == []
    counts = {s: list(result.strategies.values()).count(s) for s in ("repair", "manual")}
    assert counts["repair"] and counts["manual"], counts  # the grid exercises both

    out = io.StringIO()
    run_convert(ConvertRequest(paths=(str(tmp_path / "grid"),)), JSON, stdout=out,
                stderr=io.StringIO())
    again = json.loads(out.getvalue())
    assert [w for w in again["workloads"] if w["strategy"] == "repair"] == []
