"""The cluster-tier case fixtures (tests/preflight/cluster_cases/<CHECK>.yaml), shared by the
snapshot-level tests (test_cluster_cases.py) and the end-to-end run through the fake API server
(test_cluster_cases_fakeapi.py).

Each case starts from a named snapshot in `_bases.yaml` (`base`, default `healthy`) and
changes it with `snapshot`:

- `server_version`: replaced (null: /version could not be read);
- `api_groups`: merged per group (a null value removes the group; `api_groups: null` as a
  whole means discovery could not be read);
- `objects`: replaced per resource key (a null value removes the key: not read / not served);
- `unavailable`: reasons per resource key, added;
- `scopes`: replaced (how a list was narrowed, e.g. pods of some namespaces only).

`options` are ClusterOptions fields (`target_version: "1.36"`). `expect` has the `outcome`,
and fragments that must appear in `message`, `remediation` and `details` (each detail fragment
in some detail line); `no_message` (`no_remediation`) fragments must not appear in the message
(remediation).
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpudra.dra.versions import TargetVersion
from gpudra.preflight.check_records import CheckOutcome, CheckResult
from gpudra.preflight.cluster import ClusterOptions
from gpudra.preflight.cluster.snapshot import ClusterSnapshot

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
CASES_DIR = Path(__file__).parent / "cluster_cases"
BASES = yaml.load((CASES_DIR / "_bases.yaml").read_text(), Loader=_LOADER)


@dataclass(frozen=True)
class Case:
    check: str  # the check the case is about: CLUSTER001
    spec: dict[str, Any]  # the case as written: name, base, snapshot, options, expect

    @property
    def id(self) -> str:
        return f"{self.check}-{self.spec['name']}"

    @property
    def outcome(self) -> str:
        return str(self.spec["expect"]["outcome"])


def case_files() -> list[Path]:
    return sorted(CASES_DIR.glob("CLUSTER*.yaml"))


@functools.cache
def load_cases() -> tuple[Case, ...]:
    """Every case, in file order (read once: the case files are not small)."""
    cases = []
    for path in case_files():
        spec = yaml.load(path.read_text(), Loader=_LOADER)
        assert path.stem == spec["check"], f"{path} holds cases of {spec['check']}"
        cases += [Case(spec["check"], case) for case in spec["cases"]]
    return tuple(cases)


def build_snapshot(case: dict[str, Any]) -> ClusterSnapshot:
    data = copy.deepcopy(BASES[case.get("base", "healthy")])
    change = case.get("snapshot") or {}
    if "server_version" in change:
        data["server_version"] = change["server_version"]
    if "api_groups" in change:
        if change["api_groups"] is None:
            data["api_groups"] = None
        else:
            groups = data.get("api_groups") or {}
            for group, versions in change["api_groups"].items():
                if versions is None:
                    groups.pop(group, None)
                else:
                    groups[group] = versions
            data["api_groups"] = groups
    objects = data.get("objects") or {}
    for key, items in (change.get("objects") or {}).items():
        if items is None:
            objects.pop(key, None)
        else:
            objects[key] = items
    unavailable = {**(data.get("unavailable") or {}), **(change.get("unavailable") or {})}
    groups = data.get("api_groups")
    return ClusterSnapshot(
        server_version=data.get("server_version"),
        api_groups=None if groups is None else {g: tuple(v) for g, v in groups.items()},
        objects={k: tuple(v) for k, v in objects.items()},
        unavailable=unavailable,
        scopes=change.get("scopes") or {})


def build_options(case: dict[str, Any]) -> ClusterOptions:
    raw = case.get("options") or {}
    target = raw.get("target_version")
    return ClusterOptions(TargetVersion.parse(str(target)) if target else None)


def assert_expected(got: CheckResult, want: dict[str, Any]) -> None:
    """The result has the case's outcome and every fragment it names (the cluster, node and
    manifests case files share this expectation format)."""
    details = [str(d) for d in got.details]
    shown = f"{got.outcome.value}: {got.message}\n  fix: {got.remediation}\n  " + \
        "\n  ".join(details)
    assert "gpudra could not judge this" not in got.message, shown
    assert got.outcome.value == want["outcome"], shown
    for fragment in as_list(want.get("message")):
        assert fragment in got.message, (fragment, shown)
    for fragment in as_list(want.get("no_message")):
        assert fragment not in got.message, (fragment, shown)
    for fragment in as_list(want.get("remediation")):
        assert got.remediation and fragment in got.remediation, (fragment, shown)
    for fragment in as_list(want.get("no_remediation")):
        assert fragment not in (got.remediation or ""), (fragment, shown)
    for fragment in as_list(want.get("details")):
        assert any(fragment in d for d in details), (fragment, shown)
    for fragment in as_list(want.get("no_details")):
        assert not any(fragment in d for d in details), (fragment, shown)
    # `located`: details carried with their place as data, each `file:line` (the file relative
    # to the case's tree) and the start of the text found at it
    places = [(f"{d.location}", d.text) for d in got.details if d.location is not None]
    for place, text in (entry.split(" ", 1) for entry in as_list(want.get("located"))):
        assert any(at.endswith("/" + place) and said.startswith(text) for at, said in places), \
            (place, text, places)
    if "located" in want and not want["located"]:
        assert not places, places
    if got.outcome is CheckOutcome.PASS:
        assert got.remediation is None
    else:
        assert got.remediation, "every non-passing result says what to do"


def as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)
