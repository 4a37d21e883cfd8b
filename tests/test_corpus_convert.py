"""`gpudra convert` over the real-world corpus (../shared/corpus): surgical, complete, valid.

The corpus is copied to a temporary directory and converted in place with the convert use case
(run_convert, as the CLI calls it). Then:

* nothing crashed and no input errors were reported;
* a document that has no device-plugin request and no nvidia quota key is byte-identical to
  its original, also inside a changed file (documents are split and aligned; the objects that
  convert appended are recognised by the names it reported as created);
* every workload with a device request (found by an oracle that shares no code with gpudra)
  was converted, or is blocked with the reason listed in EXPECTED_BLOCKED. The blocked set must
  match that list exactly: a regression that blocks more fails here, and so does a fix that
  converts one more workload (then delete its entry);
* the converted files parse; every DRA object convert created validates strictly for 1.37
  (schema and semantic rules), a converted built-in workload has no strict-validation error
  its original did not have, and every claim reference in a converted pod spec resolves;
* every object of every changed file decodes with Kubernetes 1.37's own strict decoder (the Go
  oracle, tests/oracle) without an error its original did not have;
* every pod of a changed file gets what the device plugin gave it (the whole-pod oracle of
  tests/convert/entitlements.py);
* a second run changes nothing (fixed point);
* `gpudra audit` of the converted tree has no GPU101/GPU102/GPU103 finding outside files that
  were blocked or are templates.

Skipped cleanly where the corpus is absent: the project must not need it to run.
"""

from __future__ import annotations

import io
import json
import shutil
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from corpus_oracle import DEVICE, TEMPLATE, expected_lines

from tests.convert.entitlements import pod_entitlements, whole_pod_problems

from gpudra.audit.engine import AuditRequest, run_audit
from gpudra.report import SummaryFormat
from gpudra.cli.convert import ConvertShow, run_convert
from gpudra.convert.run import ConvertRequest
from gpudra.sources.documents import Chunk, split_documents
from gpudra.k8s.workloads import WorkloadTable
from tests.oracle.client import documents

JSON = ConvertShow(output=SummaryFormat.JSON)  # -o json

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not present")

BOM = b"\xef\xbb\xbf"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
DEVICE_PLUGIN_RULES = {"GPU101", "GPU102", "GPU103"}
DRA_CLAIM_KINDS = ("ResourceClaim", "ResourceClaimTemplate")

