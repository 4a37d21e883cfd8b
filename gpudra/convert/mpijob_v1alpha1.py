"""mpi-operator's first API, `kubeflow.org/v1alpha1` MPIJob (releases 0.1.0 to v0.3.0).

Its one pod template (`spec.template`) makes both the launcher and the workers, and the
controller derives the MPI layout from the GPU limit (allocateProcessingUnits, newConfigMap,
newWorker in pkg/controllers/v1alpha1/mpi_job_controller.go; docs/facts.md):

- without `spec.gpus` (or `processingUnits`), each worker's hostfile `slots=` is the first
  container's `nvidia.com/gpu` limit: once that is a claim, every worker runs 1 rank;
- with `spec.gpus`, the controller writes `nvidia.com/gpu: <per worker>` into the worker
  StatefulSet's first container itself, which no claim in the template replaces.

Either way a GPU limit in the template cannot become a claim without changing the job.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpudra.convert.records import Blocked
from gpudra.k8s.objects import PathT, as_mapping

API_VERSION = "kubeflow.org/v1alpha1"
GPU = "nvidia.com/gpu"  # the controller's default processing resource


def check(data: Mapping[str, Any], removed: Iterable[tuple[PathT, str]]) -> None:
    if not any(name == GPU for _, name in removed):
        return
    spec = as_mapping(data.get("spec"))
    counted = next((key for key in ("gpus", "processingUnits") if spec.get(key) is not None),
                   None)
    if counted is None:
        raise Blocked("mpi-operator v1alpha1 writes each worker's hostfile slots= from the "
                      "template's nvidia.com/gpu limit; as a claim every worker would run 1 "
                      "rank instead of one per GPU. Move the job to mpi-operator v2beta1 "
                      "(slotsPerWorker), then convert")
    raise Blocked(f"mpi-operator v1alpha1 with spec.{counted} writes the nvidia.com/gpu limit "
                  "into every worker itself; a claim in the template would come on top of "
                  "it. Move the job to mpi-operator v2beta1 (slotsPerWorker), then convert")
