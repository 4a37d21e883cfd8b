"""Kubeflow controllers that read the GPU count convert removes.

Kubeflow Trainer: runtimes whose ML policy reads the GPU count from the `node` container.

Trainer's plugins size a job from the GPU count of the `node` container of the runtime's trainer
job (the replicated job named `node`, or labelled `trainer.kubeflow.org/trainjob-ancestor-step:
trainer`): its requests, else its limits, the first resource whose name contains `gpu`
(`runtime.GetNumGPUPerNode`). Once convert moves the GPUs to a claim that count is 0, and:

- torch (`numProcPerNode: auto`, the only choice a runtime has since Trainer v2.2) starts one
  process per CPU instead of one per GPU; torchtune picks its recipe by the count;
- MPI with the default `numProcPerNode: 1` no longer raises the slots to the GPU count;
- Flux passes the count as `-g` and in its resource spec; XGBoost runs one worker per GPU.

MPI can say it in the runtime, so convert writes `mlPolicy.mpi.numProcPerNode: N`; the others
cannot (torch's runtime field was removed in v2.2, Flux and XGBoost never had one), so the
runtime is blocked with the reason. (kubeflow/trainer `pkg/runtime/runtime.go`,
`pkg/runtime/framework/plugins/{torch,mpi,flux,xgboost}`; docs/facts.md.)

training-operator v1 MPIJob (`kubeflow.org/v1`): the launcher counts as a GPU host only while one
of its containers has a limit whose name contains `gpu` (`isGPULauncher`); otherwise the
controller blanks `NVIDIA_VISIBLE_DEVICES` in it and leaves it out of the hostfile. A launcher's
GPUs therefore cannot become a claim without changing the job; mpi-operator's v2beta1 MPIJob
decides by `runLauncherAsWorker` instead and converts as is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpudra.convert.records import Blocked
from gpudra.k8s.objects import PathT, as_mapping, dig, plural
from gpudra.k8s.quantity import parse_device_count
from gpudra.yamledit.ops import Append, Delete, Op

GROUP = "trainer.kubeflow.org"
RUNTIMES = frozenset({"TrainingRuntime", "ClusterTrainingRuntime"})
NODE = "node"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
# Where the pod spec of a replicated job sits below it.
_JOB_TO_POD = ("template", "spec", "template", "spec")
_REPLICATED_JOBS = ("spec", "template", "spec", "replicatedJobs")
_WHY = ("Kubeflow Trainer reads the GPU count from the `node` container's resources, and after "
        "conversion it is 0")
_BLOCKED = {
    "torch": (f"{_WHY}: the torch plugin (numProcPerNode auto) would start one process per CPU "
              "instead of one per GPU, and torchtune picks its recipe by the count. Set the "
              "process count first: `numProcPerNode` on every TrainJob that uses this runtime "
              "(Trainer v2.2+), or `mlPolicy.torch.numProcPerNode: <GPUs>` here (before v2.2); "
              "then migrate the runtime by hand"),
    "flux": (f"{_WHY}: the Flux plugin passes it as --gpus-per-task and in the resource spec; "
             "migrate by hand"),
    "xgboost": (f"{_WHY}: the XGBoost plugin runs one worker per GPU and would run one per "
                "node; migrate by hand"),
}


def check_mpijob_launcher(api_version: str, kind: str, pod: PathT,
                          removed: Iterable[tuple[PathT, str]]) -> None:
    """Raise Blocked when convert would take a `gpu` limit off a v1 MPIJob's launcher."""
    if api_version != "kubeflow.org/v1" or kind != "MPIJob" or \
            pod[:3] != ("spec", "mpiReplicaSpecs", "Launcher"):
        return
    if any(where[:len(pod)] == pod and "gpu" in name for where, name in removed):
        raise Blocked("training-operator's v1 MPIJob treats the launcher as a GPU host only "
                      "while it has a gpu limit; without one it blanks NVIDIA_VISIBLE_DEVICES "
                      "in the launcher and leaves it out of the hostfile: migrate by hand (or to "
                      "mpi-operator v2beta1 with runLauncherAsWorker)")


