"""A fake Kubernetes API server for gpudra's tests and benchmarks (not shipped with gpudra).

Real HTTP on 127.0.0.1, answered from a ClusterState: discovery, get/list with paging and
selectors, Status errors, injected faults. kubectl and the official Python client accept it.
See README.md in this directory.
"""

from .api import RequestRecord
from .kubeconfig import CONTEXT, EXPIRED_CONTEXT, UNREACHABLE_CONTEXT
from .server import FakeCluster
from .state import KNOWN_CRDS, ClusterState, StateError, load_state

__all__ = ["CONTEXT", "EXPIRED_CONTEXT", "KNOWN_CRDS", "UNREACHABLE_CONTEXT", "ClusterState",
           "FakeCluster", "RequestRecord", "StateError", "load_state"]
