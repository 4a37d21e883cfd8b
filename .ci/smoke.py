"""Smoke stage: what a plain `pip install .` (no extras) gives a user runs every subcommand.

    python3 -m venv .venv-plain && .venv-plain/bin/pip install .
    .venv-plain/bin/python .ci/smoke.py

Run with the plain install's interpreter, from anywhere (paths are relative to this checkout).
Every subcommand of the installed `gpudra` runs on a copy of examples/, on a converted copy of
it, on stdin, and against the fake API server (tests/fakeapi, from this checkout, serving
tests/fakeapi/testdata/examples-cluster.yaml). The stage fails (exit 1) when a command exits
3 (an input or the cluster could not be read: none of these inputs is unreadable), prints
"internal error" or a traceback, or when a subcommand that `gpudra --help` lists has no run
here. Standard library and the install's own dependencies only.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
STATE = CHECKOUT / "tests" / "fakeapi" / "testdata" / "examples-cluster.yaml"
INPUT_ERROR = 3
FAILURE_MARKS = ("internal error", "Traceback (most recent call last)")


def runs(work: Path) -> list[tuple[list[str], Path | None]]:
    """(arguments, stdin file) of every run, in order (convert writes the copy the later runs
    read), with paths relative to `work`, where they run. Exit codes 0, 1 (findings) and 4
    (blocked workloads left) are all results here."""
    ex, conv, out, host, inventory = "examples", "converted", "exported", "host", "nodes.yaml"
    job = work / "examples" / "apps" / "training-job.yaml"
    rendered = work / "examples" / "apps" / "inference.yaml"
    audit = [["audit", ex, "-o", fmt] for fmt in
             ("table", "json", "yaml", "sarif", "junit", "markdown", "github", "html")]
    return [(["--version"], None), (["--help"], None), *((a, None) for a in audit),
            (["audit", "-"], rendered),
            (["convert", ex, "--diff"], None), (["convert", ex, "--check"], None),
            (["convert", ex, "--diff", "-o", "json"], None), (["convert", "-"], job),
            (["convert", conv], None), (["convert", conv, "--check"], None),
            (["audit", conv], None),
            # two reports merged: jsonschema comes with the plain install
            (["audit", ex, "-o", "json=examples.json"], None),
            (["audit", conv, "-o", "json=converted.json"], None),
            (["report", "merge", "examples.json", "converted.json", "-o", "html=fleet.html",
              "-o", "markdown"], None),
            (["preflight", "--manifests", ex], None), (["preflight", "--manifests", conv], None),
            (["preflight", "--manifests", conv, "--require-migrated", "-o", "json"], None),
            (["preflight", "--manifests", ex, "-o", "html"], None),
            (["preflight", "--node", "--host-root", host], None),
            (["plan", ex, "--inventory", inventory], None),
            (["plan", conv, "--inventory", inventory, "-o", "json"], None),
            (["checks"], None), (["checks", "-o", "json"], None),
            (["rules"], None), (["rules", "-o", "markdown"], None),
            (["explain", "GPU101"], None), (["rbac"], None),
            (["controllers"], None), (["controllers", "-o", "json"], None),
            (["guard"], None), (["guard", "--action", "deny", "--output-dir", "guard"], None),
            # the cluster of the current context: the fake API server
            (["audit"], None), (["audit", "-o", "json"], None), (["preflight"], None),
            (["plan"], None), (["plan", conv], None),
            (["convert", "--from-cluster", "--output-dir", out], None),
            (["verify"], None), (["verify", "-o", "json"], None),
            (["cutover"], None), (["cutover", "-o", "json", "--output-dir", "waves"], None)]


def subcommands() -> set[str]:
    """What the installed gpudra offers (not this checkout's copy: that is checked too)."""
    import gpudra
    from gpudra.cli import app

    if Path(gpudra.__file__).resolve().is_relative_to(CHECKOUT / "gpudra"):
        raise SystemExit("smoke: gpudra is imported from the checkout, not from the install")
    return ({c.name or c.callback.__name__ for c in app.registered_commands}
            | {g.name or g.typer_instance.info.name for g in app.registered_groups})


def prepare(work: Path) -> None:
    shutil.copytree(CHECKOUT / "examples", work / "examples")
    shutil.copytree(CHECKOUT / "examples", work / "converted")
    host = work / "host"
    (host / "etc" / "containerd").mkdir(parents=True)
    (host / "etc" / "containerd" / "config.toml").write_text(
        'version = 3\n[plugins."io.containerd.cri.v1.runtime"]\n  enable_cdi = true\n')
    import yaml  # a gpudra dependency

    state = yaml.safe_load(STATE.read_text(encoding="utf-8"))
    nodes = [o for o in state["objects"] if o["kind"] == "Node"]
    (work / "nodes.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List",
                                                     "items": nodes}))


def start_cluster(work: Path) -> subprocess.Popen:
    """The fake API server as a process; the kubeconfig it writes becomes $KUBECONFIG."""
    server = subprocess.Popen([sys.executable, "-m", "tests.fakeapi", "--state", str(STATE),
                               "--kubeconfig-out", str(work / "kubeconfig")],
                              cwd=CHECKOUT, stdout=subprocess.PIPE, text=True)
    if not server.stdout.readline().startswith(("http://", "https://")):
        raise SystemExit("smoke: the fake API server did not start")
    return server


def main() -> int:
    offered = subcommands()
    gpudra = shutil.which("gpudra", path=str(Path(sys.executable).parent))
    if gpudra is None:
        raise SystemExit(f"smoke: no gpudra next to {sys.executable}")
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="gpudra-smoke-") as tmp:
        work = Path(tmp)
        prepare(work)
        server = start_cluster(work)
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(work), "NO_COLOR": "1",
               "KUBECONFIG": str(work / "kubeconfig"), "LC_ALL": "C.UTF-8"}
        covered: set[str] = set()
        try:
            for args, stdin in runs(work):
                covered.update(a for a in args[:1] if a in offered)
                with open(stdin or os.devnull, "rb") as feed:
                    done = subprocess.run([gpudra, *args], stdin=feed, capture_output=True,
                                          env=env, cwd=work, timeout=300)
                output = (done.stdout + done.stderr).decode("utf-8", "replace")
                shown = " ".join(["gpudra", *args] + (["<", stdin.name] if stdin else []))
                print(f"smoke: exit {done.returncode}  {shown}")
                mark = next((m for m in FAILURE_MARKS if m in output), None)
                if done.returncode == INPUT_ERROR or mark:
                    failures.append(f"{shown}: exit {done.returncode}"
                                    + (f", {mark!r}" if mark else "") + "\n"
                                    + done.stderr.decode("utf-8", "replace")[-2000:])
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
    for missing in sorted(offered - covered):
        failures.append(f"gpudra {missing}: no smoke run (add one to .ci/smoke.py)")
    for failure in failures:
        print(f"smoke: FAILED {failure}", file=sys.stderr)
    print(f"smoke: {len(runs(Path('.')))} runs, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
