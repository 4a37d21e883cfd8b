"""`gpudra convert` golden cases: before/ -> after/, byte for byte, then a fixed point.

Each directory under golden/ is one case:

* ``before/``: the tree as the user has it; ``after/``: the tree convert must leave (every file,
  byte for byte, and no other file);
* ``case.yaml``: ``args`` (CLI options), optional ``paths`` (default ``["."]``, relative to the
  tree), ``exit`` (default 0), ``workloads`` (``"<file> <Kind>/<name>": strategy`` for every
  workload in the summary; ``@<namespace>`` is appended when the same file holds several objects
  of that kind and name, ``-`` stands for a whole file), ``notes`` (per workload key, text that
  must appear in one of its notes or in its reason) and ``xfail`` (a known bug, with why).

The tree is converted in a temporary copy, through the CLI, as users run it. A second run must
change nothing. Every resource.k8s.io object in a changed or new file, and every converted
workload, is validated strictly against the case's target release (kubernetes-validate schemas
plus semantic_errors); its pod specs are checked to reference claims that exist and requests
that those claims have, and every CEL selector must compile. Outside Kustomize trees, every pod
of the result is held to the whole-pod oracle (entitlements.whole_pod_problems).

Separately, every object of every before/ and after/ tree is strict-decoded by the Go oracle
(tests/oracle: Kubernetes' own decoder at the case's target release, 1.32 or 1.37), as the API
server does with fieldValidation=Strict.

After/ files are written by running the tool and reading the diff; they are never regenerated
by this test.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpudra.cli import app
from gpudra.dra.cel import compile_selector
from gpudra.dra.validate import StrictValidator, semantic_errors
from gpudra.dra.versions import DEFAULT, TargetVersion
from gpudra.k8s.workloads import WorkloadTable
from tests.oracle.client import Decoded, Oracle, documents

from .entitlements import objects_in, whole_pod_problems

pytest.importorskip("kubernetes_validate")

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "case.yaml").is_file())
_RESOURCE_GROUP = "resource.k8s.io/"
_CONTAINER_FIELDS = frozenset({
    "name", "image", "command", "args", "workingDir", "ports", "envFrom", "env", "resources",
    "resizePolicy", "restartPolicy", "volumeMounts", "volumeDevices", "livenessProbe",
    "readinessProbe", "startupProbe", "lifecycle", "terminationMessagePath",
    "terminationMessagePolicy", "imagePullPolicy", "securityContext", "stdin", "stdinOnce", "tty"})


def _case(name: str) -> dict[str, Any]:
    return yaml.safe_load((GOLDEN / name / "case.yaml").read_text(encoding="utf-8")) or {}


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _convert(case: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    args = ["convert", *case.get("paths", ["."]), *case.get("args", []), "-o", "json"]
    result = CliRunner().invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, json.loads(result.stdout), result.stderr


def _workloads(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    def base(w: Mapping[str, Any]) -> str:
        file = w["file"].removeprefix("./")
        return f"{file} {w['kind']}/{w['name']}" if w["kind"] else f"{file} -"

    seen = Counter(base(w) for w in report["workloads"])
    return {base(w) + (f"@{w['namespace']}" if seen[base(w)] > 1 else ""): w
            for w in report["workloads"]}


def _target(case: dict[str, Any]) -> TargetVersion:
    args = list(case.get("args", []))
    if "--target-version" in args:
        return TargetVersion.parse(args[args.index("--target-version") + 1])
    return DEFAULT


@pytest.mark.parametrize("name", CASES)
def test_golden(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                request: pytest.FixtureRequest) -> None:
    case = _case(name)
    if case.get("xfail"):
        request.applymarker(pytest.mark.xfail(reason=case["xfail"], strict=True))
    before, after = GOLDEN / name / "before", GOLDEN / name / "after"
    tree = tmp_path / "tree"
    shutil.copytree(before, tree)
    monkeypatch.chdir(tree)

    code, report, stderr = _convert(case)
    assert code == case.get("exit", 0), (report, stderr)
    workloads = _workloads(report)
    assert {k: w["strategy"] for k, w in workloads.items()} == case.get("workloads", {})
    for key, expected in (case.get("notes") or {}).items():
        said = [*workloads[key]["notes"], workloads[key]["reason"] or ""]
        for text in expected:
            assert any(text in line for line in said), (key, text, said)
    assert _files(tree) == _files(after)

    code, again, stderr = _convert(case)
    assert again["files"] == [], "a second run changed files"
    assert code == case.get("exit", 0), (again, stderr)
    assert _files(tree) == _files(after)

    _validate(tree, _files(before), _target(case), report)
    # Each pod gets what the device plugin gave it (kustomize patches are partial objects:
    # tests/kustomize holds built overlays to the same oracle).
    if not any(tree.rglob("kustomization.y*ml")):
        assert whole_pod_problems(objects_in(before, readable_only=True),
                                  objects_in(tree, readable_only=True)) == []


# --- validation of the result ------------------------------------------------------------------

def _objects(path: Path) -> Iterator[dict[str, Any]]:
    for doc in yaml.safe_load_all(path.read_text(encoding="utf-8-sig")):
        if not isinstance(doc, dict):
            continue
        if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
            yield from (item for item in doc["items"] if isinstance(item, dict))
        elif doc.get("kind") == "Template" and isinstance(doc.get("objects"), list):
            # What `oc process` creates: each parameter filled in (its value, else its name).
            values = {p["name"]: str(p.get("value") or p["name"].lower())
                      for p in doc.get("parameters") or [] if isinstance(p, dict)}
            yield from (_processed(obj, values) for obj in doc["objects"] if isinstance(obj, dict))
        else:
            yield doc


def _processed(value: Any, parameters: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return re.sub(r"\$\{(\w+)\}", lambda m: parameters.get(m[1], m[0]), value)
    if isinstance(value, dict):
        return {k: _processed(v, parameters) for k, v in value.items()}
    if isinstance(value, list):
        return [_processed(v, parameters) for v in value]
    return value


def _validate(tree: Path, before: dict[str, bytes], target: TargetVersion,
              report: dict[str, Any]) -> None:
    validator = StrictValidator(target)
    changed = [p for p in sorted(tree.rglob("*")) if p.is_file()
               and p.suffix in (".yaml", ".yml", ".json")  # JSON is YAML too
               and before.get(p.relative_to(tree).as_posix()) != p.read_bytes()]
    parameters = _template_parameters(changed)
    converted = {(w["kind"], _processed(w["name"], parameters),
                  _processed(w["namespace"], parameters)) for w in report["workloads"]
                 if w["strategy"] in ("rewrite", "repair", "quota")}
    objects = [obj for p in changed for obj in _objects(p)]
    dra = [o for o in objects if str(o.get("apiVersion", "")).startswith(_RESOURCE_GROUP)]
    for obj in dra:
        assert obj["apiVersion"] == target.resource_api_version or obj["kind"] == "DeviceClass"
        assert validator.errors(obj) == [], obj
        for expression in _selectors(obj):
            compile_selector(expression, target)
    workloads = [o for o in objects if _key(o) in converted]
    assert len(workloads) == len(converted), "a converted workload is missing from the result"
    for obj in workloads:
        if validator._validator(obj["apiVersion"], obj["kind"]) is not None:
            assert validator.errors(obj) == [], obj
        else:  # a CRD: no schema; check what convert wrote into its pod specs
            assert semantic_errors(obj) == [], obj
        _check_pod_specs(obj, dra, validator)


def _template_parameters(paths: list[Path]) -> dict[str, str]:
    """The parameters of the OpenShift Templates among `paths`, as `_objects` fills them in."""
    found: dict[str, str] = {}
    for path in paths:
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8-sig")):
            if isinstance(doc, dict) and doc.get("kind") == "Template":
                found.update({p["name"]: str(p.get("value") or p["name"].lower())
                              for p in doc.get("parameters") or [] if isinstance(p, dict)})
    return found


def _key(obj: Mapping[str, Any]) -> tuple[str, str | None, str | None]:
    meta = obj.get("metadata") or {}
    return (obj.get("kind", ""), meta.get("name") or meta.get("generateName"),
            meta.get("namespace"))


def _selectors(value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        cel = value.get("cel")
        if isinstance(cel, Mapping) and isinstance(cel.get("expression"), str):
            yield cel["expression"]
        for child in value.values():
            yield from _selectors(child)
    elif isinstance(value, list):
        for child in value:
            yield from _selectors(child)


def _check_pod_specs(obj: Mapping[str, Any], dra: list[dict[str, Any]],
                     validator: StrictValidator) -> None:
    """Each pod spec as a Pod (its containers and resourceClaims) validates strictly, and every
    container claim names a request of the claim or template convert emitted."""
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    namespace = (obj.get("metadata") or {}).get("namespace")
    for spec in WorkloadTable().pod_specs(group, obj["kind"], obj):
        entries = spec.data.get("resourceClaims") or []
        pod_spec: dict[str, Any] = {"resourceClaims": entries, "containers": []}
        crd = validator._validator(obj["apiVersion"], obj["kind"]) is None
        for ref in spec.containers:  # Argo's single `container:` has no name
            field = "initContainers" if ref.init else "containers"
            # A CRD's container may carry fields of its own (KServe's modelFormat, storageUri):
            # check its core Container fields.
            data = {k: v for k, v in ref.data.items() if k in _CONTAINER_FIELDS} if crd \
                else ref.data
            pod_spec.setdefault(field, []).append({"name": "main", **data})
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "check"}, "spec": pod_spec}
        assert validator.errors(pod) == [], (spec.path, pod)
        requests = {}
        for entry in entries:
            kind = "ResourceClaimTemplate" if "resourceClaimTemplateName" in entry \
                else "ResourceClaim"
            name = entry.get("resourceClaimTemplateName") or entry.get("resourceClaimName")
            target = next((o for o in dra if o["kind"] == kind and _key(o)[1:] == (name, namespace)),
                          None)
            assert target is not None, f"{kind} {name!r} referenced but not in the tree"
            claim_spec = target["spec"]["spec"] if kind == "ResourceClaimTemplate" \
                else target["spec"]
            requests[entry["name"]] = {r["name"] for r in claim_spec["devices"]["requests"]}
        for ref in spec.containers:
            for claim in ((ref.data.get("resources") or {}).get("claims") or []):
                assert claim["name"] in requests, (spec.path, claim)
                if "request" in claim:
                    assert claim["request"] in requests[claim["name"]], (spec.path, claim)


# --- the API server's strict decoding (the Go oracle) ------------------------------------------

def _decoded_tree(root: Path, oracle: Oracle) -> dict[tuple[str, str, str, str], Decoded]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in (".yaml", ".yml", ".json"):
            for text, data in documents(path.read_text(encoding="utf-8-sig")):
                meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
                key = (str(data["apiVersion"]), str(data["kind"]), str(meta.get("namespace")),
                       str(meta.get("name") or meta.get("generateName")))
                out[key] = oracle.decode(text)
    return out


@pytest.mark.parametrize("name", CASES)
def test_golden_objects_decode_strictly(name: str, oracles: Callable[[TargetVersion], Oracle]
                                        ) -> None:
    """Every object of after/ decodes as the target release's API server decodes it with
    fieldValidation=Strict: no unknown or duplicate field, no undecodable value, unless the
    same object already had that error in before/ (convert leaves broken input alone)."""
    oracle = oracles(_target(_case(name)))
    before = _decoded_tree(GOLDEN / name / "before", oracle)
    after = _decoded_tree(GOLDEN / name / "after", oracle)
    problems = []
    for key, decoded in after.items():
        if key[0].startswith(_RESOURCE_GROUP) and not decoded.registered:
            problems.append(f"{key}: Kubernetes {oracle.kubernetes} has no such type")
        old = before.get(key)
        new = [e for e in decoded.errors if old is None or e not in old.errors]
        problems += [f"{key}: {error}" for error in new]
    assert not problems, "\n".join(problems)
