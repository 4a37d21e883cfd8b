"""kwok, built once from the Go module proxy and cached, and run against the test control plane.

kwok (sigs.k8s.io/kwok) plays the kubelets: it marks the Nodes it manages Ready and moves the
Pods bound to them through Running and Ready, as its stage configs describe. v0.8.0 runs no
stage unless its configs are passed with --config; the "fast" ones (kustomize/stage/node/fast
and kustomize/stage/pod/fast in its module, less pod-complete: see LEFT_OUT_STAGES) are read
from the module cache, where the build put them, so the stages are exactly the pinned
release's.

The binary is cached beside the control plane's (~/.cache/gpudra-tests, or $GPUDRA_TEST_CACHE),
named by the pinned version and `go version`: a cold build is about 5 minutes of both cores.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from tests.controlplane import progress
from tests.controlplane.build import Unavailable

MODULE = "sigs.k8s.io/kwok"
VERSION = "v0.8.0"
# The Stage files of the "fast" policy (kustomize/stage/node/fast and pod/fast), less
# pod-complete: it ends every Job's pods as soon as they run, and the journey's Jobs are
# trainings that are still running when their wave comes.
STAGE_DIRECTORIES = ("kustomize/stage/node/fast", "kustomize/stage/pod/fast")
LEFT_OUT_STAGES = frozenset({"kustomization.yaml", "pod-complete.yaml"})
# Nodes carrying this annotation are kwok's; any other Node is left alone.
NODE_ANNOTATION = "kwok.x-k8s.io/node"
ESTIMATE = "~5 min on 2 cores cold"  # said before a build starts


def _cache() -> Path:
    cache = Path(os.environ.get("GPUDRA_TEST_CACHE") or Path.home() / ".cache" / "gpudra-tests")
    cache.mkdir(parents=True, exist_ok=True)
    return cache


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise Unavailable("Go is not installed (kwok is built from the Go module proxy)")
    return go


def binary(say: progress.Say = progress.to_stderr) -> Path:
    """The built kwok, building it first when the cache has none for this pin and Go; `say`
    hears what is built, how far it is, and any wait for another run."""
    target = cached_path()
    if target.exists():
        return target
    with progress.held_lock(target.parent / "kwok.lock", f"building kwok {VERSION}", say):
        if not target.exists():  # the run that held the lock may have built it
            gobin = target.parent / f"kwok-build-{os.getpid()}"
            try:
                progress.run_build([_go(), "install", "-v", f"{MODULE}/cmd/kwok@{VERSION}"],
                                   f"kwok {VERSION} ({MODULE}/cmd/kwok) into {target}",
                                   ESTIMATE, say, cwd=_cache(),
                                   env={**os.environ, "GOBIN": str(gobin)}, nice=True)
                (gobin / "kwok").rename(target)
            except progress.BuildFailed as error:
                raise Unavailable(str(error)) from None
            finally:
                shutil.rmtree(gobin, ignore_errors=True)
    return target


def cached_path() -> Path:
    """Where kwok is cached for this pin and this Go (built or not)."""
    go_version = _run([_go(), "version"]).split()[2]
    return _cache() / f"kwok-{VERSION}-{go_version}"


def stage_configs() -> list[Path]:
    """The Stage files of the pinned release's fast policy (downloaded to the module cache if
    the cache was cleaned since the build)."""
    module = json.loads(_run([_go(), "mod", "download", "-json", f"{MODULE}@{VERSION}"]))
    root = Path(module["Dir"])
    files = sorted(path for directory in STAGE_DIRECTORIES
                   for path in (root / directory).glob("*.yaml")
                   if path.name not in LEFT_OUT_STAGES)
    if not files:
        raise Unavailable(f"no stage configs under {root} ({', '.join(STAGE_DIRECTORIES)})")
    return files


class Kwok:
    """One kwok process managing the annotated Nodes of a control plane."""

    def __init__(self, kwok: Path, kubeconfig: Path, workdir: Path) -> None:
        self.kwok = kwok
        self.kubeconfig = kubeconfig
        self.log = workdir / "kwok.log"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        args = [str(self.kwok), "--kubeconfig", str(self.kubeconfig),
                "--manage-nodes-with-annotation-selector", f"{NODE_ANNOTATION}=fake",
                "--server-address", "127.0.0.1:0", "--node-ip", "127.0.0.1"]
        for config in stage_configs():
            args += ["--config", str(config)]
        with open(self.log, "wb") as log:
            self._process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL)
        time.sleep(0.2)
        if self._process.poll() is not None:
            raise RuntimeError(f"kwok exited with {self._process.returncode}:\n{self.logs()}")

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def logs(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process = None


def _run(argv: list[str]) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=_cache())
    if result.returncode != 0:
        raise Unavailable(f"{' '.join(argv[:3])} failed: {result.stderr.strip()[-2000:]}")
    return result.stdout
