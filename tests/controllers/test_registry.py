"""The controller registry: valid as shipped, complete for what convert converts, documented
(docs/controllers.md generated from it, every source in docs/facts.md), and judged the same way
for every kind (admit: checked, unchecked, vouched, expired)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudra.controllers.docs import controllers_markdown
from gpudra.controllers.registry import RegistryError, parse_registry, registry
from gpudra.convert.controllers import HANDLERS, admit, handler_for
from gpudra.convert.records import Blocked
from gpudra.results.vouches import Vouch, VouchSet
from gpudra.k8s.workloads import BUILTIN_KINDS, compile_path

ROOT = Path(__file__).resolve().parents[2]
TODAY = dt.date(2026, 12, 7)


def test_docs_controllers_md_is_current() -> None:
    assert (ROOT / "docs" / "controllers.md").read_text(encoding="utf-8") == \
        controllers_markdown(), \
        "regenerate with: gpudra controllers -o markdown > docs/controllers.md"


@pytest.mark.parametrize("row", registry().rows, ids=lambda r: f"{r.group}:{','.join(r.kinds)}")
def test_row_is_usable(row) -> None:
    for path in row.pod_specs:
        compile_path(path)  # raises on a path the walker cannot evaluate
    if row.handler is not None:
        assert handler_for(row) is HANDLERS[row.handler]
    assert row.source.files and row.source.commit


@pytest.mark.parametrize("row", registry().rows, ids=lambda r: f"{r.group}:{','.join(r.kinds)}")
def test_row_source_is_in_facts(row) -> None:
    """Every row's repository and commit are recorded in docs/facts.md."""
    facts = (ROOT / "docs" / "facts.md").read_text(encoding="utf-8")
    assert row.source.repo in facts and row.source.commit[:7] in facts, row.source


@pytest.mark.parametrize("entry", BUILTIN_KINDS, ids=lambda e: f"{e.group}:{e.kind}")
def test_every_kind_of_the_workload_table_has_a_row(entry) -> None:
    """convert converts the table's kinds: each was checked, with the same pod templates."""
    rows = [r for r in registry().rows if r.group == entry.group and entry.kind in r.kinds]
    assert rows, f"{entry.kind} ({entry.group}) has no registry row"
    assert any(set(entry.pod_specs) <= set(r.pod_specs) and
               set(entry.container_keys) <= set(r.containers) for r in rows), rows


def test_every_handler_is_named_by_a_row() -> None:
    assert {r.handler for r in registry().rows if r.handler} == set(HANDLERS)


# --- the loader refuses a broken registry -----------------------------------------------------

GOOD: dict[str, Any] = {
    "group": "example.com", "versions": ["v1"], "kinds": ["Trainer"],
    "podSpecs": ["spec.template.spec"], "controller": "example", "readsGpuLimit": False,
    "convert": "safe", "does": "converts", "reason": "copies the template",
    "source": {"repo": "example/op", "commit": "abc1234", "files": ["op.go"]}}


@pytest.mark.parametrize(("change", "message"), [
    ({"convert": "maybe"}, "convert must be one of"),
    ({"convert": "writes", "readsGpuLimit": True}, "needs the handler"),
    ({"readsGpuLimit": "yes"}, "true or false"),
    ({"source": {"repo": "example/op", "files": ["op.go"]}}, "repo, commit and files"),
    ({"kinds": []}, "kinds must be a list"),
    ({"versions": "v1"}, "versions must be a list"),
    ({"colour": "red"}, "unknown keys"),
    ({"reason": " "}, "reason must be a non-empty string"),
])
def test_broken_row_is_refused(change: dict[str, Any], message: str) -> None:
    with pytest.raises(RegistryError, match=message):
        parse_registry([{**GOOD, **change}])


def test_two_rows_for_one_kind_are_refused() -> None:
    with pytest.raises(RegistryError, match="both cover Trainer"):
        parse_registry([GOOD, {**GOOD, "versions": ["v2", "v1"]}])


def test_shipped_file_parses_as_written() -> None:
    raw = yaml.safe_load((ROOT / "gpudra" / "controllers" / "registry.yaml").read_text())
    assert parse_registry(raw) == registry()


# --- admit: what convert makes of a kind ------------------------------------------------------

VOUCHES = VouchSet((Vouch("Trainer", "ml-platform", "copies the template", "example.com"),
                    Vouch("Runner", "hpc", "read once", "example.com/v1",
                          dt.date(2026, 1, 31))), TODAY)

ADMIT_CASES = [
    # (apiVersion, kind, vouches, notes wanted, Blocked message wanted)
    ("apps/v1", "Deployment", None, [], None),
    ("v1", "ConfigMap", None, [], None),                          # no pod template, no row
    ("ray.io/v1", "RayCluster", None, [], None),                 # a row with a handler
    ("example.com/v1", "Trainer", None, [],
     "gpudra has not checked whether Trainer's controller reads nvidia.com/gpu"),
    ("kubeflow.org/v1alpha2", "MPIJob", None, [], "kubeflow.org/v1alpha2 is not in its"),
    ("example.com/v1", "Trainer", VOUCHES, ["vouched for by ml-platform"], None),
    ("example.com/v2", "Trainer", VOUCHES, ["vouched for by ml-platform"], None),  # a group
    ("example.com/v1", "Runner", VOUCHES, [], "The vouch of hpc expired on 2026-01-31"),
    ("example.com/v1", "Other", VOUCHES, [], "has not checked whether Other's"),
    ("trainer.kubeflow.org/v1alpha1", "TrainJob", None, [], "resourcesPerNode is not a pod spec"),
    ("serving.knative.dev/v1", "Service", None, [], "must not set the field"),
    ("serving.knative.dev/v1", "Service", VOUCHES, [], "knative/serving#15332"),  # a row wins
]


@pytest.mark.parametrize(("api_version", "kind", "vouches", "notes", "blocked"), ADMIT_CASES)
def test_admit(api_version, kind, vouches, notes, blocked) -> None:
    if blocked is not None:
        with pytest.raises(Blocked, match=blocked):
            admit(api_version, kind, vouches)
        return
    got = admit(api_version, kind, vouches)
    assert len(got) == len(notes) and all(n in g for n, g in zip(notes, got))
