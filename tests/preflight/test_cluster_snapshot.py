"""The snapshot's reading contract and the workload field readers the cluster checks share."""

from __future__ import annotations

import pytest

from gpudra.k8s.object_fields import (
    Container,
    feature_gates,
    flag_value,
    image_repository,
    image_tag,
)
from gpudra.preflight.cluster.nodes import gpu_evidence, named
from gpudra.preflight.cluster.read import KUEUE_CONFIGMAP
from gpudra.preflight.cluster.snapshot import (
    DEVICECLASSES,
    KUEUE_CONFIG,
    NODEPOOLS,
    NODES,
    RESOURCES,
    VERSION,
    ClusterSnapshot,
)
from gpudra.preflight.runtime import image_version
from gpudra.sources.live_reads import all_reads


def test_listed_resources_are_readable() -> None:
    snap = ClusterSnapshot(objects={"nodes": ({"metadata": {"name": "n"}},)}, api_groups={})
    listing = snap.listing(NODES)
    assert listing.readable and listing.served and len(listing.items or ()) == 1


def test_a_reason_wins_over_discovery() -> None:
    snap = ClusterSnapshot(api_groups={"resource.k8s.io": ("v1",)},
                           unavailable={"deviceclasses": "403: forbidden"})
    listing = snap.listing(DEVICECLASSES)
    assert listing.items is None and listing.reason == "403: forbidden" and listing.served


def test_not_served_custom_resource_is_empty_not_unreadable() -> None:
    snap = ClusterSnapshot(api_groups={"": ("v1",)})
    listing = snap.listing(NODEPOOLS)
    assert listing.items == () and listing.served is False


def test_unknown_discovery_makes_an_unlisted_resource_unreadable() -> None:
    listing = ClusterSnapshot().listing(NODEPOOLS)
    assert listing.items is None and listing.served is None
    assert "discovery could not tell" in (listing.reason or "")


def test_served_but_not_read_is_unreadable() -> None:
    snap = ClusterSnapshot(api_groups={"karpenter.sh": ("v1",)})
    listing = snap.listing(NODEPOOLS)
    assert listing.items is None and listing.served is True and "was not read" in listing.reason


def test_version_problems() -> None:
    assert ClusterSnapshot(unavailable={VERSION: "401"}).version_problem() == "401"
    assert "cannot read" in (ClusterSnapshot(server_version="x").version_problem() or "")
    snap = ClusterSnapshot(server_version="v1.35.0-gke.1200")
    assert snap.version_problem() is None and snap.version and snap.version.minor == 35


def test_rbac_grants_what_preflight_reads() -> None:
    # `gpudra rbac` is generated from the Read table of gpudra.sources.live; every resource
    # the cluster tier reads must be there, tagged "preflight", with the verb it is read with.
    granted = {(r.group, r.resource): r for r in all_reads() if "preflight" in r.commands}
    for ref in RESOURCES:
        read = granted.get((ref.group, ref.plural))
        assert read is not None, f"preflight reads {ref.label}, no Read grants it"
        if ref is KUEUE_CONFIG:  # one ConfigMap, by name
            assert "get" in read.verbs and read.names == (KUEUE_CONFIGMAP,), read
        else:
            assert "list" in read.verbs and not read.names, read


def test_node_facts_are_worked_out_once_per_snapshot() -> None:
    node = {"metadata": {"name": "gpu-1"}, "status": {"allocatable": {"nvidia.com/gpu": "8"}}}
    piece = {"spec": {"driver": "gpu.nvidia.com", "nodeName": "gpu-1", "devices": [{}, {}]}}
    snap = ClusterSnapshot(objects={"nodes": (node,), "resourceslices": (piece,)}, api_groups={})
    facts = snap.node_facts
    assert facts is not None and facts is snap.node_facts
    assert [(f.name, dict(f.device_plugin_resources), f.slice_devices) for f in facts] == \
        [("gpu-1", {"nvidia.com/gpu": 8}, 2)]
    unread = ClusterSnapshot(api_groups={}, unavailable={"nodes": "403: forbidden"})
    assert unread.node_facts is None


@pytest.mark.parametrize(("image", "repository", "tag", "version"), [
    ("registry.k8s.io/autoscaling/cluster-autoscaler:v1.32.1",
     "registry.k8s.io/autoscaling/cluster-autoscaler", "v1.32.1", "1.32.1"),
    ("public.ecr.aws/karpenter/controller:1.14.1@sha256:0a1b",
     "public.ecr.aws/karpenter/controller", "1.14.1", "1.14.1"),
    ("localhost:5000/gpu-operator:v26.7.0-ubi9", "localhost:5000/gpu-operator", "v26.7.0-ubi9",
     "26.7.0-ubi9"),
    ("localhost:5000/gpu-operator", "localhost:5000/gpu-operator", None, None),
    ("nvcr.io/nvidia/k8s-device-plugin@sha256:ff", "nvcr.io/nvidia/k8s-device-plugin", None,
     None),
    ("kueue:latest", "kueue", "latest", None),
])
def test_image_parts(image: str, repository: str, tag: str | None, version: str | None) -> None:
    assert image_repository(image) == repository
    assert image_tag(image) == tag
    found = image_version(image)
    assert (str(found) if found else None) == version


def _ctr(*args: str, command: tuple[str, ...] = ()) -> Container:
    return Container("c", "i", command, tuple(args), {})


@pytest.mark.parametrize(("container", "value"), [
    (_ctr("--enable-dynamic-resource-allocation=true"), "true"),
    (_ctr("--enable-dynamic-resource-allocation"), "true"),
    (_ctr("--enable-dynamic-resource-allocation", "false"), "false"),
    (_ctr("--enable-dynamic-resource-allocation=true",
          "--enable-dynamic-resource-allocation=false"), "false"),
    (_ctr(command=("sh", "-c", "exec ca --enable-dynamic-resource-allocation=true --v=2")),
     "true"),
    (_ctr("--enable-dynamic-resource-allocation-other=true"), None),
    (_ctr(), None),
])
def test_flag_value(container: Container, value: str | None) -> None:
    assert flag_value(container, "--enable-dynamic-resource-allocation") == value


def test_feature_gates() -> None:
    gates = feature_gates(_ctr("--feature-gates=A=true,B=false,broken,C=maybe"))
    assert gates == {"A": True, "B": False}


def test_gpu_evidence_reasons() -> None:
    assert gpu_evidence({}, {}, None) == ()
    assert gpu_evidence({"nvidia.com/gpu.present": "false"}, {}, None) == ()
    reasons = gpu_evidence({"feature.node.kubernetes.io/pci-0302_10de.present": "true"},
                           {"nvidia.com/gpu": 2}, 0)
    assert reasons == ("offers nvidia.com/gpu: 2",
                       "NFD label feature.node.kubernetes.io/pci-0302_10de.present",
                       "gpu.nvidia.com ResourceSlices (0 devices)")


def test_named() -> None:
    assert named(["a", "b"]) == "a, b"
    assert named([str(i) for i in range(7)]) == "0, 1, 2, 3, 4 and 2 more"
