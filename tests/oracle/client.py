"""Build the Go oracle (tests/oracle/*.go) once per machine and talk to it.

Builds are cached outside the repository, keyed by a hash of the Go sources, the Go version
and the release: ``$GPUDRA_ORACLE_CACHE``, else ``$XDG_CACHE_HOME/gpudra-oracle``, else
``~/.cache/gpudra-oracle``. Go's own module and build caches make a rebuild after a source
change take seconds; the first build on a machine downloads the k8s.io modules.

Without Go the oracle tests skip with the reason on a developer machine and fail in CI (the
environment variable ``CI`` is set to anything but ``false``/``0``, or ``GPUDRA_REQUIRE_GO=1``,
which .ci/run sets).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpudra.sources.documents import split_documents
from tests.controlplane import progress

SOURCES = Path(__file__).resolve().parent
# release -> (go build flags): go.mod pins k8s.io v0.37.2, go.132.mod v0.32.13.
RELEASES: dict[str, tuple[str, ...]] = {
    "1.37": (),
    "1.32": ("-modfile=go.132.mod", "-tags", "k8s132"),
}
BUILD_TIMEOUT = 1800  # seconds: a cold module download plus build on 2 cores
ESTIMATE = "a few minutes cold: the k8s.io modules from the Go module proxy, then the build"


class OracleError(RuntimeError):
    """The oracle refused a request (a test bug: a misspelt field, an unknown op) or died."""


class GoMissing(RuntimeError):
    """No usable `go` on PATH."""


def go_required() -> bool:
    """Whether a missing Go must fail the run (CI) instead of skipping (a developer machine)."""
    if os.environ.get("GPUDRA_REQUIRE_GO", "") not in ("", "0"):
        return True
    return os.environ.get("CI", "").strip().lower() not in ("", "false", "0")


def cache_dir() -> Path:
    explicit = os.environ.get("GPUDRA_ORACLE_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpudra-oracle"


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise GoMissing("Go is not on PATH: the oracle tests build tests/oracle with Go 1.26+ "
                        "(and fetch k8s.io modules through the Go module proxy)")
    return go


def _source_hash(go: str, release: str) -> str:
    digest = hashlib.sha256()
    version = subprocess.run([go, "version"], capture_output=True, text=True, check=True)
    digest.update(version.stdout.encode())
    digest.update(repr(RELEASES[release]).encode())
    for path in sorted(SOURCES.iterdir()):
        if path.suffix == ".go" or path.name.startswith("go."):
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cached_path(release: str = "1.37") -> Path:
    """Where the oracle binary of `release` is cached for these sources and this Go."""
    return cache_dir() / f"oracle-{release}-{_source_hash(_go(), release)}"


def build(release: str = "1.37", say: progress.Say = progress.to_stderr) -> Path:
    """The oracle binary for `release`, built if this source hash has none yet; `say`
    hears what is built and how far it is."""
    go = _go()
    target = cached_path(release)
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # Build to a temporary name, then rename: two test runs building at once both succeed.
    fd, partial = tempfile.mkstemp(prefix=target.name + ".", dir=target.parent)
    os.close(fd)
    try:
        progress.run_build([go, "build", "-v", *RELEASES[release], "-o", partial, "."],
                           f"the Kubernetes {release} oracle (tests/oracle) into {target}",
                           ESTIMATE, say, cwd=SOURCES, timeout=BUILD_TIMEOUT)
        os.replace(partial, target)
    except progress.BuildFailed as error:
        raise OracleError(f"building the {release} oracle failed:\n{error}") from None
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return target


@dataclass(frozen=True)
class Decoded:
    """What the API server's strict decoding says about one document."""

    api_version: str | None
    kind: str | None
    registered: bool  # False: no typed API for it in this release (a CRD): nothing checked
    strict: tuple[str, ...]  # 'unknown field "spec.x"', 'duplicate field "y"'
    fatal: str | None  # the object cannot be decoded at all (wrong type of a value)
    message: str | None  # the API server's whole message when it refuses the object

    @property
    def errors(self) -> tuple[str, ...]:
        return self.strict + ((self.fatal,) if self.fatal else ())


class Oracle:
    """One long-lived oracle process; requests are answered in order."""

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self._stderr = tempfile.TemporaryFile()
        self._process = subprocess.Popen([str(binary)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self._stderr,
                                         text=True, encoding="utf-8", bufsize=1)
        self.version = self.request(op="version")
        self.release: str = self.version["release"]
        self.kubernetes: str = self.version["kubernetes"]

    def request(self, **fields: Any) -> dict[str, Any]:
        assert self._process.stdin is not None and self._process.stdout is not None
        try:
            self._process.stdin.write(json.dumps(fields, default=str) + "\n")
            self._process.stdin.flush()
            line = self._process.stdout.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            self._stderr.seek(0)
            raise OracleError("the oracle exited: "
                              + self._stderr.read().decode("utf-8", "replace")[-4000:])
        answer = json.loads(line)
        if not answer.get("ok"):
            raise OracleError(answer.get("error", line))
        return answer

    def decode(self, document: str | Mapping[str, Any]) -> Decoded:
        """Strict-decode one document: its text (YAML or JSON, so that duplicate keys are
        seen), or an already loaded object (sent as JSON)."""
        text = document if isinstance(document, str) else json.dumps(document, default=str)
        answer = self.request(op="decode", doc=text)
        return Decoded(answer.get("apiVersion"), answer.get("kind"), answer["registered"],
                       tuple(answer["strict"]), answer.get("fatal"), answer.get("message"))

    def cel(self, expression: str, devices: Sequence[Mapping[str, Any]] = (),
            features: Mapping[str, bool] | None = None) -> dict[str, Any]:
        """``validation`` (the API server's verdict on a new selector: ``error``, ``cost``),
        ``compileError`` (the allocator's compile) and one ``{match, error}`` per device."""
        return self.request(op="cel", expression=expression, devices=list(devices),
                            features=dict(features or {}))

    def allocate(self, node: Mapping[str, Any], classes: Iterable[Mapping[str, Any]],
                 slices: Iterable[Mapping[str, Any]], claims: Iterable[Mapping[str, Any]],
                 allocated: Iterable[Mapping[str, Any]] = (),
                 features: Mapping[str, bool] | None = None) -> dict[str, Any]:
        """One Allocate call for a pod's claims on `node`: ``results`` (an AllocationResult
        per claim) or None, ``error`` (a fatal allocator error) and ``nodeError``."""
        return self.request(op="allocate", node=node, classes=list(classes),
                            slices=list(slices), claims=list(claims),
                            allocated=list(allocated), features=dict(features or {}))

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._stderr.close()


def documents(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The objects of a YAML or JSON file's text, each with its own text (what a strict decoder
    must see to find duplicate keys). Documents that do not parse, or are not objects with a
    kind (Helm values, templates), are left out: they are no API request."""
    stripped = text.lstrip("\ufeff")
    chunks = [stripped] if stripped.lstrip().startswith(("{", "[")) else \
        [chunk.text for chunk in split_documents(stripped)]
    out = []
    for chunk in chunks:
        try:
            data = yaml.safe_load(chunk)
        except yaml.YAMLError:
            continue
        if isinstance(data, dict) and data.get("kind") and data.get("apiVersion"):
            out.append((chunk, data))
    return out
