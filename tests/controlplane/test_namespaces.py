"""ControlPlane.ensure_namespaces: the namespaces made (or labelled when they exist), each with
its default ServiceAccount by the time it returns, with one wait for all of them."""

from __future__ import annotations

import pytest

from tests.controlplane.cluster import ControlPlane

CASES = [
    # (existing namespaces, asked for, labels)
    ((), ("ns-one",), {}),
    ((), ("ns-a", "ns-b", "ns-c", "ns-d"), {"team": "ml"}),
    (("ns-old",), ("ns-old", "ns-new"), {"gpudra.io/test": "relabelled"}),
]


@pytest.mark.parametrize(("existing", "names", "labels"), CASES)
def test_namespaces_come_with_labels_and_default_service_accounts(
        control_plane: ControlPlane, existing: tuple[str, ...], names: tuple[str, ...],
        labels: dict[str, str]) -> None:
    for name in existing:
        control_plane.ensure_namespace(name)
    control_plane.ensure_namespaces(list(names), labels)
    for name in names:
        namespace = control_plane.admin.get(f"/api/v1/namespaces/{name}")
        assert labels.items() <= namespace["metadata"].get("labels", {}).items()
        # read once, no wait: it must exist already
        account = control_plane.admin.get(f"/api/v1/namespaces/{name}/serviceaccounts/default")
        assert account["metadata"]["name"] == "default"
