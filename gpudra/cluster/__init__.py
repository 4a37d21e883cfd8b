"""Read-only access to a live cluster: kubeconfig/in-cluster config, discovery, paged lists.

Importing this package is cheap: the official `kubernetes` client (and urllib3) are imported
by `connect()` only. See docs/cluster.md.
"""

from gpudra.cluster.client import TARGET_SCOPE, Cluster, connect
from gpudra.cluster.errors import (
    ClusterError,
    ClusterRequestError,
    ClusterTimeoutError,
    ClusterUnreachableError,
    ContextNotFoundError,
    CredentialsRejectedError,
    ExecPluginError,
    KubeconfigError,
)
from gpudra.cluster.listing import Listing
from gpudra.cluster.options import ClusterOptions, RetryPolicy, parse_duration
from gpudra.cluster.records import (
    ApiGroup,
    ClusterTarget,
    ListProgress,
    ResourceError,
    ResourceType,
    ServerVersion,
)

__all__ = [
    "TARGET_SCOPE", "ApiGroup", "Cluster", "ClusterError", "ClusterOptions",
    "ClusterRequestError", "ClusterTarget", "ClusterTimeoutError", "ClusterUnreachableError",
    "ContextNotFoundError", "CredentialsRejectedError", "ExecPluginError", "KubeconfigError",
    "ListProgress", "Listing", "ResourceError", "ResourceType", "RetryPolicy", "ServerVersion",
    "connect", "parse_duration",
]