JSON_CLAIMS = "-gpu-claims.json"  # beside a single-object JSON file (gpudra.convert.json_files)
TEMPLATE_FILE = "Go/Helm template"
OUTSIDE = "outside any known pod spec"
NOT_AN_OBJECT = "not a Kubernetes object (no apiVersion and kind), so gpudra never edits it"
# Workloads (and non-manifest files) that gpudra must leave alone, with a substring of the
# reason it gives: (repository directory, file, kind or "", name or "", reason).
BLOCKED_ROWS = [
    # JSON manifests are converted (issue 34 item 6): none is blocked any more.
    # Helm/Go templates, and a values file with `{{ .Release.Name }}`: never edited. Templates
    # that only name a label (nvidia.com/gpu.present), a DeviceClass's extendedResourceName or
    # a metric ask for no device: not workloads, in audit as in convert (issue 34, item 4).
    ("otwld__ollama-helm", "templates__deployment.yaml", "", "", TEMPLATE_FILE),
    ("otwld__ollama-helm", "templates__knative__service.yaml", "", "", TEMPLATE_FILE),
    ("triton-inference-server__server", "deploy__k8s-onprem__templates__deployment.yaml", "", "",
     TEMPLATE_FILE),
    ("vllm-project__production-stack", "helm__values.yaml", "", "", TEMPLATE_FILE),
    # Helm values files (no kind): read as text, as the audit reads them (GPU701); a zero
    # count is no workload (IBM autopilot, a NIM override file) (issue 34, item 3).
    ("GoogleCloudPlatform__kubernetes-engine-samples", "ai-ml__nemo-rl-on-gke__nemoRL__values.yaml",
     "", "", NOT_AN_OBJECT),
    ("NVIDIA__nim-deploy", "cloud-service-providers__oracle__oke__values.yaml", "", "",
     NOT_AN_OBJECT),
    ("NVIDIA__nim-deploy", "helm__nim-llm__values.yaml", "", "", NOT_AN_OBJECT),
    # Values and config files with device requests in shapes of their own (JupyterHub
    # kubespawner overrides, KubeAI resource profiles, a Marketplace schema).
    ("GoogleCloudPlatform__ai-on-gke",
     "modules__jupyter__jupyter_config__config-selfauth-autopilot.yaml", "", "", NOT_AN_OBJECT),
    ("awslabs__ai-on-eks", "infra__base__terraform__helm-values__jupyterhub-values-cognito.yaml",
     "", "", NOT_AN_OBJECT),
    ("substratusai__kubeai", "charts__kubeai__values.yaml", "", "", NOT_AN_OBJECT),
    ("triton-inference-server__server",
     "deploy__gke-marketplace-app__server-deployer__schema.yaml", "", "", NOT_AN_OBJECT),
    # CRDs whose `spec.resources` is not a pod spec (their operator builds the pods).
    ("GoogleCloudPlatform__kubernetes-engine-samples",
     "ai-ml__infw-gw__examples__getting-started__inference-model.yaml",
     "InferenceModel", "vllm-llama3-8b-instruct", OUTSIDE),
    ("GoogleCloudPlatform__kubernetes-engine-samples",
     "ai-ml__infw-gw__examples__getting-started__inference-model-variables.yaml",
     "InferenceModel", "${MODEL_NAME:-vllm-llama3-8b-instruct}", OUTSIDE),
    # KServe reads the GPU limit: the webhook needs it for a -gpu runtimeVersion, and without a
    # runtimeVersion it picks the Hugging Face server's image by it.
    ("kserve__kserve", "docs__samples__accelerators__tensorflow-gpu.yaml", "InferenceService",
     "tensorflow-gpu", "KServe rejects a tensorflow predictor with runtimeVersion"),
    ("kserve__kserve", "docs__samples__storage__hf__hf_isvc.yaml", "InferenceService",
     "huggingface-llama2", "KServe picks the huggingfaceserver image by the GPU limit"),
    # HAMi vGPU resources (nvidia.com/gpumem, nvidia.com/gpucores) have no DRA equivalent.
    ("Project-HAMi__HAMi", "examples__nvidia__default_use.yaml", "Pod", "gpu-pod",
     "nvidia.com/gpumem has no DRA equivalent"),
    ("Project-HAMi__HAMi", "examples__nvidia__dynamic_mig_example.yaml", "Pod", "gpu-pod",
     "nvidia.com/gpumem has no DRA equivalent"),
    ("kubernetes-sigs__kueue", "site__static__examples__serving-workloads__sample-hami.yaml",
     "Deployment", "gpu-burn", "nvidia.com/gpucores has no DRA equivalent"),
    # nvidia.com/gpu in requests only: the count to claim would be a guess.
    ("kubernetes-sigs__kueue",
     "site__static__examples__serving-workloads__sample-leaderworkerset-tas.yaml",
     "LeaderWorkerSet", "nginx-leaderworkerset", "in requests without a limit"),
]
EXPECTED_BLOCKED = {(f"{repo}/{file}", kind, name): reason
                    for repo, file, kind, name, reason in BLOCKED_ROWS}


# --- the run -------------------------------------------------------------------------------

