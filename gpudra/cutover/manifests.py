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
    wave-N/converted/quotas/...      the ResourceQuotas of the namespaces the wave moves, with
    wave-N/original/quotas/...       the DRA keys that count claims (the first wave of a
                                     namespace; its keys on nvidia.com/gpu stay while workloads
                                     there remain on the device plugin, and go in its last
                                     wave), and as they were before the wave (the rollback)

Every wave has its folder, converted/ at least (empty in a wave that only switches nodes), so
the runbook's `gpudra verify --wave-of DIR/wave-N` line reads one in each wave.

`kubectl replace`, not `apply`: an object that `kubectl apply` did not create has no
last-applied configuration, so apply removes nothing from it, and the converted template would
keep its `nvidia.com/gpu` limit beside the claim (its pods then wait for both).
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gpudra.cutover.pools import Fleet, Workload
from gpudra.cutover.waves import CutoverPlan, Wave
from gpudra.dra.versions import TargetVersion
from gpudra.errors import UnreadableInputError
from gpudra.results.model import ExitCode, InputError
from gpudra.k8s.workloads import WorkloadTable
from gpudra.run_context import RunContext
from gpudra.convert.export import clean, dump, file_name
from gpudra.k8s.gpu_use import read_object

# Kinds whose pod template the API server will not change: Job (spec.template is immutable),
# JobSet (spec.replicatedJobs is immutable), Pod (a pod's containers' resources are fixed).
RECREATED_KINDS = frozenset({"Pod", "Job", "JobSet"})
CLAIM_KINDS = frozenset({"ResourceClaimTemplate", "ResourceClaim"})
REPLACE, RECREATE, CLAIMS, QUOTAS = "replace", "recreate", "claims", "quotas"


@dataclass(frozen=True)
class QuotaChange:
    """A quota replaced in a wave: converted from what the cluster holds, keeping its
    device-plugin keys (`keep`) while workloads of its namespace stay on the device plugin;
    `before` is what the previous change made of it (None: the quota as read)."""

    quota: Mapping[str, Any]
    keep: bool
    before: bool | None = None  # the `keep` of the previous change, None for the first
    # device-plugin names whose keys stay in any case: the bridge serves pods of the namespace
    # that ask them unchanged, and the quota's key still counts them (--strategy bridge)
    kept_names: frozenset[str] = frozenset()


def quota_changes(result: CutoverPlan, fleet: Fleet,
                  bridged: Mapping[str, frozenset[str]] | None = None
                  ) -> dict[int, tuple[QuotaChange, ...]]:
    """Per wave, the quotas it replaces: in the first wave that moves a workload of their
    namespace (DRA keys added), and in the wave after which none is left on the device plugin
    there (device-plugin keys removed, but those on the names `bridged` gives the namespace:
    the names its bridged pods still ask); one change when both are the same wave."""
    remaining: Counter[str] = Counter(w.namespace for w in fleet.workloads if not w.on_claims)
    remaining.update(label.split("/", 1)[0] for label in fleet.unconvertible)
    last: dict[tuple[str, str], bool] = {}  # quota -> keep of its last change
    out: dict[int, tuple[QuotaChange, ...]] = {}
    for wave in result.waves:
        moved = {w.namespace for w in wave.moved}
        remaining.subtract(w.namespace for w in wave.moved)
        changes = []
        for quota in fleet.quotas:
            meta = quota["metadata"]
            key = (meta["namespace"], meta["name"])
            keep = remaining[key[0]] > 0
            if key[0] in moved and last.get(key) in (None, True) and last.get(key) != keep:
                changes.append(QuotaChange(quota, keep, last.get(key),
                                           (bridged or {}).get(key[0], frozenset())))
                last[key] = keep
        out[wave.number] = tuple(changes)
    return out


def mode(workload: Workload) -> str:
    """How a moving workload gets onto claims: replaced in place, or deleted and created."""
    return RECREATE if workload.kind in RECREATED_KINDS else REPLACE


def wave_modes(wave: Wave) -> frozenset[str]:
    return frozenset(mode(w) for w in wave.moved)


def write_waves(result: CutoverPlan, quotas: Mapping[int, tuple[QuotaChange, ...]], out: Path,
                table: WorkloadTable, target: TargetVersion, context: RunContext
                ) -> list[InputError]:
    """Each wave's original/ and converted/ folders (above); the workloads and the quotas
    `quota_changes` gave each wave, converted by `gpudra convert` for the release the cutover
    plans for, on the day of the cutover's `context`."""
    from gpudra.convert.writer import WriteRefused

    errors: list[InputError] = []

    for wave in result.waves:
        where = out / f"wave-{wave.number}"
        try:
            # every wave's folder, so its `verify --wave-of` line reads one: a wave that only
            # switches nodes moves no workload (as the bridge's write_bridged does)
            (where / "converted").mkdir(parents=True, exist_ok=True)
            if not wave.moved:
                continue
            errors += _write_wave(wave, where, table, target, context)
            errors += _write_quotas(quotas.get(wave.number, ()), where, target, context)
        except (OSError, WriteRefused) as exc:  # a full disk, a file where a folder goes
            reason = str(exc) if isinstance(exc, WriteRefused) else exc.strerror or str(exc)
            errors.append(InputError(str(where), f"cannot write the wave's manifests: {reason}"))
    return errors


