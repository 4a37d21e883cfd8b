"""The release a core function judges for is always passed in: a caller that forgets it gets a
TypeError, not the default release (the default lives in the CLI and the request records)."""

import inspect
from collections.abc import Callable

import pytest

from gpudra.audit.engine import audit, audit_cluster
from gpudra.audit.multicluster import audit_contexts
from gpudra.preflight.manifests.checks import check_api_versions, check_strict_validation
from gpudra.verify.explain import explain_pod
from gpudra.verify.judge import judge_workload
from gpudra.verify.run import judge

TARGETED = (audit, audit_cluster, audit_contexts, check_api_versions, check_strict_validation,
            explain_pod, judge_workload, judge)


@pytest.mark.parametrize("function", TARGETED, ids=lambda f: f"{f.__module__}.{f.__name__}")
def test_the_target_release_has_no_default(function: Callable) -> None:
    target = inspect.signature(function).parameters["target"]
    assert target.default is inspect.Parameter.empty
