"""The Kubernetes releases the test control plane is built at, and how each one is run.

Each release is one Go module file in this directory over the same Go sources (go.mod for the
newest release; go.v133.mod for 1.33, built with -modfile and the kube133 build tag for the one
API that differs), so `python -m tests.controlplane build` builds one cached binary per release.

Before 1.34 DRA is beta and off: the DynamicResourceAllocation feature gate must be on in the
API server, the scheduler and the controller manager, and a resource.k8s.io version must be
enabled with --runtime-config (1.33 has v1alpha3, v1beta1 and v1beta2 of the group and serves
none by default). A 1.33 cluster cannot serve v1beta2 alone: its API server (the node
authorizer), scheduler and controller manager read ResourceSlices, claims and classes through
v1beta1, so without it the API server never turns ready (docs/facts.md).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Release:
    """One release: the module file that pins it, and the flags its components need."""

    name: str  # "1.37": the cached binary's name and messages say it
    modfile: str  # the go.mod of this release, in tests/controlplane
    build_tags: tuple[str, ...]
    # --runtime-config of the API server: the resource.k8s.io versions it serves
    runtime_config: str
    # --feature-gates of the API server, scheduler and controller manager ("" for none)
    feature_gates: str
    # the resource.k8s.io version the tests write DeviceClasses and ResourceSlices in
    resource_version: str

    @property
    def sumfile(self) -> str:
        return self.modfile.removesuffix(".mod") + ".sum"


# The newest release: resource.k8s.io/v1 by default, and the two betas beside it (off by
# default since 1.34) so output gpudra writes for older targets can be dry-run too.
NEWEST = Release("1.37", "go.mod", (), "resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true",
                 "", "v1")
# A 1.33 cluster with DRA switched on as the NVIDIA driver's docs do it: v1beta1 (which its own
# components need) and v1beta2, the newest version it has, so the one gpudra must write; no v1.
V1_33 = Release("1.33", "go.v133.mod", ("kube133",),
                "resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true",
                "DynamicResourceAllocation=true", "v1beta2")

RELEASES = (NEWEST, V1_33)