def _write_quotas(changes: tuple[QuotaChange, ...], where: Path,
                  target: TargetVersion, context: RunContext) -> list[InputError]:
    """converted/quotas/ and original/quotas/ of a wave; each quota converted from the
    cluster's copy (convert decides its keys), as `keep` says."""
    from gpudra.convert.writer import write_under

    errors: list[InputError] = []
    staging = Path(tempfile.mkdtemp(prefix=".quotas-", dir=where))
    try:
        for index, change in enumerate(changes):
            name = file_name(change.quota)
            if name is None:
                continue  # fleet.device_plugin_quotas let only valid names through
            exported = dump(clean(change.quota, [])).encode("utf-8")
            source = staging / "read" / name
            write_under(staging / "read", name, exported)
            # convert writes a file's copy under its base name: quotas of one name in two
            # namespaces each get an output folder of their own
            converted = staging / str(index)
            after = _convert_quota(source, converted / "after", change, change.keep, target,
                                   context, errors)
            before = exported if change.before is None else _convert_quota(
                source, converted / "before", change, change.before, target, context, errors)
            if after is not None and before is not None:
                write_under(where / "converted" / QUOTAS, name, after)
                write_under(where / "original" / QUOTAS, name, before)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return errors


def _convert_quota(source: Path, output: Path, change: QuotaChange, keep: bool,
                   target: TargetVersion, context: RunContext, errors: list[InputError]
                   ) -> bytes | None:
    errors += _convert(source, output, target, context, keep_quota=keep,
                       kept_names=change.kept_names)
    return read_converted(output / source.name)


def read_converted(path: Path) -> bytes | None:
    """What convert wrote at `path` (in the cutover's own staging folder), None when it wrote
    nothing there; read as every input is (gpudra.sources.file_bytes.read_regular): a regular
    file up to the input cap, UnreadableInputError for anything else."""
    from gpudra.sources.file_bytes import read_regular

    try:
        return read_regular(str(path))
    except FileNotFoundError:
        return None
    except (OSError, UnreadableInputError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UnreadableInputError(f"{path}: cannot read: {reason}") from None


def _write_wave(wave: Wave, where: Path, table: WorkloadTable,
                target: TargetVersion, context: RunContext) -> list[InputError]:
    from gpudra.convert.writer import write_under

    errors: list[InputError] = []
    modes: dict[str, str] = {}  # exported file name -> replace or recreate
    for workload in wave.moved:
        exported = export_original(workload, table)
        if exported is None:
            errors.append(InputError(None, "not a valid Kubernetes name; left out",
                                     object=workload.label))
            continue
        name, text = exported
        modes[name] = mode(workload)
        write_under(where / "original" / modes[name], name, text)
    where.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".converting-", dir=where))
    try:
        for kind in sorted(set(modes.values())):
            errors += _convert(where / "original" / kind, staging / kind, target, context)
        for name, kind in modes.items():
            converted = read_converted(staging / kind / name)
            if converted is not None:
                _split(converted.decode("utf-8"), name, kind, where / "converted")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return errors


def export_original(workload: Workload, table: WorkloadTable) -> tuple[str, bytes] | None:
    """(file name, text) of the workload as exported (what `convert --from-cluster` reads:
    without status and what the API server set); None for a name no API server holds."""

    data = workload.original
    group = str(data.get("apiVersion", "")).rpartition("/")[0]
    paths = [p.spec.path for p in read_object(table, group, workload.kind, data).pods]
    name = file_name(data)
    return None if name is None else (name, dump(clean(data, paths)).encode("utf-8"))


def _convert(source: Path, output: Path, target: TargetVersion, context: RunContext,
             keep_quota: bool = False, kept_names: frozenset[str] = frozenset()
             ) -> list[InputError]:
    from gpudra.convert.records import ConvertRequest
    from gpudra.convert.run import convert

    # The cutover's own context: the config it planned the waves by (its workload kinds,
    # vouches and waivers convert the same workloads) and its day; files only (no cluster).
    # Not its `exclude:` globs: they chose the --from files, and would match the names gpudra
    # gives the exported workloads (`<ns>/<kind>-<name>.yaml`), dropping a planned workload.
    config = replace(context.config, exclude=())
    wave = replace(context, target=target, cluster=None, config=config)
    result = convert(ConvertRequest(paths=(str(source),), context=wave,
                                    output_dir=output,
                                    keep_device_plugin_quota=keep_quota,
                                    keep_quota_names=kept_names))
    code = result.exit_code
    if code in (ExitCode.OK, ExitCode.BLOCKED):
        return []
    # the errors as `gpudra convert` says them
    said = "".join(f"gpudra: {error.where}: {error.message}\n" for error in result.errors)
    return [InputError(str(source), "convert failed: " + (said.strip() or f"exit {int(code)}"))]


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
