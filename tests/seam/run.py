"""Run one seam case in-process and capture everything it shows and writes.

The CLI runs through typer's CliRunner with stdout and stderr kept apart, as tests/
test_cli_outputs.py does; argv goes through the same reordering `gpudra`'s entry point applies
(cluster options before the command). Each run gets a fresh working directory (its cwd), so the
files it writes are the files that are new or changed there afterwards."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml
from typer.testing import CliRunner

from tests.seam.cases import CHECKOUT, Case
from tests.seam.masks import apply, masks_for

# Outputs longer than this are stored as their hash (the record stays a few MB); shorter ones
# as text, so that a difference shows as a diff.
INLINE_LIMIT = 24_000
PIPE_HELP_WIDTH = 78
STATES = CHECKOUT / "tests" / "fakeapi" / "testdata"


@dataclass(frozen=True)
class Clusters:
    """The running fake clusters' kubeconfigs, by state file name, and their temp folders."""
    kubeconfigs: Mapping[str, Path]

    def folders(self) -> tuple[str, ...]:
        return tuple(str(k.parent) for k in self.kubeconfigs.values())


@contextmanager
def fake_clusters(states: set[str]) -> Iterator[Clusters]:
    from tests.fakeapi import FakeCluster

    running = [FakeCluster(STATES / state).start() for state in sorted(states)]
    try:
        yield Clusters({state: c.kubeconfig for state, c in zip(sorted(states), running)})
    finally:
        for cluster in running:
            cluster.stop()


def _host(work: Path) -> None:
    config = work / "host" / "etc" / "containerd" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('version = 3\n[plugins."io.containerd.cri.v1.runtime"]\n'
                      '  enable_cdi = true\n')


def _nodes(work: Path) -> None:
    state = yaml.safe_load((STATES / "examples-cluster.yaml").read_text(encoding="utf-8"))
    nodes = [o for o in state["objects"] if o["kind"] == "Node"]
    (work / "nodes.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List",
                                                     "items": nodes}))


def _reports(work: Path) -> None:
    """Two audit reports to merge: the examples before and after conversion (made by the
    CLI under test, so a change to audit's JSON shows in both records)."""
    shutil.copytree(CHECKOUT / "examples", work / "ex")
    _invoke(["convert", "ex", "--output-dir", "conv", "-q"], None, {})
    _invoke(["audit", "ex", "-o", "json=a.json"], None, {})
    _invoke(["audit", "conv", "-o", "json=b.json"], None, {})
    shutil.rmtree(work / "ex")
    shutil.rmtree(work / "conv")


def _fleet(work: Path) -> None:
    from tests.verify.generated_fleet import varied_fleet

    (work / "fleet.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                                 "items": varied_fleet(40, seed=3)}))


FIXTURES: Mapping[str, Callable[[Path], None]] = {
    "host": _host, "nodes": _nodes, "reports": _reports, "fleet": _fleet}


def _invoke(argv: list[str], stdin: bytes | None, env: Mapping[str, str | None]):
    from gpudra.cli import app
    from gpudra.cli.kubectl_args import global_options_after_command

    # click wraps --help to min(terminal, 80) - 2 columns: 78 in a real process on a pipe
    # (no terminal), but CliRunner forces 80; the context's terminal_width gives the pipe's.
    return CliRunner().invoke(app, global_options_after_command(argv), input=stdin,
                              env=dict(env), catch_exceptions=True,
                              terminal_width=PIPE_HELP_WIDTH)


@dataclass(frozen=True)
class _Ran:
    exit_code: int
    stdout_bytes: bytes
    stderr_bytes: bytes
    exception: BaseException | None = None


def _process(argv: list[str], stdin: bytes | None, env: Mapping[str, str | None]) -> _Ran:
    """The installed `gpudra ARGV` as a real process (its console script, so that usage
    lines name `gpudra` as CliRunner does), for the check that in-process runs print the
    same bytes (test_seam.py)."""
    import subprocess
    import sys

    script = Path(sys.executable).with_name("gpudra")

    full = {**os.environ, "PYTHONPATH": str(CHECKOUT)}
    for name, value in env.items():
        if value is None:
            full.pop(name, None)
        else:
            full[name] = value
    done = subprocess.run([str(script), *argv], input=stdin or b"",
                          capture_output=True, env=full, timeout=600)
    return _Ran(done.returncode, done.stdout, done.stderr)


def _snapshot(work: Path) -> dict[str, bytes]:
    return {str(p.relative_to(work)): p.read_bytes()
            for p in sorted(work.rglob("*")) if p.is_file()}


def _stored(data: bytes, masks) -> str | dict[str, object]:
    """Masked text when it is UTF-8 and short, else its hash and size."""
    try:
        text = apply(data.decode("utf-8"), masks)
    except UnicodeDecodeError:
        return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    if len(text) <= INLINE_LIMIT:
        return text
    encoded = text.encode("utf-8")
    return {"sha256": hashlib.sha256(encoded).hexdigest(), "bytes": len(encoded)}


def run_case(case: Case, clusters: Clusters | None, *, process: bool = False
             ) -> dict[str, object]:
    """The case's observable behaviour, masked: argv, exit code, stdout, stderr, written
    files (path -> text or hash; None for a file it deleted). `process`: run `python -m
    gpudra` in a subprocess instead of in this process."""
    with tempfile.TemporaryDirectory(prefix="gpudra-seam-") as tmp:
        root = Path(tmp).resolve()
        work, cache = root / "work", root / "cache"
        work.mkdir()
        kubeconfig = (clusters.kubeconfigs[case.cluster] if case.cluster and clusters
                      else root / "no-kubeconfig")
        env = {"NO_COLOR": "1", "COLUMNS": None, "LINES": None, "GPUDRA_DEBUG": None,
               "KUBECONFIG": str(kubeconfig), "HOME": str(root), "GPUDRA_CACHE_DIR": str(cache),
               "TERM": "dumb"}
        masks = masks_for(str(work), (str(root), *(clusters.folders() if clusters else ())))
        before_cwd = os.getcwd()
        os.chdir(work)
        try:
            for dest, source in case.trees:
                shutil.copytree(CHECKOUT / source, work / dest)
            for name in case.fixtures:
                FIXTURES[name](work)
            before = _snapshot(work)
            stdin = (work / case.stdin).read_bytes() if case.stdin else None
            result = (_process if process else _invoke)(list(case.argv), stdin, env)
            after = _snapshot(work)
        finally:
            os.chdir(before_cwd)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise RuntimeError(f"seam case {case.name} raised {result.exception!r}") \
            from result.exception
    written = {path: _stored(data, masks) for path, data in after.items()
               if before.get(path) != data}
    written.update({path: None for path in before.keys() - after.keys()})
    return {"argv": list(case.argv), "stdin": case.stdin, "cluster": case.cluster,
            "exit": result.exit_code, "stdout": _stored(result.stdout_bytes, masks),
            "stderr": _stored(result.stderr_bytes, masks),
            "files": dict(sorted(written.items()))}