@dataclass
class Run:
    root: Path
    before: dict[str, bytes]
    after: dict[str, bytes]
    code: int
    report: dict[str, Any]
    claims_files: set[str] = field(default_factory=set)
    again_code: int = 0
    again_report: dict[str, Any] = field(default_factory=dict)
    again: dict[str, bytes] = field(default_factory=dict)

    def rel(self, label: str) -> str:
        return Path(label).resolve().relative_to(self.root.resolve()).as_posix()

    @property
    def changed(self) -> set[str]:
        return {f for f in self.after if self.after[f] != self.before.get(f)}

    @property
    def repaired(self) -> dict[str, set[tuple[str, str]]]:
        """Per file, the (kind, name) of the objects convert reported as repaired."""
        found: dict[str, set[tuple[str, str]]] = defaultdict(set)
        for w in self.report["workloads"]:
            if w["strategy"] == "repair":
                found[self.rel(w["file"])].add((w["kind"], w["name"]))
        return found

    @property
    def created_names(self) -> dict[str, set[str]]:
        """Per file, the names of the DRA objects convert reported as created."""
        names: dict[str, set[str]] = defaultdict(set)
        for w in self.report["workloads"]:
            names[self.rel(w["file"])].update(w["created"])
        return names


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _convert(root: Path) -> tuple[int, dict[str, Any]]:
    out, err = io.StringIO(), io.StringIO()
    code = run_convert(ConvertRequest(paths=(str(root),)), JSON, stdout=out, stderr=err)
    return int(code), json.loads(out.getvalue())


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Run:
    base = tmp_path_factory.mktemp("convert")
    (base / ".gpudra.yaml").write_text("")  # hermetic: no config from above the temp dir
    root = base / "corpus"
    shutil.copytree(CORPUS, root)
    before = _snapshot(root)
    code, report = _convert(root)  # must not raise
    after, claims_files = _folded(_snapshot(root))
    result = Run(root, before, after, code, report, claims_files)
    result.again_code, result.again_report = _convert(root)
    result.again = _folded(_snapshot(root))[0]
    return result


def _folded(files: dict[str, bytes]) -> tuple[dict[str, bytes], set[str]]:
    """The tree with each JSON file's claims file (where convert puts the new templates of a
    single-object JSON file: JSON has no second document) read as documents appended to that
    JSON file, as convert appends them to a YAML file; and the claims files."""
    claims = {n for n in files if n.endswith(JSON_CLAIMS)
              and f"{n.removesuffix(JSON_CLAIMS)}.json" in files}
    out = {n: raw for n, raw in files.items() if n not in claims}
    for name in claims:
        owner = f"{name.removesuffix(JSON_CLAIMS)}.json"
        out[owner] = out[owner].rstrip(b"\n") + b"\n---\n" + files[name]
    return out, claims


# --- an oracle for documents and objects (no gpudra code) --------------------------------------

def _chunks(raw: bytes) -> list[Chunk]:
    return split_documents(raw.decode("utf-8-sig"))


