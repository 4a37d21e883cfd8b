"""Controllers that read what convert removes, looked up in the controller registry.

Operators build pods from the objects convert edits, and some of them derive more than the pod
from the device-plugin limit: KubeRay the `ray start --num-gpus`, Kubeflow Trainer the process
count, KServe the image and the multi-node GPU limits, mpi-operator v1alpha1 the hostfile, Grove
the IMEX channel. The registry (gpudra/controllers/registry.yaml, docs/controllers.md) says, per
kind and API version, which controller runs it and which module here acts: it writes the count
where the controller can read it after conversion, or raises Blocked with the reason. A custom
resource the registry does not list is blocked unless `.gpudra.yaml` vouches for its kind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gpudra.controllers.registry import (
    ControllerRow,
    RegistryError,
    registry,
    unchecked_reason,
)
from gpudra.convert import grove, kserve, kubeflow, kuberay, mpijob_v1alpha1, provisioning
from gpudra.convert.records import Blocked
from gpudra.convert.requests import DeviceNeed
from gpudra.k8s.objects import PathT
from gpudra.results.vouches import VouchSet
from gpudra.k8s.workloads import PodSpecRef
from gpudra.yamledit.ops import Op


@dataclass(frozen=True)
class PodSpecChange:
    """What convert takes away from one pod spec of one object, as a handler sees it."""

    data: Mapping[str, Any]
    api_version: str
    kind: str
    base: PathT
    spec: PodSpecRef
    removed: tuple[tuple[PathT, str], ...]  # (container path, resource name)
    provisioned: frozenset[tuple[str | None, str]]  # PodTemplates a ProvisioningRequest names

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]


Handler = Callable[[PodSpecChange, list[Op], list[str]], None]

HANDLERS: dict[str, Handler] = {
    "kuberay": lambda c, ops, notes: kuberay.keep_num_gpus(
        c.data, c.group, c.kind, c.base, c.spec.path, c.spec.data, c.removed, ops, notes),
    "trainer": lambda c, ops, notes: kubeflow.keep_process_count(
        c.data, c.group, c.kind, c.base, c.spec.path, c.spec.data, c.removed, ops, notes),
    "mpijob-v1": lambda c, ops, notes: kubeflow.check_mpijob_launcher(
        c.api_version, c.kind, c.spec.path, c.removed),
    "mpijob-v1alpha1": lambda c, ops, notes: mpijob_v1alpha1.check(c.data, c.removed),
    "kserve": lambda c, ops, notes: kserve.check(c.data, c.group, c.kind, c.spec.path,
                                                 c.removed),
    "grove": lambda c, ops, notes: grove.check(c.data, c.spec.path, c.removed),
    "provisioning": lambda c, ops, notes: provisioning.check(c.data, c.provisioned, notes),
    # The NIM Operator's services are planned by the planner itself (gpudra.convert.nim):
    # their pod spec is the service spec, converted into draResources.
    "nim": lambda c, ops, notes: None,
}


def admit(api_version: str, kind: str, vouches: VouchSet | None) -> list[str]:
    """Whether convert may convert a workload of this kind at all: the notes to add (a vouch),
    or Blocked with the reason (a kind nobody checked, or one whose controller always needs
    a hand)."""
    table = registry()
    row = table.row_for(api_version, kind)
    if row is not None:
        if row.convert == "blocks" and row.handler is None:
            raise Blocked(f"{row.controller}: {row.reason}; migrate by hand")
        return []
    if not table.is_unchecked(api_version, kind):
        return []
    vouch = vouches.vouch_for(api_version, kind) if vouches is not None else None
    if vouch is not None:
        return [f"{kind}: not in gpudra's controller registry; {vouch.describe()}"]
    expired = vouches.expired_for(api_version, kind) if vouches is not None else None
    if expired is not None:
        raise Blocked(f"{unchecked_reason(api_version, kind)}. The vouch of {expired.owner} "
                      f"expired on {expired.expires}")
    raise Blocked(unchecked_reason(api_version, kind))


def keep_controllers_working(data: Mapping[str, Any], base: PathT, spec: PodSpecRef,
                             needs: list[DeviceNeed], ops: list[Op], notes: list[str],
                             provisioned: frozenset[tuple[str | None, str]] = frozenset()
                             ) -> None:
    """Operations (and notes) that keep the object's controller seeing the counts `needs` take
    away from `spec`; raises Blocked where no operation can."""
    api_version = str(data.get("apiVersion", ""))
    row = registry().row_for(api_version, str(data.get("kind", "")))
    if row is None or row.handler is None:
        return
    change = PodSpecChange(data, api_version, str(data.get("kind", "")), base, spec,
                           tuple((n.container.path, n.resource) for n in needs), provisioned)
    handler_for(row)(change, ops, notes)


def handler_for(row: ControllerRow) -> Handler:
    if row.handler not in HANDLERS:  # registry.yaml names a module that does not exist
        raise RegistryError(f"registry.yaml: no handler {row.handler!r}")
    return HANDLERS[row.handler]
