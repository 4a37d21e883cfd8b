"""What convert writes for 1.33, server-side dry-run against a real 1.33.13 API server.

test_dry_run.py dry-runs it against 1.37.2, which also serves v1beta2; but 1.37's v1beta2 has
fields 1.33's lacks, so only 1.33's own API server says a 1.33 cluster takes the output
(strict decoding: an unknown field is an error). The convert goldens that target 1.33 (their
case.yaml passes --target-version 1.33) and the corpus converted for 1.33 are checked here.
"""

from __future__ import annotations

import io
import shutil
from itertools import pairwise
from pathlib import Path

import pytest
import yaml

from gpudra.report import SummaryFormat
from gpudra.cli.convert import ConvertShow, run_convert
from gpudra.convert.run import ConvertRequest
from gpudra.dra.versions import TargetVersion
from gpudra.run_context import RunContext
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.manifests import load_tree
from tests.controlplane.test_dry_run import CORPUS, GOLDEN, new_rejections

JSON = ConvertShow(output=SummaryFormat.JSON)  # -o json

API_VERSION = "resource.k8s.io/v1beta2"


def _targets_1_33(case: Path) -> bool:
    args = (yaml.safe_load((case / "case.yaml").read_text()) or {}).get("args") or []
    return any(a == "--target-version" and b.lstrip("v").startswith("1.33")
               for a, b in pairwise(args))


CASES = sorted(p.name for p in GOLDEN.iterdir()
               if (p / "after").is_dir() and (p / "case.yaml").is_file() and _targets_1_33(p))


def test_some_goldens_target_1_33() -> None:
    assert CASES, "no convert golden passes --target-version 1.33"


@pytest.mark.parametrize("case", CASES)
def test_golden_output_for_1_33_is_accepted_by_1_33(control_plane_1_33: ControlPlane,
                                                    case: str) -> None:
    sources, unreadable = load_tree(GOLDEN / case / "after", control_plane_1_33)
    assert [str(r) for r in unreadable] == []
    # (a case may leave an object at v1 that 1.33 cannot take: its case.yaml says manual)
    assert API_VERSION in {s.obj["apiVersion"] for s in sources}
    assert [str(r) for r in new_rejections(control_plane_1_33, GOLDEN / case / "before",
                                           GOLDEN / case / "after")] == []


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not present")
def test_corpus_converted_for_1_33_is_accepted_by_1_33(control_plane_1_33: ControlPlane,
                                                      tmp_path: Path) -> None:
    original, converted = tmp_path / "original", tmp_path / "converted"
    shutil.copytree(CORPUS, original)
    shutil.copytree(CORPUS, converted)
    code = run_convert(ConvertRequest(paths=(str(converted),),
                                      context=RunContext(TargetVersion.parse("1.33"))), JSON,
                       stdout=io.StringIO(), stderr=io.StringIO())
    assert int(code) in (0, 4)  # 4: some workloads are blocked (tests/test_corpus_convert.py)
    sources, _ = load_tree(converted, control_plane_1_33)
    created = [s for s in sources if s.obj["kind"] in ("ResourceClaimTemplate", "ResourceClaim")
               and s.obj["apiVersion"] == API_VERSION]
    assert len(created) > 20, "the corpus converts dozens of workloads"
    assert [str(r) for r in new_rejections(control_plane_1_33, original, converted)] == []
