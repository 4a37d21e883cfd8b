"""`plan` on hand-made inventories: every case of fixtures/cases.yaml (see its header)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudra.dra.cel import engine_available
from gpudra.plan import exit_code, parse_inventory, plan, synthesize

FIXTURES = Path(__file__).parent / "fixtures"
CASES = yaml.safe_load((FIXTURES / "cases.yaml").read_text())
KEPT_KINDS = {"ResourceClaimTemplate", "ResourceClaim", "DeviceClass"}
pytestmark = pytest.mark.skipif(not engine_available(), reason="cel-expr-python not installed")


def documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((FIXTURES / name).read_text()) if d]


def run(case: dict[str, Any]) -> dict[str, Any]:
    objects = [o for name in case["objects"] for o in documents(name)]
    if case.get("only"):
        objects = [o for o in objects
                   if o["kind"] in KEPT_KINDS or o["metadata"]["name"] in case["only"]]
    if "synthesize" in case:
        inventory = synthesize([o for name in case["synthesize"] for o in documents(name)])
    else:
        inventory = parse_inventory([o for name in case["inventory"] for o in documents(name)])
    report = plan(objects, inventory)
    data = report.to_json()
    data["exit_code"] = exit_code(report)
    return data


def contains(texts: list[str], fragment: str) -> bool:
    return any(fragment in text for text in texts)


def check_request(got: dict[str, Any], want: dict[str, Any], where: str) -> None:
    for key, value in want.items():
        if key in ("rejections", "hints", "errors"):
            for fragment in value:
                assert contains(got[key], fragment), \
                    f"{where} {key}: {fragment!r} not in {got[key]}"
        elif key == "subrequests":
            assert len(got[key]) == len(value), f"{where}: subrequests {got[key]}"
            for index, sub in enumerate(value):
                check_request(got[key][index], sub, f"{where}/{sub.get('name')}")
        else:
            assert got[key] == value, f"{where} {key}: {got[key]!r} != {value!r}"


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    result = run(case)
    workloads = {w["name"]: w for w in result["workloads"]}
    assert set(workloads) == set(case["expect"])
    for name, want in case["expect"].items():
        got = workloads[name]
        for key, value in want.items():
            if key == "reason":
                for fragment in [value] if isinstance(value, str) else value:
                    assert got["reason"] and fragment in got["reason"], \
                        f"{name}: {fragment!r} not in {got['reason']!r}"
            elif key == "requests":
                assert len(got["requests"]) == len(value), f"{name}: {got['requests']}"
                for index, request in enumerate(value):
                    check_request(got["requests"][index], request, f"{name}/{request['name']}")
            else:
                assert got[key] == value, f"{name} {key}: {got[key]!r} != {value!r}"
        if got["satisfiable"]:
            assert got["reason"] is None and got["pods_placed"] == got["pods"]
    for key, value in case.get("devices", {}).items():
        assert result["devices"][key] == value, f"devices {key}: {result['devices'][key]!r}"
    for fragment in case.get("problems", ()):
        assert contains(result["problems"], fragment), result["problems"]
    for fragment in case.get("notes", ()):
        assert contains(result["notes"], fragment), result["notes"]
    all_ok = all(w["satisfiable"] for w in result["workloads"])
    assert result["exit_code"] == (0 if all_ok else 1)
