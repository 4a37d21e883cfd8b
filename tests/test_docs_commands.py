"""The docs are executable: every gpudra command in README.md and docs/*.md runs, as written.

Extraction (so that a command added to any page is picked up without touching this test):

* Fenced blocks whose info string starts with `sh`, `shell`, `bash` or `console`: each line
  is a command (a line ending in `\\` continues on the next); blank and `#` lines are not.
  In ```yaml blocks, the value of each `run:` key (GitHub Actions steps) is a command.
* A command runs when it invokes gpudra: a pipeline element starting with `gpudra` or
  `kubectl gpudra`. Steps before it in an `&&` chain that do not (creating a venv,
  `pip install`: the test environment is that install) are dropped; a line that never invokes
  gpudra (`git`, `kubectl get`) is shown to readers, not run.
* A marker, an HTML comment on the line right before the fence (invisible on the rendered
  page), changes how a block runs: `<!-- doctest: cluster -->` for commands that need a
  cluster (they run against the fake API server, tests/fakeapi, serving
  tests/fakeapi/testdata/examples-cluster.yaml as the current context, with a `prod` context
  too); `<!-- doctest: exit=N -->` when the page says which code every command of the block
  exits with; `<!-- doctest: skip REASON -->` for a block that cannot run here. Words combine:
  `<!-- doctest: cluster exit=1 -->`. Without `cluster`, KUBECONFIG names no file, so a
  command that needs a cluster fails here until its block is marked.
* Expected: exit `N` when marked, else a result code (0, 1 or 4: never 2, a usage error, or 3,
  an input that could not be read), and never "internal error" or a traceback.

Each page's commands run in order in a sandbox of their own (so `convert` then `audit` works
as the page tells it): the working directory holds copies of examples/ as `examples/`,
`manifests/`, `k8s/` and `k8s/team-a/`, the example chart as `chart/` and `charts/llm-server/`,
`job.yaml` (examples/apps/training-job.yaml), and `nodes.yaml` / `slices.yaml` (the fake
cluster's Nodes and ResourceSlices). On the PATH, `kubectl` and `helm` are stand-ins:
`kubectl gpudra ARGS` runs gpudra, `kubectl apply -f -` accepts what parses as Kubernetes
objects, and `helm template NAME CHART` prints the example chart as helm renders it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.fakeapi import CONTEXT, FakeCluster

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
STATE = ROOT / "tests" / "fakeapi" / "testdata" / "examples-cluster.yaml"
RESULT_CODES = (0, 1, 4)
MARKER = re.compile(r"^<!--\s*doctest:(?P<words>.*?)-->\s*$")
FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^`\n]*)$")
SHELL_INFO = ("sh", "shell", "bash", "console")
RUN_STEP = re.compile(r"^\s*(?:-\s+)?run:\s*(?P<command>\S.*)$")
FAILURE_MARKS = ("internal error", "Traceback (most recent call last)")


@dataclass(frozen=True)
class DocCommand:
    page: str
    line: int
    text: str           # as the page shows it
    command: str        # what runs
    cluster: bool = False
    exit: int | None = None
    skip: str | None = None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _marker(lines: list[str], fence_index: int) -> dict[str, str]:
    above = fence_index - 1
    while above >= 0 and not lines[above].strip():
        above -= 1
    found = MARKER.match(lines[above].strip()) if above >= 0 else None
    if found is None:
        return {}
    words = found.group("words").split()
    out: dict[str, str] = {}
    for i, word in enumerate(words):
        if word == "skip":
            out["skip"] = " ".join(words[i + 1:]) or "marked skip"
            break
        key, _, value = word.partition("=")
        if key not in ("cluster", "exit"):
            raise ValueError(f"unknown doctest marker word {word!r} above line {fence_index + 1}")
        out[key] = value
    return out


def _invokes_gpudra(segment: str) -> bool:
    for element in segment.split("|"):
        try:
            words = shlex.split(element)
        except ValueError:
            words = element.split()
        words = [w for w in words if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)]
        if words[:1] == ["gpudra"] or words[:2] == ["kubectl", "gpudra"]:
            return True
    return False


def runnable(line: str) -> str | None:
    """The part of a command line that runs: from its first step that invokes gpudra."""
    steps = [s.strip() for s in line.split("&&")]
    for index, step in enumerate(steps):
        if _invokes_gpudra(step):
            return " && ".join(steps[index:])
    return None


def _without_comment(line: str) -> str:
    """The line up to an unquoted `#` that starts a word (a shell comment)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def extract(page: Path, root: Path = ROOT) -> list[DocCommand]:
    """Every command line of one page (the rules are in this module's docstring)."""
    name = page.relative_to(root).as_posix()
    lines = page.read_text(encoding="utf-8").splitlines()
    out: list[DocCommand] = []
    index = 0
    while index < len(lines):
        fence = FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        info = fence.group("info").strip().split()
        language = info[0] if info else ""
        marker = _marker(lines, index)
        body_start = index + 1
        index += 1
        while index < len(lines) and not lines[index].strip().startswith("```"):
            index += 1
        body = lines[body_start:index]
        index += 1
        pending = ""
        for offset, raw in enumerate(body):
            number = body_start + offset + 1
            if language in SHELL_INFO:
                text = _without_comment(raw)
                if text.endswith("\\"):
                    pending += text[:-1].strip() + " "
                    continue
                text, pending = (pending + text.strip()).strip(), ""
            elif language in ("yaml", "yml"):
                step = RUN_STEP.match(raw)
                text = _without_comment(step.group("command")) if step else ""
            else:
                break
            command = runnable(text) if text else None
            if command is None:
                continue
            out.append(DocCommand(name, number, text, command, "cluster" in marker,
                                  int(marker["exit"]) if marker.get("exit") else None,
                                  marker.get("skip")))
    return out