def _load(chunk: Chunk) -> Any:
    """Plain data of a chunk, or None when it is a template or not YAML."""
    if TEMPLATE.search(chunk.text):
        return None
    try:
        return yaml.load(chunk.text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return None


def _objects(data: Any) -> list[dict]:
    if not isinstance(data, dict):
        return []
    if str(data.get("kind", "")).endswith("List") and isinstance(data.get("items"), list):
        return [i for i in data["items"] if isinstance(i, dict)]
    return [data]


def _walk(data: Any) -> Iterator[Mapping]:
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _device_requests(data: Any) -> list[str]:
    """Device-plugin names with a non-zero count under any resources.limits/requests."""
    found = []
    for node in _walk(data):
        resources = node.get("resources")
        for section in ("limits", "requests") if isinstance(resources, Mapping) else ():
            value = resources.get(section)
            if isinstance(value, Mapping):
                found += [str(k) for k, v in value.items()
                          if DEVICE.match(str(k)) and str(v).strip() != "0"]
    return found


def _quota_keys(data: Any) -> list[str]:
    found = []
    for node in _walk(data):
        hard = node.get("hard")
        if isinstance(hard, Mapping):
            found += [str(k) for k in hard
                      if DEVICE.match(str(k).removeprefix("requests.").removeprefix("limits."))]
    return found


def _key(obj: Mapping) -> tuple[str, str]:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    return str(obj.get("kind") or ""), str(meta.get("name") or meta.get("generateName") or "")


def _may_change(chunk: Chunk) -> bool:
    data = _load(chunk)
    return bool(_device_requests(data) or _quota_keys(data))


def _align(before: list[Chunk], after: list[Chunk],
           created: set[str]) -> tuple[list[tuple[Chunk, Chunk]], list[Chunk], list[Chunk]]:
    """Pair each original document with its successor; collect appended DRA objects."""
    pairs, added = [], []
    j = 0
    for old in before:
        if j >= len(after):
            break
        pairs.append((old, after[j]))
        j += 1
        while j < len(after) and _is_created(after[j], created):
            added.append(after[j])
            j += 1
    return pairs, added, after[j:]


def _is_created(chunk: Chunk, created: set[str]) -> bool:
    data = _load(chunk)
    return (isinstance(data, dict)
            and str(data.get("apiVersion", "")).startswith("resource.k8s.io/")
            and data.get("kind") in DRA_CLAIM_KINDS and _key(data)[1] in created)


def _manifests() -> list[str]:
    return sorted(p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*")
                  if p.is_file() and p.suffix in MANIFEST_SUFFIXES)


# --- the tests -------------------------------------------------------------------------------

def test_convert_reads_the_whole_corpus_without_errors(run):
    assert run.report["errors"] == []
    assert run.report["summary"]["files_scanned"] == len(_manifests())
    assert run.code == 4  # only blocked workloads remain (see EXPECTED_BLOCKED)
    assert run.changed, "nothing was converted"
    assert set(run.after) == set(run.before), "convert created or removed files"
    # Besides the claims files of single-object JSON files (folded into them by the run).
    assert run.claims_files, "the corpus has a single-object JSON manifest to convert"
    assert {f"{n.removesuffix(JSON_CLAIMS)}.json" for n in run.claims_files} <= run.changed


def test_documents_without_device_requests_are_byte_identical(run):
    problems = []
    for name in sorted(run.changed):
        old, new = run.before[name], run.after[name]
        if old.startswith(BOM) != new.startswith(BOM):
            problems.append(f"{name}: byte-order mark changed")
        pairs, added, rest = _align(_chunks(old), _chunks(new), run.created_names[name])
        if len(pairs) != len(_chunks(old)) or rest:
            problems.append(f"{name}: documents do not align ({len(rest)} unexplained at the end)")
        if run.created_names[name] and len(added) != len(run.created_names[name]):
            problems.append(f"{name}: {len(added)} objects appended, "
                            f"{len(run.created_names[name])} reported as created")
        for before, after in pairs:
            repaired = {_key(o) for o in _objects(_load(before))} & run.repaired[name]
            if before.text.encode() != after.text.encode() and not _may_change(before) \
                    and not repaired:
                problems.append(f"{name}:{before.first_line}: a document without device requests "
                                "or nvidia quota keys changed")
    assert not problems, "\n".join(problems)


def test_every_gpu_workload_is_converted_or_blocked_for_a_listed_reason(run):
    results: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for w in run.report["workloads"]:
        results[(run.rel(w["file"]), w["kind"] or "", w["name"] or "")].append(w)
    problems = []
    for name in _manifests():
        for chunk in _chunks(run.before[name]):
            for obj in _objects(_load(chunk)):
                if "apiVersion" not in obj or not _device_requests(obj):
                    continue
                key = (name, *_key(obj))
                strategies = {w["strategy"] for w in results.get(key, [])}
                if strategies == {"rewrite"}:
                    continue
                if strategies == {"blocked"} and key in EXPECTED_BLOCKED:
                    continue
                problems.append(f"{key}: {sorted(strategies) or 'no result'} "
                                f"{[w['reason'] for w in results.get(key, [])]}")
    assert not problems, "\n".join(problems)


def test_blocked_workloads_are_exactly_the_expected_ones(run):
    blocked = {(run.rel(w["file"]), w["kind"] or "", w["name"] or ""): w["reason"]
               for w in run.report["workloads"] if w["strategy"] == "blocked"}
    unexpected = {k: v for k, v in blocked.items() if k not in EXPECTED_BLOCKED}
    assert not unexpected, "newly blocked:\n" + "\n".join(f"{k}: {v}"
                                                          for k, v in unexpected.items())
    wrong = {k: (blocked[k], EXPECTED_BLOCKED[k]) for k in blocked
             if EXPECTED_BLOCKED[k] not in (blocked[k] or "")}
    assert not wrong, wrong
    no_longer = set(EXPECTED_BLOCKED) - set(blocked)
    assert not no_longer, f"no longer blocked (drop them from EXPECTED_BLOCKED): {no_longer}"


def test_converted_workloads_keep_no_device_plugin_request(run):
    converted = {(run.rel(w["file"]), w["kind"], w["name"]) for w in run.report["workloads"]
                 if w["strategy"] == "rewrite"}
    assert converted
    seen = set()
    for name in sorted(run.changed):
        for chunk in _chunks(run.after[name]):
            for obj in _objects(_load(chunk)):
                key = (name, *_key(obj))
                if key in converted:
                    seen.add(key)
                    assert not _device_requests(obj), key
    assert seen == converted


@pytest.fixture(scope="module")
def validator():
    pytest.importorskip("kubernetes_validate")
    from gpudra.dra.validate import StrictValidator
    from gpudra.dra.versions import TargetVersion

    return StrictValidator(TargetVersion.parse("1.37"))


def test_converted_files_parse_and_validate_strictly(run, validator):
    from gpudra.dra.validate import semantic_errors

    converted = {(run.rel(w["file"]), w["kind"], w["name"]) for w in run.report["workloads"]
                 if w["strategy"] == "rewrite"}
    originals: dict[tuple[str, str, str], dict] = {}
    for name in run.changed:
        for chunk in _chunks(run.before[name]):
            for obj in _objects(_load(chunk)):
                originals[(name, *_key(obj))] = obj
    table = WorkloadTable()
    problems: list[str] = []
    checked_dra = checked_workloads = 0
    for name in sorted(run.changed):
        if name.endswith((".yaml", ".yml")):
            list(yaml.load_all(run.after[name], Loader=yaml.CSafeLoader))  # the whole file parses
        templates: dict[tuple[str | None, str], dict] = {}
        workloads = []
        for chunk in _chunks(run.after[name]):
            for obj in _objects(_load(chunk)):
                key = (name, *_key(obj))
                namespace = (obj.get("metadata") or {}).get("namespace")
                if str(obj.get("apiVersion", "")).startswith("resource.k8s.io/") \
                        and key[2] in run.created_names[name]:
                    checked_dra += 1
                    problems += [f"{key}: {e}" for e in validator.errors(obj)]
                    templates[(namespace, key[2])] = obj
                elif key in converted:
                    checked_workloads += 1
                    workloads.append((key, obj, namespace))
                    new = validator.errors(obj)
                    old = validator.errors(originals[key])
                    problems += [f"{key}: {e}" for e in new if e not in old]
        for key, obj, namespace in workloads:
            group = str(obj.get("apiVersion", "")).rpartition("/")[0]
            had_gpus = {spec.path for spec in table.pod_specs(group, key[1], originals[key])
                        if _device_requests(spec.data)}
            for spec in table.pod_specs(group, key[1], obj):
                pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                       "spec": {**spec.data, "containers": [c.data for c in spec.containers]}}
                problems += [f"{key} {spec.path}: {e}" for e in semantic_errors(pod)]
                if spec.path in had_gpus:
                    problems += [f"{key} {spec.path}: {e}"
                                 for e in _claim_links(spec, templates, namespace)]
    assert checked_dra and checked_workloads
    assert not problems, "\n".join(problems)


