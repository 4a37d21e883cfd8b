"""The runbook gpudra cutover writes, read as a person follows it: every shell line of a wave's
Steps (or Rollback) block run as written, in order, by bash, with `kubectl` (the control
plane's own build) and `gpudra` on PATH and the cluster's kubeconfig as KUBECONFIG.

Nothing here interprets a step's comment: a step that needs a person to wait or look must be
written as a command that waits or checks, or the journey finds the cluster not ready."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

_WAVE = re.compile(r"^## Wave (\d+)\b.*$", re.M)
_BLOCK = re.compile(r"^(Steps|Rollback):\s*\n\s*```sh\n(.*?)^```", re.M | re.S)


@dataclass(frozen=True)
class Wave:
    number: int
    steps: tuple[str, ...]
    rollback: tuple[str, ...]


@dataclass(frozen=True)
class StepResult:
    command: str
    exit_code: int
    output: str


def parse(markdown: str) -> list[Wave]:
    """The waves of a runbook in Markdown (gpudra cutover -o markdown), in order."""
    heads = list(_WAVE.finditer(markdown))
    waves = []
    for index, head in enumerate(heads):
        end = heads[index + 1].start() if index + 1 < len(heads) else len(markdown)
        blocks = {kind: tuple(line for line in body.splitlines() if line.strip())
                  for kind, body in _BLOCK.findall(markdown[head.end():end])}
        waves.append(Wave(int(head.group(1)), blocks.get("Steps", ()),
                          blocks.get("Rollback", ())))
    return waves


def tools(directory: Path, controlplane: Path) -> Path:
    """A directory of `kubectl` and `gpudra` commands for PATH: the control plane's kubectl
    and this checkout's gpudra under this interpreter."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, target in (("kubectl", f'exec "{controlplane}" kubectl "$@"'),
                         ("gpudra", f'exec "{sys.executable}" -m gpudra "$@"')):
        script = directory / name
        script.write_text(f"#!/bin/sh\n{target}\n")
        script.chmod(0o755)
    return directory


def run(command: str, *, bin_dir: Path, kubeconfig: Path, cwd: Path) -> StepResult:
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "KUBECONFIG": str(kubeconfig),
           "HOME": str(cwd), "NO_COLOR": "1"}
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                          check=False, cwd=cwd, env=env, timeout=300)
    return StepResult(command, done.returncode, (done.stdout + done.stderr)[-4000:])


def run_all(steps: tuple[str, ...], *, bin_dir: Path, kubeconfig: Path, cwd: Path,
            what: str) -> None:
    """Every step run as written, in order; the first that exits non-zero fails the test,
    named with `what` (the wave and its block) and what it printed."""
    for step in steps:
        done = run(step, bin_dir=bin_dir, kubeconfig=kubeconfig, cwd=cwd)
        assert done.exit_code == 0, f"{what}: {step}\n{done.output}"