COMMANDS = [c for page in PAGES for c in extract(page)]

# `helm template NAME CHART` for the example chart, as helm 3 renders it.
RENDERED_CHART = """---
# Source: llm-server/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {release}-llm-server
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: server
        image: "ghcr.io/example/llm-server:1.4"
        resources:
          limits:
            nvidia.com/gpu: 1
"""

STAND_INS = {
    "kubectl": f"""#!{sys.executable}
import os, sys, yaml
args = sys.argv[1:]
if args[:1] == ["gpudra"]:
    os.execvp("gpudra", ["gpudra", *args[1:]])
if args[:3] == ["apply", "-f", "-"]:
    docs = [d for d in yaml.safe_load_all(sys.stdin) if d is not None]
    ok = docs and all(isinstance(d, dict) and d.get("apiVersion") and d.get("kind")
                      and (d.get("metadata") or {{}}).get("name") for d in docs)
    for d in docs if ok else []:
        print(f"{{d['kind'].lower()}}/{{d['metadata']['name']}} created (stand-in)")
    sys.exit(0 if ok else 1)
sys.exit(f"kubectl stand-in: not modelled: {{args}}")
""",
    "helm": f"""#!{sys.executable}
import os, sys
args = sys.argv[1:]
if len(args) == 3 and args[0] == "template" and os.path.isfile(os.path.join(args[2], "Chart.yaml")):
    sys.stdout.write({RENDERED_CHART!r}.format(release=args[1]))
    sys.exit(0)
sys.exit(f"helm stand-in: renders only `helm template NAME CHART` of the example chart: {{args}}")
""",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    """The fake API server, started once, with contexts `prod`, `prod-eu` and `prod-us` that
    are the fake one too (docs/fleet.md audits several at once)."""
    kubeconfig = tmp_path_factory.mktemp("kube") / "config"
    with FakeCluster(STATE, kubeconfig=kubeconfig) as fake:
        config = yaml.safe_load(kubeconfig.read_text())
        current = next(c for c in config["contexts"] if c["name"] == CONTEXT)
        config["contexts"] += [{**current, "name": name} for name in ("prod", "prod-eu",
                                                                      "prod-us")]
        kubeconfig.write_text(yaml.safe_dump(config))
        yield fake


_SANDBOXES: dict[str, Path] = {}


def sandbox(page: str, factory: pytest.TempPathFactory) -> Path:
    """The page's working directory, made on its first command (see the module docstring)."""
    if page in _SANDBOXES:
        return _SANDBOXES[page]
    work = factory.mktemp(re.sub(r"\W", "-", page))
    examples = ROOT / "examples"
    for name in ("examples", "manifests", "k8s", "k8s/team-a"):
        shutil.copytree(examples, work / name, dirs_exist_ok=True)
    for name in ("chart", "charts/llm-server"):
        shutil.copytree(examples / "charts" / "llm-server", work / name, dirs_exist_ok=True)
    shutil.copy(examples / "apps" / "training-job.yaml", work / "job.yaml")
    objects = yaml.safe_load(STATE.read_text())["objects"]
    for name, kind in (("nodes.yaml", "Node"), ("slices.yaml", "ResourceSlice")):
        items = [o for o in objects if o["kind"] == kind]
        (work / name).write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List",
                                                 "items": items}))
    bin_dir = work / ".bin"
    bin_dir.mkdir()
    for name, text in STAND_INS.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    _SANDBOXES[page] = work
    return work


