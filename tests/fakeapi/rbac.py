"""A user who holds namespaced Roles only: the `namespaced_only: [NS, ...]` state key.

With RoleBindings alone, a user may read inside the bound namespaces and nowhere else: every
cluster-scoped resource (nodes, ResourceSlices, DeviceClasses, ClusterQueues) and every list
across all namespaces is 403 Forbidden, worded as kube-apiserver words it ("at the cluster
scope"), and so is a namespace the user has no binding in.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NamespacedOnly:
    namespaces: tuple[str, ...]

    def denies(self, namespaced: bool, namespace: str) -> bool:
        """True for a request the user's Roles do not cover."""
        if not namespaced or not namespace:
            return True
        return namespace not in self.namespaces