def trainer_gpus(resources: Mapping[str, Any], gone: frozenset[str] = frozenset()) -> int:
    """`GetNumGPUPerNode`: the requests' GPU count, else the limits'; resources in `gone`
    are left out (convert removes them)."""
    for section in ("requests", "limits"):
        values = as_mapping(resources.get(section))
        for name, value in values.items():
            if str(name) not in gone and "gpu" in str(name).lower():
                count = parse_device_count(value).value or 0
                if count:
                    return count
                break  # the first such key decides its section, even at zero
    return 0


def is_trainer_pod(data: Mapping[str, Any], pod: PathT) -> bool:
    """The pod spec of the runtime's trainer job (the one Trainer reads resources from)."""
    if len(pod) != len(_REPLICATED_JOBS) + 1 + len(_JOB_TO_POD) or \
            pod[:len(_REPLICATED_JOBS)] != _REPLICATED_JOBS or pod[-4:] != _JOB_TO_POD:
        return False
    job = as_mapping(dig(data, *pod[:len(_REPLICATED_JOBS) + 1]))
    labels = as_mapping(dig(job, "template", "metadata", "labels"))
    return job.get("name") == NODE or labels.get(ANCESTOR_LABEL) == "trainer"


def keep_process_count(data: Mapping[str, Any], group: str, kind: str, base: PathT, pod: PathT,
                       spec: Mapping[str, Any], removed: Iterable[tuple[PathT, str]],
                       ops: list[Op], notes: list[str]) -> None:
    """Keep what the runtime's ML policy derives from the node container's GPUs; raises Blocked
    where the runtime cannot say it. `removed`: (container path, resource) convert removes."""
    if group != GROUP or kind not in RUNTIMES or not is_trainer_pod(data, pod):
        return
    containers = spec.get("containers")
    for i, container in enumerate(containers if isinstance(containers, list) else ()):
        if isinstance(container, Mapping) and container.get("name") == NODE:
            path = pod + ("containers", i)
            break
    else:
        return
    resources = as_mapping(container.get("resources"))
    gone = frozenset(name for where, name in removed if where == path)
    before = trainer_gpus(resources)
    if before == trainer_gpus(resources, gone):
        return
    policy = as_mapping(dig(data, "spec", "mlPolicy"))
    if "mpi" in policy:
        _mpi(policy, base, before, ops, notes)
    elif "torch" in policy:
        if not isinstance(dig(policy, "torch", "numProcPerNode"), int):  # auto, or unset
            raise Blocked(_BLOCKED["torch"])
    else:
        for name, reason in _BLOCKED.items():
            if name in policy:
                raise Blocked(reason)


def _mpi(policy: Mapping[str, Any], base: PathT, gpus: int, ops: list[Op],
         notes: list[str]) -> None:
    """MPI raises the default of 1 slot per node to the GPU count; say it in the runtime."""
    mpi = policy.get("mpi")
    if isinstance(mpi, Mapping) and mpi.get("numProcPerNode", 1) != 1:
        return  # set explicitly: Trainer does not look at the GPUs
    if gpus <= 1:
        return
    at = base + ("spec", "mlPolicy")
    if isinstance(mpi, Mapping):
        if "numProcPerNode" in mpi:
            ops.append(Delete(at + ("mpi", "numProcPerNode")))
        ops.append(Append(at + ("mpi",), "numProcPerNode", gpus))
    else:  # `mpi:` with no value
        ops += [Delete(at + ("mpi",)), Append(at, "mpi", {"numProcPerNode": gpus})]
    notes.append(f"Kubeflow Trainer MPI: mlPolicy.mpi.numProcPerNode: {gpus} keeps "
                 f"{plural(gpus, 'slot')} per node; Trainer took them from the node "
                 "container's GPUs, which are now a claim (a TrainJob's own numProcPerNode "
                 "still wins)")