@pytest.mark.parametrize("doc", COMMANDS, ids=[c.id for c in COMMANDS])
def test_documented_command_runs(doc: DocCommand, cluster: FakeCluster,
                                 tmp_path_factory: pytest.TempPathFactory) -> None:
    if doc.skip:
        pytest.skip(f"{doc.id}: {doc.skip}")
    work = sandbox(doc.page, tmp_path_factory)
    env = {"PATH": os.pathsep.join([str(work / ".bin"), str(Path(sys.executable).parent),
                                    os.environ.get("PATH", "")]),
           "HOME": str(work), "NO_COLOR": "1", "LC_ALL": "C.UTF-8",
           "KUBECONFIG": str(cluster.kubeconfig) if doc.cluster else str(work / "no-kubeconfig"),
           "GITHUB_STEP_SUMMARY": str(work / "step-summary.md")}
    done = subprocess.run(["bash", "-o", "pipefail", "-c", doc.command], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    where = f"{doc.id}: `{doc.text}` exited {done.returncode}\n{done.stderr[-3000:]}"
    assert not any(mark in output for mark in FAILURE_MARKS), where
    if doc.exit is not None:
        assert done.returncode == doc.exit, where
    else:
        assert done.returncode in RESULT_CODES, where + (
            "\n(a command that needs a cluster: mark its block <!-- doctest: cluster -->)"
            if not doc.cluster else "")


# -- the extraction itself ---------------------------------------------------------------------

def test_extraction_rules(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("\n".join([
        "```sh",
        "python3 -m venv .venv && pip install . && gpudra audit examples/  # the first run",
        "git switch -c x",
        "gpudra convert k8s/ \\",
        "  --diff",
        "cat job.yaml | gpudra convert - > out.yaml",
        "# a comment",
        "```",
        "",
        "<!-- doctest: cluster exit=1 -->",
        "```sh",
        "gpudra audit   # 'quoted # text'",
        "```",
        "```yaml",
        "- run: pip install \"gpudra @ git+https://example.invalid/gpudra\"",
        "- run: gpudra audit k8s/ -o sarif > gpudra.sarif || true",
        "```",
        "<!-- doctest: skip needs a node -->",
        "```sh",
        "gpudra preflight --node --host-root /host",
        "```",
    ]) + "\n")
    found = extract(page, tmp_path)
    assert [(c.line, c.command, c.cluster, c.exit, c.skip) for c in found] == [
        (2, "gpudra audit examples/", False, None, None),
        (5, "gpudra convert k8s/ --diff", False, None, None),
        (6, "cat job.yaml | gpudra convert - > out.yaml", False, None, None),
        (12, "gpudra audit", True, 1, None),
        (16, "gpudra audit k8s/ -o sarif > gpudra.sarif || true", False, None, None),
        (20, "gpudra preflight --node --host-root /host", False, None, "needs a node"),
    ]


def test_every_page_with_a_gpudra_command_is_run() -> None:
    """The extraction finds the commands readers see: a page whose sh blocks show gpudra
    commands contributes them (guards against a rule that silently matches nothing)."""
    pages = {c.page for c in COMMANDS}
    for page in PAGES:
        shown = re.search(r"^```sh\n(?:[^`].*\n)*?gpudra ", page.read_text(), re.MULTILINE)
        if shown:
            assert page.relative_to(ROOT).as_posix() in pages
    assert len(COMMANDS) >= 40


# -- install lines (no release is on a package index yet) ---------------------------------------

PIP_INSTALL = re.compile(r"pip install (?P<args>[^\n`|&;]+)")
INSTALLABLE = re.compile(r"""^(?:-[eq] )*(?:['"]?\.(?:/\S*)?(?:\[\w+(?:,\w+)*\])?['"]?"""
                         r"""|"gpudra @ git\+https://github\.com/gpudra/gpudra(?:@\S+)?"|"""
                         r"""kubernetes-validate\S*|--no-cache-dir /src)$""")


def test_install_lines_work_from_this_repository() -> None:
    """Every `pip install` in the docs installs from a checkout (`.`, `'.[validate]'`), the
    repository's VCS URL, or a package the index has (kubernetes-validate); never `gpudra`
    or `gpudra[extra]` from an index, which has no release."""
    places = [*PAGES, ROOT / "deploy" / "Dockerfile", ROOT / "examples" / "README.md"]
    seen = []
    for path in places:
        for match in PIP_INSTALL.finditer(path.read_text(encoding="utf-8")):
            args = match.group("args").split("#")[0].split(" (")[0].strip().rstrip(")")
            seen.append(args)
            assert INSTALLABLE.match(args), f"{path.name}: pip install {args}"
    assert len(seen) >= 5