def test_converted_files_decode_strictly_as_the_api_server_does(run, oracle):
    """Every object of every changed file, as text, through Kubernetes 1.37's strict decoder
    (the Go oracle): no unknown or duplicate field and no undecodable value that the same object
    did not already have before convert."""
    problems: list[str] = []
    checked = created = 0
    for name in sorted(run.changed):
        had: dict[tuple, set[str]] = defaultdict(set)
        for text, data in documents(run.before[name].decode("utf-8-sig")):
            had[_identity(data)].update(oracle.decode(text).errors)
        for text, data in documents(run.after[name].decode("utf-8-sig")):
            decoded = oracle.decode(text)
            if not decoded.registered:
                continue  # a CRD: kubernetes-validate and semantic_errors check what they can
            checked += 1
            created += _identity(data) not in had
            problems += [f"{name} {_identity(data)}: {error}" for error in decoded.errors
                         if error not in had.get(_identity(data), ())]
    assert checked and created, (checked, created)
    assert not problems, "\n".join(problems)


def _identity(obj: Mapping) -> tuple[str, str, str, str]:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    return (str(obj.get("apiVersion")), str(obj.get("kind")), str(meta.get("namespace")),
            str(meta.get("name") or meta.get("generateName")))


def _claim_links(spec, templates: dict, namespace: str | None) -> list[str]:
    """Every container claim names a pod claim whose template (in the file) has the request."""
    errors = []
    requests_of: dict[str, set[str]] = {}
    for entry in spec.data.get("resourceClaims") or []:
        template = templates.get((namespace, entry.get("resourceClaimTemplateName")))
        if template is None:
            continue  # not created by convert (an existing claim, e.g. an IMEX channel)
        requests = template["spec"]["spec"]["devices"]["requests"]
        requests_of[entry["name"]] = {r["name"] for r in requests}
    for container in spec.containers:
        for ref in (container.data.get("resources") or {}).get("claims") or []:
            if ref["name"] in requests_of and "request" in ref and \
                    ref["request"] not in requests_of[ref["name"]]:
                errors.append(f"container {container.name}: request {ref.get('request')!r} is not "
                              f"in the template of claim {ref['name']!r}")
    if not requests_of:
        errors.append("no resourceClaims entry points at a template convert created")
    return errors


