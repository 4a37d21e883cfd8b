"""Output that teaches the next step and says each thing once (issue: the first hour).

The audit's table ends with what to run next and spells out DRA and CDI; plan names the JSON
only where it says more; preflight's GitHub annotations point at files; convert on stdin says
where its result went; the top-level help shows every command's description whole.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

from typer.testing import CliRunner

from gpudra.cli import app

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(*args: str, input: str | None = None, columns: str = ""):
    return CliRunner().invoke(app, list(args), input=input, env={"COLUMNS": columns})


def test_audit_table_ends_with_the_next_steps() -> None:
    out = run("audit", str(EXAMPLES)).stdout
    steps = out.split("\nNext\n", 1)[1].splitlines()
    assert [line.split("#")[0].split() for line in steps] == [
        ["gpudra", "explain", "GPU601"], ["gpudra", "convert", "--diff", str(EXAMPLES)],
        ["gpudra", "preflight"]]


def test_a_clean_tree_has_nothing_next(tmp_path: Path) -> None:
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    assert "\nNext\n" not in run("audit", str(tmp_path)).stdout


def test_audit_spells_out_dra_and_cdi_and_says_why_info_is_listed() -> None:
    out = run("audit", str(EXAMPLES)).stdout
    assert out.count("Dynamic Resource Allocation") == 1
    assert out.count("Container Device Interface") == 1
    assert "info findings are not problems" in out


def test_plan_names_the_json_only_where_it_says_more() -> None:
    from gpudra.plan.run import _remedy

    def workload(kind, reason, *rejections):
        return SimpleNamespace(failure_kind=kind, reason=reason,
                               requests=[SimpleNamespace(rejections=rejections)])

    competing = workload("competition", "devices taken by pods placed before it",
                         "class gpu.nvidia.com: 8 of 8 devices match")
    assert "-o json" not in _remedy(competing) and "add matching devices" in _remedy(competing)
    said = workload("blocked", "no device matches (class mig.nvidia.com: 0 of 10 devices match)",
                    "class mig.nvidia.com: 0 of 10 devices match")
    assert "-o json" not in _remedy(said)
    selector = workload(None, "no device matches",
                        'device.attributes["gpu.nvidia.com"].productName == "X": 0 of 8 match')
    assert "-o json shows which selector term" in _remedy(selector)


def test_preflight_github_annotations_carry_the_file_and_line() -> None:
    out = run("preflight", "--manifests", str(EXAMPLES), "-o", "github").stdout
    annotations = [line for line in out.splitlines() if line.startswith("::")]
    assert annotations and all(re.match(r"::\w+ file=[^,]+\.yaml,line=\d+,title=MANIFEST00\d ",
                                        line) for line in annotations), annotations
    lines = {int(re.search(r"line=(\d+)", a).group(1)) for a in annotations if "MANIFEST003" in a}
    assert len(lines) >= 4


def test_convert_on_stdin_says_where_the_result_went() -> None:
    job = (EXAMPLES / "apps" / "training-job.yaml").read_text()
    result = run("convert", "-", input=job)
    assert "would change" not in result.stderr and "file" not in result.stderr.splitlines()[-1]
    assert result.stderr.splitlines()[-1].startswith("stdin: 1 document parsed; converted on "
                                                     "stdout")
    clean = run("convert", "-", input="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    assert "unchanged, echoed on stdout" in clean.stderr


def test_top_level_help_shows_every_description_whole() -> None:
    out = run("--help", columns="80").stdout
    commands = out.split("Commands:", 1)[1]
    assert "..." not in commands
    from gpudra.cli import app as typer_app

    for command in typer_app.registered_commands:
        assert command.short_help and command.short_help in " ".join(commands.split())


def test_json_reports_are_untouched_by_the_table_only_additions() -> None:
    data = json.loads(run("audit", str(EXAMPLES), "-o", "json").stdout)
    # 5 workloads and the llm-server chart, which still renders nvidia.com/gpu (issue 13.13)
    assert "Next" not in json.dumps(data) and data["summary"]["gpu_workloads"] == 6
