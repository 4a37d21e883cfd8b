"""`gpudra guard`: the namespace ratchet, written as a ValidatingAdmissionPolicy and binding."""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from typing import Optional, TypeVar

import typer

from gpudra.cli.options import Choice
from gpudra.cli.root import app, guarded
from gpudra.errors import UsageError


class GuardFormat(Choice):
    YAML = "yaml"
    JSON = "json"


EPILOG = (
    "Writes the objects and applies nothing: pipe them to `kubectl apply -f -`. The binding "
    "selects namespaces labelled gpudra.io/migrated=true, which the cutover runbook writes "
    "after a namespace's last wave (`kubectl label namespace NS gpudra.io/migrated=true`).\n\n"
    "Stages: --action warn first (kubectl prints a warning, the audit log records it, nothing "
    "is refused), then --action deny (refused). Both bindings are named gpudra-guard, so "
    "applying one replaces the other.\n\n"
    "Exit codes: 0 written; 2 usage error; 3 a file could not be written.\n\n"
    "Examples:\n\n\b\n"
    "  gpudra guard | kubectl apply -f -                     # claims strategy, warn\n"
    "  gpudra guard --action deny | kubectl apply -f -       # then refuse\n"
    "  gpudra guard --strategy bridge --action deny          # nvidia.com/gpu stays allowed\n"
    "  gpudra guard --output-dir guard/ -o json              # policy.json and binding.json\n"
    "  kubectl label namespace ml gpudra.io/migrated=true    # what the runbook does")

_STRATEGY = typer.Option("claims", "--strategy", metavar="claims|bridge",
                         help="What serves GPUs in migrated namespaces: claims (also spelled "
                              "rewrite, as convert and cutover call it) refuses every "
                              "NVIDIA device-plugin resource; bridge (KEP-5004 DeviceClass with "
                              "extendedResourceName) lets nvidia.com/gpu through and refuses "
                              "MIG and shared ones.")
_ACTION = typer.Option("warn", "--action", metavar="warn|deny",
                       help="warn: validationActions [Warn, Audit]; deny: [Deny, Audit].")
_OUTPUT = typer.Option("yaml", "-o", "--output", metavar="yaml|json",
                       help="A YAML stream, or a JSON List.")
_OUTPUT_DIR = typer.Option(None, "--output-dir", metavar="DIR",
                           help="Write policy.yaml and binding.yaml (or .json) there instead "
                                "of stdout.")


@app.command(short_help="Keep migrated namespaces migrated: an admission policy and binding.",
             epilog=EPILOG)
@guarded
def guard(
    strategy: str = _STRATEGY,
    action: str = _ACTION,
    output: str = _OUTPUT,
    output_dir: Optional[Path] = _OUTPUT_DIR,
) -> None:
    """Write the namespace ratchet: a ValidatingAdmissionPolicy and its binding.

    In namespaces labelled gpudra.io/migrated=true, new Pods and pod templates (Deployment,
    StatefulSet, DaemonSet, ReplicaSet, ReplicationController, PodTemplate, Job, CronJob) that
    ask for device-plugin GPUs the cluster no longer serves are warned about, then refused,
    with a message that names the container, the resource and `gpudra convert`. An object that
    already asked when the namespace was labelled may still be updated as it is.
    admissionregistration.k8s.io/v1: Kubernetes 1.30 and later, no webhook to run.
    """
    from gpudra.guard.policy import Action, GuardRequest, Strategy, guard_objects
    from gpudra.guard.render import as_json, as_yaml

    request = GuardRequest(_parse(Strategy, strategy, "--strategy"),
                           _parse(Action, action, "--action"))
    fmt = GuardFormat.parse(output, "-o")
    render = as_json if fmt is GuardFormat.JSON else as_yaml
    objects = guard_objects(request)
    if output_dir is None:
        sys.stdout.write(render(objects))
        return
    _write(output_dir, {f"policy.{fmt.value}": render(objects[:1]),
                        f"binding.{fmt.value}": render(objects[1:])})


_Word = TypeVar("_Word", bound=enum.Enum)


def _parse(words: type[_Word], text: str, option: str) -> _Word:
    """The member of one of the core's enums whose value is `text`; a usage error otherwise."""
    try:
        return words(text)
    except ValueError:
        allowed = " or ".join(str(member.value) for member in words)
        raise UsageError(f"{option} must be {allowed}, not {text!r}") from None


def _write(out: Path, files: dict[str, str]) -> None:
    from gpudra.convert.writer import WriteRefused, write_under
    from gpudra.errors import GpudraError

    if out.exists() and not out.is_dir():
        raise UsageError(f"--output-dir {out}: not a directory")
    for name, text in files.items():
        try:
            write_under(out, name, text.encode("utf-8"))
        except OSError as exc:
            raise GpudraError(f"{out / name}: cannot write: {exc.strerror or exc}") from None
        except WriteRefused as exc:
            raise GpudraError(str(exc)) from None
    typer.echo(f"gpudra: wrote {', '.join(str(out / n) for n in files)}", err=True)
