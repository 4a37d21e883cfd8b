"""Build (once, cached) the Go program in this directory: etcd, the Kubernetes control plane,
kubectl and kustomize in one binary, once per release (releases.py: one go.mod file each).

Each binary is cached under ~/.cache/gpudra-tests (or $GPUDRA_TEST_CACHE), named by its release
and a hash of the Go sources, its go.mod and go.sum, its build tags and `go version`, so a second
run starts at once and a changed pin rebuilds. The Go build cache makes a rebuild after such a
change a relink (about a minute) rather than a cold build (about 15 minutes of CPU on 2 cores
per release).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.controlplane import progress
from tests.controlplane.releases import NEWEST, Release

SOURCE = Path(__file__).resolve().parent
# What a build takes, said before it starts (measured on 2 cores).
ESTIMATE = "~15 min on 2 cores cold, ~1 min with a warm Go build cache"


class Unavailable(Exception):
    """The control plane cannot be built here; the message says why."""


def kubernetes_version(release: Release = NEWEST) -> str:
    """The k8s.io/kubernetes release the release's go.mod pins, e.g. 'v1.37.2'."""
    found = re.search(r"^\s*k8s\.io/kubernetes (v\S+)", (SOURCE / release.modfile).read_text(),
                      re.M)
    if not found:
        raise Unavailable(f"tests/controlplane/{release.modfile} does not pin k8s.io/kubernetes")
    return found.group(1)


def binary(release: Release = NEWEST, say: progress.Say = progress.to_stderr) -> Path:
    """The path of the release's built binary, building it first when the cache has none for
    these sources; `say` hears what is built, how far it is, and any wait for another run."""
    target = cached_path(release)
    if target.exists():
        return target
    version = kubernetes_version(release)
    with progress.held_lock(target.parent / "controlplane.lock",
                            f"building the Kubernetes {version} control plane", say):
        if not target.exists():  # the run that held the lock may have built it
            partial = target.with_suffix(".partial")
            argv = [_go(), "build", "-v", "-modfile", release.modfile,
                    "-ldflags", _ldflags(release)]
            if release.build_tags:
                argv += ["-tags", ",".join(release.build_tags)]
            try:
                progress.run_build([*argv, "-o", str(partial), "."],
                                   f"the Kubernetes {version} control plane (etcd, kube-apiserver, "
                                   f"scheduler, controller manager, kubectl, kustomize) into "
                                   f"{target}", ESTIMATE, say, cwd=SOURCE, nice=True)
            except progress.BuildFailed as error:
                raise Unavailable(str(error)) from None
            partial.rename(target)
    return target


def cached_path(release: Release = NEWEST) -> Path:
    """Where the release's binary is cached for these sources and this Go (built or not)."""
    go = _go()
    go_version = _run([go, "version"]).strip()
    digest = hashlib.sha256(go_version.encode() + b"\0" + ",".join(release.build_tags).encode())
    for path in sorted(SOURCE.glob("*.go")) + [SOURCE / release.modfile, SOURCE / release.sumfile]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    cache = Path(os.environ.get("GPUDRA_TEST_CACHE") or Path.home() / ".cache" / "gpudra-tests")
    cache.mkdir(parents=True, exist_ok=True)
    return cache / f"controlplane-{release.name}-{digest.hexdigest()[:16]}"


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise Unavailable("Go is not installed (the control plane is built from the Go module proxy)")
    return go


def all_binaries(say: progress.Say = progress.to_stderr) -> list[Path]:
    """Every release's binary (releases.RELEASES), built where the cache has none."""
    from tests.controlplane.releases import RELEASES

    return [binary(release, say) for release in RELEASES]


def _ldflags(release: Release) -> str:
    # The version packages read these at run time: /version, the components' --version and
    # kubectl's client version would otherwise say v0.0.0-master.
    version = kubernetes_version(release)
    major, minor = version.lstrip("v").split(".")[:2]
    flags = ["-s", "-w"]
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {package}.gitVersion={version}", f"-X {package}.gitMajor={major}",
                  f"-X {package}.gitMinor={minor}", f"-X {package}.gitTreeState=clean"]
    return " ".join(flags)


def _run(argv: list[str], cwd: Path | None = None) -> str:
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise Unavailable(f"{' '.join(argv[:2])} failed: {result.stderr.strip()[-2000:]}")
    return result.stdout


def build_command(argv: list[str], module: str, name: str,
                  make: Callable[[], Path | list[Path]]) -> int:
    """`python -m <module> build`: build (or find cached) `name` with `make`, print the path(s),
    and say on stderr how long it took; exit 1 with the reason when it cannot be built."""
    if argv != ["build"]:
        print(f"usage: python -m {module} build", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        made = make()
    except Unavailable as error:
        print(f"{name}: {error}", file=sys.stderr)
        return 1
    for path in made if isinstance(made, list) else [made]:
        print(path)
    print(f"{name}: ready in {time.monotonic() - started:.0f}s", file=sys.stderr)
    return 0
