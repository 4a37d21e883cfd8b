"""Controllers that read what convert removes, asked about every pod spec convert rewrites.

Operators build pods from the objects convert edits, and some of them derive more than the pod
from the device-plugin limit: KubeRay the `ray start --num-gpus`, Kubeflow Trainer the process
count, KServe the image and the multi-node GPU limits. Each such controller has a module here
that either writes the count where the controller can read it after conversion, or raises
Blocked with the reason. (The NIM Operator, which has a DRA field of its own, is planned in
gpudra.convert.nim.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.convert import kserve, kubeflow, kuberay
from gpudra.convert.requests import DeviceNeed
from gpudra.objects import PathT
from gpudra.workloads import PodSpecRef
from gpudra.yamledit.ops import Op


def keep_controllers_working(data: Mapping[str, Any], base: PathT, spec: PodSpecRef,
                             needs: list[DeviceNeed], ops: list[Op], notes: list[str]) -> None:
    """Operations (and notes) that keep the object's controller seeing the counts `needs` take
    away from `spec`; raises Blocked where no operation can."""
    api_version = str(data.get("apiVersion", ""))
    group, kind = api_version.rpartition("/")[0], str(data.get("kind", ""))
    removed = [(n.container.path, n.resource) for n in needs]
    kuberay.keep_num_gpus(data, group, kind, base, spec.path, spec.data, removed, ops, notes)
    kubeflow.check_mpijob_launcher(api_version, kind, spec.path, removed)
    kserve.check(data, group, kind, spec.path, removed)
    kubeflow.keep_process_count(data, group, kind, base, spec.path, spec.data, removed, ops,
                                notes)
