"""What kubectl or kustomize would read, gpudra reads, or says it could not (issue 31, family 8):
no exit 0 with a GPU workload left unread."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from gpudra.audit.engine import AuditRequest, run_audit
from gpudra.report import SummaryFormat
from gpudra.cli.convert import ConvertShow, run_convert
from gpudra.convert.run import ConvertRequest
from gpudra.kustomize.resource_files import file_objects
from gpudra.sources.documents import NESTED_TOO_DEEPLY
from gpudra.sources.files import FileSource

JSON = ConvertShow(output=SummaryFormat.JSON)  # -o json

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [{"name": "c", "image": "cuda",
                                "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
POD_YAML = yaml.safe_dump(POD, sort_keys=False)


def nested(depth: int) -> dict:
    obj: dict = POD
    for _ in range(depth):
        obj = {"apiVersion": "v1", "kind": "List", "items": [obj]}
    return obj


def audit(*paths: Path | str):
    return run_audit(AuditRequest([str(p) for p in paths]))


def gpu_pods(report) -> list[tuple[str, str | None]]:
    return [(w.kind, w.name) for w in report.workloads]


def convert_json(*paths: Path) -> dict:
    out = io.StringIO()
    run_convert(ConvertRequest(paths=tuple(str(p) for p in paths)), JSON,
                stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


# --- Lists inside Lists ------------------------------------------------------------------------

@pytest.mark.parametrize("depth", [1, 2, 8, 40])
def test_a_pod_inside_nested_lists_is_read_as_the_pod(tmp_path: Path, depth: int) -> None:
    (tmp_path / "l.yaml").write_text(yaml.safe_dump(nested(depth)))
    report = audit(tmp_path)
    assert gpu_pods(report) == [("Pod", "p")]
    lines = [f.line for f in report.findings if f.rule == "GPU101"]
    assert lines and all(line > 2 * depth for line in lines)  # the pod's own line, deep down


def test_nested_lists_in_json_are_read_too(tmp_path: Path) -> None:
    (tmp_path / "l.json").write_text(json.dumps(nested(8), indent=1))
    assert gpu_pods(audit(tmp_path)) == [("Pod", "p")]


def test_convert_rewrites_a_pod_inside_nested_lists(tmp_path: Path) -> None:
    (tmp_path / "l.yaml").write_text(yaml.safe_dump(nested(8)))
    summary = convert_json(tmp_path)
    assert [w["strategy"] for w in summary["workloads"]] == ["rewrite"]
    docs = list(yaml.safe_load_all((tmp_path / "l.yaml").read_text()))
    assert '"limits"' not in json.dumps(docs[0]) and '"claims"' in json.dumps(docs[0])
    assert docs[1]["kind"] == "ResourceClaimTemplate"


def test_kustomize_numbers_the_items_of_nested_lists(tmp_path: Path) -> None:
    (tmp_path / "l.yaml").write_text(yaml.safe_dump(nested(3)))
    assert [(index, base) for index, base, _ in file_objects(str(tmp_path / "l.yaml"))] == \
        [(0, ("items", 0, "items", 0, "items", 0))]


# --- UTF-16 and UTF-32 with a byte order mark --------------------------------------------------

@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
@pytest.mark.parametrize("name, text", [("p.yaml", POD_YAML), ("p.json", json.dumps(POD))])
def test_utf16_with_a_bom_is_read_as_kubectl_reads_it(tmp_path: Path, encoding: str, name: str,
                                                       text: str) -> None:
    bom = {"utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}.get(encoding, b"")
    (tmp_path / name).write_bytes(bom + text.encode(encoding))
    report = audit(tmp_path)
    assert not report.errors
    assert gpu_pods(report) == [("Pod", "p")]


@pytest.mark.parametrize("encoding", ["utf-32-le", "utf-32-be"])
def test_utf32_is_an_input_error_naming_the_file(tmp_path: Path, encoding: str) -> None:
    bom = b"\xff\xfe\x00\x00" if encoding.endswith("le") else b"\x00\x00\xfe\xff"
    (tmp_path / "p.yaml").write_bytes(bom + POD_YAML.encode(encoding))
    report = audit(tmp_path)
    assert [(Path(e.file).name, e.message) for e in report.errors] == [
        ("p.yaml", "UTF-32 text (by its byte order mark): kubectl reads UTF-8 and UTF-16 only")]


def test_broken_utf16_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_bytes(b"\xff\xfe" + POD_YAML.encode("utf-16-le") + b"\x00")
    report = audit(tmp_path)
    assert [e.message for e in report.errors] == [
        f"not UTF-16 text (byte {2 + 2 * len(POD_YAML)})"]


def test_convert_blocks_a_utf16_manifest_and_leaves_it_as_it_is(tmp_path: Path) -> None:
    raw = POD_YAML.encode("utf-16")
    (tmp_path / "p.yaml").write_bytes(raw)
    summary = convert_json(tmp_path)
    assert [(w["strategy"], w["reason"]) for w in summary["workloads"]] == [
        ("blocked", "UTF-16 manifest: convert writes UTF-8 only; save it as UTF-8 to convert it")]
    assert (tmp_path / "p.yaml").read_bytes() == raw


# --- what a kustomization names, though the walk would not read it -----------------------------

def kustomize_tree(root: Path, resources: list[str], files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "kustomization.yaml").write_text(yaml.safe_dump({"resources": resources}))
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize("resource", ["gpu.txt", "gpu", "manifests/gpu.yml.j2",
                                      "vendor/gpu.yaml", "third_party/x/gpu.yaml",
                                      ".terraform/gpu.yaml", "vendor/gpu.txt"])
def test_a_resource_file_the_kustomization_names_is_read(tmp_path: Path, resource: str) -> None:
    root = kustomize_tree(tmp_path / "app", [resource], {resource: POD_YAML})
    report = audit(root)
    assert gpu_pods(report) == [("Pod", "p")]
    assert [Path(f.file).name for f in report.findings if f.rule == "GPU101"] == \
        [Path(resource).name]


def test_a_kustomization_directory_under_vendor_is_walked(tmp_path: Path) -> None:
    root = kustomize_tree(tmp_path / "app", ["vendor/base"], {})
    kustomize_tree(root / "vendor" / "base", ["pod.yaml", "third_party/extra.txt"],
                   {"pod.yaml": POD_YAML,
                    "third_party/extra.txt": POD_YAML.replace("name: p", "name: q")})
    # Not named: still skipped, as a vendored copy of someone else's tree should be.
    (root / "vendor" / "unnamed.yaml").write_text(POD_YAML.replace("name: p", "name: r"))
    assert sorted(gpu_pods(audit(root))) == [("Pod", "p"), ("Pod", "q")]


def test_a_file_named_twice_is_read_once(tmp_path: Path) -> None:
    root = kustomize_tree(tmp_path / "app", ["vendor/base", "vendor/base/pod.yaml"], {})
    kustomize_tree(root / "vendor" / "base", ["pod.yaml"], {"pod.yaml": POD_YAML})
    kustomize_tree(root / "overlay", ["../vendor/base/pod.yaml", "../gpu.txt"], {})
    (root / "gpu.txt").write_text(POD_YAML.replace("name: p", "name: q"))
    assert sorted(gpu_pods(audit(root))) == [("Pod", "p"), ("Pod", "q")]
    source = FileSource([str(root)])
    list(source.items())
    assert sorted(str(Path(f).relative_to(root)) for f in source.read) == [
        "gpu.txt", "kustomization.yaml", "overlay/kustomization.yaml",
        "vendor/base/kustomization.yaml", "vendor/base/pod.yaml"]


def test_named_resources_outside_the_tree_or_excluded_are_not_read(tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text(POD_YAML)
    root = kustomize_tree(tmp_path / "app", ["../outside.txt", "vendor/gpu.txt"],
                          {"vendor/gpu.txt": POD_YAML})
    assert gpu_pods(audit(root)) == [("Pod", "p")]
    assert gpu_pods(run_audit(AuditRequest([str(root)], excludes=("vendor",)))) == []


def test_convert_rewrites_a_resource_of_any_name(tmp_path: Path) -> None:
    root = kustomize_tree(tmp_path / "app", ["gpu.txt"], {"gpu.txt": POD_YAML})
    summary = convert_json(root)
    assert [(Path(w["file"]).name, w["strategy"]) for w in summary["workloads"]] == \
        [("gpu.txt", "rewrite")]
    assert "resourceClaims" in (root / "gpu.txt").read_text()


def nested_text(depth: int, block: bool) -> str:
    """nested(depth) as text, written out (the dumpers recurse too deep for it)."""
    if not block:
        return '{"apiVersion": "v1", "kind": "List", "items": [' * depth + json.dumps(POD) + \
            "]}" * depth
    lines: list[str] = []
    for level, obj_lines in [(i, ["apiVersion: v1", "kind: List", "items:"])
                             for i in range(depth)] + [(depth, POD_YAML.splitlines())]:
        indent = "  " * level
        lines += [(indent[:-2] + "- " if level and n == 0 else indent) + line
                  for n, line in enumerate(obj_lines)]
    return "\n".join(lines) + "\n"


def test_nested_text_is_the_nested_lists() -> None:
    assert yaml.safe_load(nested_text(3, block=True)) == nested(3)
    assert json.loads(nested_text(3, block=False)) == nested(3)


@pytest.mark.parametrize("name, block", [("l.yaml", True), ("l.json", False),
                                         ("flow.yaml", False)])
def test_lists_nested_past_what_gpudra_parses_are_an_input_error(tmp_path: Path, name: str,
                                                                 block: bool) -> None:
    (tmp_path / name).write_text(nested_text(600, block))
    report = audit(tmp_path)
    # libyaml has its own limit on flow nesting (1,000 levels), and says so in one line.
    libyaml = "while increasing flow level; exceeded maximum nesting depth"
    assert [(Path(e.file).name, e.message.split(" (column")[0]) for e in report.errors] == \
        [(name, libyaml if name == "flow.yaml" else NESTED_TOO_DEEPLY)]
    assert gpu_pods(report) == []


def test_kustomize_reads_the_objects_of_a_utf16_resource(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_bytes(POD_YAML.encode("utf-16"))
    assert [(index, base, obj["kind"]) for index, base, obj in
            file_objects(str(tmp_path / "p.yaml"))] == [(0, (), "Pod")]


# --- the issue's four cases, end to end: never exit 0 -------------------------------------------

def _issue_case(root: Path, case: str) -> None:
    if case == "nested-lists":
        (root / "l.yaml").write_text(yaml.safe_dump(nested(8)))
    elif case == "resource-not-yaml":
        kustomize_tree(root, ["gpu.txt"], {"gpu.txt": POD_YAML})
    elif case == "resource-under-vendor":
        kustomize_tree(root, ["vendor/gpu.yaml"], {"vendor/gpu.yaml": POD_YAML})
    else:
        root.mkdir()
        (root / "p.yaml").write_bytes(POD_YAML.encode("utf-16"))


@pytest.mark.parametrize("case", ["nested-lists", "resource-not-yaml", "resource-under-vendor",
                                  "utf16-bom"])
def test_a_gpu_workload_kubectl_or_kustomize_reads_is_no_exit_0(tmp_path: Path, case: str) -> None:
    from tests.support.run import invoke

    root = tmp_path / "app"
    if case == "nested-lists":
        root.mkdir()
    _issue_case(root, case)
    result = invoke("audit", str(root))
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "GPU101" in result.stdout
