"""What can stop a cluster read as a whole. Each message is one line the CLI prints as is.

Everything here is a GpudraError, so the CLI exits 3 ("the cluster could not be read"). A
problem with one resource type (403 on `list secrets`, a list that kept expiring) is not an
exception but a `ResourceError` record (records.py): the other resource types are still read.
"""

from __future__ import annotations

from gpudra.errors import GpudraError


class ClusterError(GpudraError):
    """The cluster could not be read at all."""


class KubeconfigError(ClusterError):
    """No usable configuration: a kubeconfig that is missing, unreadable, invalid or incomplete,
    or neither a kubeconfig nor an in-cluster service account."""


class ContextNotFoundError(KubeconfigError):
    """The context asked for (--context, or the kubeconfig's current-context) does not exist."""


class ExecPluginError(ClusterError):
    """The kubeconfig user's exec credential plugin failed (or gave no credentials)."""


class ClusterUnreachableError(ClusterError):
    """No HTTP answer: connection refused, DNS, TLS, a reset that outlasted the retries."""

    def __init__(self, message: str, *, server: str, problem: str) -> None:
        super().__init__(message)
        self.server = server
        self.problem = problem  # e.g. "connection refused", for callers that word it themselves


class ClusterTimeoutError(ClusterUnreachableError):
    """A request got no answer within the request timeout."""


class CredentialsRejectedError(ClusterError):
    """401 Unauthorized: the server does not accept the credentials (often an expired token)."""


class ClusterRequestError(ClusterError):
    """A request failed with an HTTP status, after any retries it deserved.

    Listing turns these into ResourceError records; only requests every read depends on (the
    API discovery documents) let it escape to the caller.
    """

    def __init__(self, message: str, *, path: str, status: int, reason: str,
                 server_message: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.path = path
        self.status = status
        self.reason = reason
        self.server_message = server_message
        self.attempts = attempts