def test_every_converted_pod_gets_what_the_device_plugin_gave_it(run):
    """The whole-pod oracle (tests/convert/entitlements.py), file by file: each container sees
    the devices it had, each pod allocates max(largest init container, sum of app containers)
    per device kind, and no two containers running at once share a device."""
    problems: list[str] = []
    pods = 0
    for name in sorted(run.changed):
        before = [o for c in _chunks(run.before[name]) for o in _objects(_load(c))]
        after = [o for c in _chunks(run.after[name]) for o in _objects(_load(c))]
        pods += len(pod_entitlements(after))
        problems += [f"{name}: {p}" for p in whole_pod_problems(before, after)]
    assert pods
    assert not problems, "\n".join(problems)


def test_second_run_changes_nothing(run):
    assert run.again == run.after
    assert run.again_report["summary"]["files_changed"] == 0
    assert run.again_report["summary"]["rewrite"] == 0
    assert run.again_report["summary"]["quota"] == 0
    assert run.again_report["errors"] == []


def test_audit_of_the_converted_tree_finds_no_device_plugin_requests(run):
    report = run_audit(AuditRequest([str(run.root)]))
    assert not report.errors, report.errors
    exempt = {run.rel(w["file"]) for w in run.report["workloads"] if w["strategy"] == "blocked"}
    exempt |= {name for name in _manifests() if expected_lines(CORPUS / name)[1]}
    left = sorted({f"{run.rel(f.file)}:{f.line} {f.rule}" for f in report.findings
                   if f.rule in DEVICE_PLUGIN_RULES and run.rel(f.file) not in exempt})
    assert not left, "\n".join(left)
