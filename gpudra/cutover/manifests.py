"""A wave's manifests on disk (`cutover --output-dir`), laid out by how the runbook applies
them, so that every step is one kubectl command over one folder:

    wave-N/original/replace/<namespace>/<kind>-<name>.yaml   the moving workloads as exported
    wave-N/original/recreate/...                              (the rollback puts these back)
    wave-N/converted/claims/...      the ResourceClaimTemplates and claims convert wrote for
                                     them: applied first, so no workload names a missing one
    wave-N/converted/replace/...     workloads whose pod template can change in place
                                     (Deployment, StatefulSet, CronJob, ...): `kubectl replace`
    wave-N/converted/recreate/...    Jobs, JobSets and bare Pods, whose pod template cannot
                                     change: deleted, then created again on claims

`kubectl replace`, not `apply`: an object that `kubectl apply` did not create has no
last-applied configuration, so apply removes nothing from it, and the converted template would
keep its `nvidia.com/gpu` limit beside the claim (its pods then wait for both).
"""

from __future__ import annotations

import io
import shutil
import tempfile
from pathlib import Path

from gpudra.cutover.fleet import Workload
from gpudra.cutover.waves import CutoverPlan, Wave
from gpudra.dra.versions import TargetVersion
from gpudra.model import ExitCode, InputError
from gpudra.workloads import WorkloadTable

# Kinds whose pod template the API server will not change: Job (spec.template is immutable),
# JobSet (spec.replicatedJobs is immutable), Pod (a pod's containers' resources are fixed).
RECREATED_KINDS = frozenset({"Pod", "Job", "JobSet"})
CLAIM_KINDS = frozenset({"ResourceClaimTemplate", "ResourceClaim"})
REPLACE, RECREATE, CLAIMS = "replace", "recreate", "claims"


def mode(workload: Workload) -> str:
    """How a moving workload gets onto claims: replaced in place, or deleted and created."""
    return RECREATE if workload.kind in RECREATED_KINDS else REPLACE


def wave_modes(wave: Wave) -> frozenset[str]:
    return frozenset(mode(w) for w in wave.moved)


def write_waves(result: CutoverPlan, out: Path, table: WorkloadTable,
                target: TargetVersion) -> list[InputError]:
    """Each wave's original/ and converted/ folders (above); the workloads converted by
    `gpudra convert` for the release the cutover plans for."""
    errors: list[InputError] = []
    for wave in result.waves:
        if wave.moved:
            errors += _write_wave(wave, out / f"wave-{wave.number}", table, target)
    return errors


def _write_wave(wave: Wave, where: Path, table: WorkloadTable,
                target: TargetVersion) -> list[InputError]:
    from gpudra.convert.export import clean, dump, file_name
    from gpudra.convert.writer import write_under
    from gpudra.gpu_use import read_object

    errors: list[InputError] = []
    modes: dict[str, str] = {}  # exported file name -> replace or recreate
    for workload in wave.moved:
        data = workload.original
        group = str(data.get("apiVersion", "")).rpartition("/")[0]
        paths = [p.spec.path for p in read_object(table, group, workload.kind, data).pods]
        name = file_name(data)
        if name is None:
            errors.append(InputError(None, "not a valid Kubernetes name; left out",
                                     object=workload.label))
            continue
        modes[name] = mode(workload)
        write_under(where / "original" / modes[name], name,
                    dump(clean(data, paths)).encode("utf-8"))
    where.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".converting-", dir=where))
    try:
        for kind in sorted(set(modes.values())):
            errors += _convert(where / "original" / kind, staging / kind, target)
        for name, kind in modes.items():
            converted = staging / kind / name
            if converted.is_file():
                _split(converted.read_text(encoding="utf-8"), name, kind, where / "converted")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return errors


def _convert(source: Path, output: Path, target: TargetVersion) -> list[InputError]:
    from gpudra.convert.run import ConvertRequest, run_convert

    stderr = io.StringIO()
    code = run_convert(ConvertRequest(paths=(str(source),), output_dir=output,
                                      target_version=str(target), quiet=True),
                       stdout=io.StringIO(), stderr=stderr)
    if code in (ExitCode.OK, 4):
        return []
    return [InputError(str(source), "convert failed: "
                       + (stderr.getvalue().strip() or f"exit {int(code)}"))]


def _split(text: str, name: str, kind: str, converted: Path) -> None:
    """One converted file into the workload (under replace/ or recreate/) and its claim
    objects (under claims/), each document's text as convert wrote it."""
    import yaml

    from gpudra.convert.writer import write_under
    from gpudra.sources.documents import split_documents

    parts: dict[str, list[str]] = {kind: [], CLAIMS: []}
    for chunk in split_documents(text):
        document = yaml.safe_load(chunk.text)
        if not isinstance(document, dict):
            continue
        body = chunk.text if chunk.text.startswith("---") else "---\n" + chunk.text
        parts[CLAIMS if document.get("kind") in CLAIM_KINDS else kind].append(body)
    for folder, bodies in parts.items():
        if bodies:
            write_under(converted / folder, name, "".join(bodies).encode("utf-8"))
