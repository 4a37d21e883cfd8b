"""The planner's ContainerClaim records point at the requests convert really wrote.

For every golden case, each container a `rewrite` result lists must reference, in the converted
output, a ResourceClaimTemplate or ResourceClaim of that name whose request at the recorded
index has the recorded name. (Kustomize overlays follow containers to counts this way.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpudra.convert.converter import convert_paths
from gpudra.convert.planner import ConvertOptions
from gpudra.dra.versions import TargetVersion

GOLDEN = Path(__file__).parent / "golden"
# Cases whose objects convert writes elsewhere (a claims file, the bridge DeviceClass) are left
# out: this test reads the new objects from the changed files themselves.
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "case.yaml").is_file()
               and not any(a in ("--strategy", "--claims-file") for a in
                           (yaml.safe_load((p / "case.yaml").read_text()) or {}).get("args", [])))


def _options(case: dict) -> ConvertOptions:
    args = list(case.get("args", []))
    target = args[args.index("--target-version") + 1] if "--target-version" in args else "1.37"
    mode = args[args.index("--claim-mode") + 1] if "--claim-mode" in args else "template"
    return ConvertOptions(TargetVersion.parse(target), claim_mode=mode)


@pytest.mark.parametrize("name", CASES)
def test_records_point_at_written_requests(name: str, monkeypatch) -> None:
    case = yaml.safe_load((GOLDEN / name / "case.yaml").read_text()) or {}
    monkeypatch.chdir(GOLDEN / name / "before")
    report = convert_paths(["."], _options(case))
    objects = {}
    for change in report.changes:
        for doc in yaml.safe_load_all(change.new.decode("utf-8-sig")):
            # An OpenShift Template keeps its claim templates in `objects:`, a JSON List in
            # its items.
            kind = doc.get("kind") if isinstance(doc, dict) else None
            inner = doc.get("objects") if kind == "Template" else \
                doc.get("items") if kind == "List" else None
            for obj in inner if isinstance(inner, list) else [doc]:
                if isinstance(obj, dict) and \
                        str(obj.get("apiVersion", "")).startswith("resource."):
                    objects[(obj["kind"], obj["metadata"]["name"])] = obj
    checked = 0
    for result in report.results:
        if result.strategy != "rewrite" or not result.kind or result.kind == "ResourceQuota":
            continue
        for ref in result.claims:
            obj = objects[(ref.kind, ref.object)]
            spec = obj["spec"]["spec"] if ref.kind == "ResourceClaimTemplate" else obj["spec"]
            requests = spec["devices"]["requests"]
            if ref.request is None:  # the whole claim
                assert requests and ref.index == 0, ref
            else:
                assert requests[ref.index]["name"] == ref.request, ref
            checked += 1
    assert checked or not any(r.strategy == "rewrite" and r.created for r in report.results)
