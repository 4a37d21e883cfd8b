"""The fast paths of issue 18 give what the plain paths give: the file source on worker
processes (large trees, the documents of a big file) and objects read without a line index
(inventories)."""

from __future__ import annotations

import functools
import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from gpudra.results.model import InputError
from gpudra.k8s.objects import ManifestObject, TemplateText
from gpudra.sources.documents import parse_chunk, parse_data, split_documents
from gpudra.sources import ScanStats
from gpudra.sources.discovery import InputFile
from gpudra.sources.files import FileSource
from gpudra.sources.reading import ReadFile, documents
from gpudra.sources.workers import parse_ahead

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import gen_tree  # noqa: E402

ODD_FILES = {
    # A List (its items share the document's data and lines), a JSON List, a document that is
    # no object (skipped), broken YAML, a Go template, text that is not UTF-8, a kustomization.
    "odd/list.yaml": "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n"
                     "  metadata: {name: a}\n  spec:\n    containers:\n    - name: c\n"
                     "      resources: {limits: {nvidia.com/gpu: 2}}\n",
    "odd/pods.json": json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "j"}, "spec": {"containers": [
            {"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}]}, indent=2),
    "odd/values.yaml": "gpu: true\nreplicas: 2\n---\nnvidia: {enabled: yes}\n",
    "odd/broken.yaml": "kind: Pod\napiVersion: v1\nmetadata: {name: [nvidia\n",
    "odd/template.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Values.name }}\n"
                         "  labels: {gpu: x}\n",
    "odd/kustomization.yaml": "resources: [list.yaml]\n",
}


def _tree(root: Path, files: int) -> Path:
    gen_tree.generate(str(root), files=files, seed=7, gpu_percent=10, decoy_percent=5,
                      avg_size=600)
    for name, text in ODD_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "odd" / "latin1.yaml").write_bytes(b"kind: Pod # nvidia \xe9\n")
    return root


def _view(item: Any) -> tuple:
    """What a consumer can see of an item (a JSON file's line index is compared by lookup)."""
    if isinstance(item, ManifestObject):
        lines = item.lines if isinstance(item.lines, dict) else \
            [item.line_of(path) for path in (("metadata",), ("spec", "containers", 0))]
        return ("object", item.file, item.first_line, item.data, lines, item.text, item.base,
                item.template, item.listing, item.in_list)
    if isinstance(item, TemplateText):
        return ("text", item.file, item.text, item.first_line, item.reason, item.chart)
    assert isinstance(item, InputError), item
    return ("error", item.file, item.message, item.line)


def _scan(root: Path, pool_from: int, seen: list[str], paths: list[str] | None = None
          ) -> tuple[list[tuple], tuple]:
    source = FileSource(paths or [str(root)], pool_from=pool_from, on_file=seen.append)
    items = [_view(item) for item in source.items()]
    stats = source.stats
    return items, (stats.files, stats.documents, stats.skipped, tuple(source.read))


def test_the_pool_gives_the_single_process_result_in_its_order(tmp_path: Path) -> None:
    root = _tree(tmp_path / "tree", 1200)
    seen_one: list[str] = []
    seen_pool: list[str] = []
    one = _scan(root, 10**9, seen_one)
    pooled = _scan(root, 100, seen_pool)  # 1,200+ files: the pool with several batches
    assert len(one[0]) > 150 and one[1][0] > 1200  # the tree is what the test needs
    assert any(v[0] == "error" for v in one[0]) and one[1][2]  # errors and skipped documents
    assert pooled == one
    assert seen_pool == seen_one == list(one[1][3])


def test_the_pool_reads_stdin_in_its_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    root = _tree(tmp_path / "tree", 150)
    pod = ODD_FILES["odd/list.yaml"].encode()
    paths = [str(root / "teams"), "-", str(root / "odd")]
    results = []
    for pool_from in (10**9, 20):
        source = FileSource(paths, stdin=lambda: pod, pool_from=pool_from)
        results.append(([_view(i) for i in source.items()], source.stats.files))
    assert results[0] == results[1]
    assert any(v[0] == "object" and v[1] == "-" for v in results[0][0])


@pytest.mark.parametrize("name", sorted(n for n in ODD_FILES if n.endswith(".yaml")))
def test_data_without_a_line_index_is_the_same_data(name: str) -> None:
    for chunk in split_documents(ODD_FILES[name]):
        try:
            full = parse_chunk(chunk)
        except Exception as exc:  # noqa: BLE001 - the same error either way
            with pytest.raises(type(exc)):
                parse_data(chunk)
            continue
        bare = parse_data(chunk)
        assert bare.data == full.data and bare.chunk == full.chunk
        assert bare.lines == {} and (full.lines or full.data is None)


def test_an_inventory_source_reads_the_same_objects_without_lines(tmp_path: Path) -> None:
    root = _tree(tmp_path / "tree", 60)
    with_lines = [i for i in FileSource([str(root)]).items()]
    without = [i for i in FileSource([str(root)], lines=False).items()]
    assert [type(i) for i in with_lines] == [type(i) for i in without]
    objects = [(a, b) for a, b in zip(with_lines, without) if isinstance(a, ManifestObject)]
    assert objects and all(a.data == b.data for a, b in objects)
    # Without an index a List's items are placed on the List's first line.
    assert all(a.first_line == b.first_line for a, b in objects if not a.in_list)
    assert all(not b.lines for a, b in objects if isinstance(a.lines, dict))


def test_documents_parsed_ahead_by_workers_are_the_documents_parsed_here() -> None:
    # A big file's documents (here a small one's, handed to the pool directly): objects,
    # broken YAML, a Go template, a document without a needle, a non-object, tabs.
    parts = [ODD_FILES["odd/list.yaml"], ODD_FILES["odd/broken.yaml"],
             ODD_FILES["odd/template.yaml"], "kind: ConfigMap\napiVersion: v1\n",
             "gpu: [1, 2]\n", "apiVersion: v1\nkind: Pod\nmetadata: {name: t, labels: "
             "{gpu: a}}\t\n"] * 150
    text = "---\n".join(parts)
    read = ReadFile(InputFile("big.yaml", None), text.encode(), text)

    def seen(ahead: Any) -> tuple:
        stats = ScanStats()
        docs = [(d.chunk, d.relevant, d.template, _view_parsed(d.parsed), d.skipped,
                 d.error) for d in documents(read, parse_chunk, stats, ahead=ahead)]
        return docs, stats.documents, stats.skipped

    plain = seen(None)
    assert sum(1 for d in plain[0] if d[5] is not None) == 150  # the broken ones, as errors
    assert seen(functools.partial(parse_ahead, lines=True, workers=2)) == plain


def _view_parsed(parsed: Any) -> Any:
    return None if parsed is None else (parsed.data, parsed.lines, parsed.chunk)


def test_json_without_a_line_index_is_the_same_data() -> None:
    from gpudra.sources.documents import Chunk, ParseError
    from gpudra.sources.reading import _parse_json

    text = ODD_FILES["odd/pods.json"]
    full, bare = _parse_json(Chunk(text, 1)), _parse_json(Chunk(text, 1), lines=False)
    assert bare.data == full.data and bare.lines == {}
    assert full.lines.get(("items", 0, "spec")) == 11  # the index the plain path keeps
    yaml_in_json = Chunk("# a comment\nkind: Pod\napiVersion: v1\n", 1)  # read as YAML
    assert _parse_json(yaml_in_json, lines=False).data == _parse_json(yaml_in_json).data
    for broken in ('{"kind": "Pod"\n "apiVersion": "v1"}\n', '{"a": [1,\n'):  # nor YAML
        with pytest.raises(ParseError) as plain:
            _parse_json(Chunk(broken, 1))
        with pytest.raises(ParseError) as without:
            _parse_json(Chunk(broken, 1), lines=False)
        assert (without.value.message, without.value.line) == \
            (plain.value.message, plain.value.line)


def test_a_pooled_scan_starts_on_the_call_and_ends_on_close(tmp_path: Path) -> None:
    import multiprocessing

    root = _tree(tmp_path / "tree", 300)
    before = set(multiprocessing.active_children())
    items = FileSource([str(root)], pool_from=100).items()
    assert set(multiprocessing.active_children()) - before  # reading before the first next()
    first = next(items)
    items.close()
    assert not set(multiprocessing.active_children()) - before
    assert _view(first) == _view(next(iter(FileSource([str(root)], pool_from=10**9).items())))


def test_a_pooled_read_gives_what_one_process_reads(tmp_path: Path) -> None:
    from gpudra.sources.discovery import discover
    from gpudra.sources.files import read_all

    root = _tree(tmp_path / "tree", 600)
    pod = ODD_FILES["odd/list.yaml"].encode()
    entries = list(discover([str(root / "teams"), "-", str(root / "odd"), str(root / "gone")]))

    def read(pool_from: int) -> tuple[list[tuple], int, list[str]]:
        stats, seen = ScanStats(), []
        got = [("error", r.file, r.message, r.line) if isinstance(r, InputError) else
               ("file", r.entry, r.raw if r.text is not None else None, r.text)
               for r in read_all(entries, stats=stats, stdin=lambda: pod,
                                 on_file=seen.append, pool_from=pool_from)]
        return got, stats.files, seen

    one, pooled = read(10**9), read(100)
    assert pooled == one
    texts = [r for r in one[0] if r[0] == "file" and r[3] is not None]
    assert texts and any(r[1].label == "-" for r in texts)  # stdin, read in its place
    assert any(r[0] == "error" for r in one[0])  # the missing path and the non-UTF-8 file


def test_convert_on_a_pooled_read_plans_and_edits_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpudra.convert.converter as converter

    root = _tree(tmp_path / "tree", 400)

    one = _converted(root)
    for name in ("read_all", "list_and_read"):  # a kustomization: the pass plans every file
        monkeypatch.setattr(converter, name, functools.partial(getattr(converter, name),
                                                               pool_from=100))
    assert _converted(root) == one
    assert one[1] and one[2]  # files it edits, and files it cannot read


def test_workers_read_only_so_far_ahead_and_close_while_waiting(tmp_path: Path) -> None:
    import time

    from gpudra.sources.discovery import discover
    from gpudra.sources.files_pool import BATCH, scan_pooled

    root = _tree(tmp_path / "tree", 6 * BATCH)
    entries = list(discover([str(root)]))
    plain = [_view(i) for i in FileSource([str(root)], pool_from=10**9).items()]
    total = (len(entries) + BATCH - 1) // BATCH
    for ahead in (1, 2, None):
        items = scan_pooled(entries, stats=ScanStats(), ahead=ahead)
        # The workers read what they may before the first item is taken: wait (a loaded
        # machine may take long) until they have been handed all they may take, then give
        # them time to take more than that, which they must not.
        allowed = total if ahead is None else ahead
        deadline = time.monotonic() + 120
        while len(items._sent) < allowed and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        assert len(items._sent) == allowed  # batches handed to the workers so far
        assert [_view(i) for i in items] == plain
    waiting = scan_pooled(entries, stats=ScanStats(), ahead=1)
    next(waiting)
    closer = threading.Thread(target=waiting.close)  # the feeder waits for room
    closer.start()
    closer.join(timeout=120)
    assert not closer.is_alive()  # closing did not wait for room that never comes


def test_files_planned_by_the_workers_that_read_them_convert_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """plan_ahead: each GPU file planned and edited in a worker as the pass's first file, taken
    when its names are still free. Files whose names clash with earlier files' (and files with
    quotas) are planned again by the pass; all of it must come out as one process makes it,
    whether the reading began while the tree was listed (the first pass) or after (a pass
    started again for a name found late)."""
    import gpudra.convert.converter as converter
    import gpudra.sources.files_pool as files_pool

    root = tmp_path / "tree"
    gen_tree.generate(str(root), files=300, seed=3, gpu_percent=20, decoy_percent=5,
                      avg_size=600)
    golden = Path(__file__).resolve().parent / "convert" / "golden" / "quota-mig" / "before"
    for name in ("quotas.yaml", "workloads.yaml"):  # quotas wait for every workload
        (root / "zz-mig" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "zz-mig" / name).write_text((golden / name).read_text())
    same = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n"
            "    spec:\n      containers:\n      - name: c\n        image: x\n"
            "        resources: {limits: {nvidia.com/gpu: 1}}\n")
    for i in range(6):  # one name in one namespace: web-gpu, web-gpu-2, ...
        (root / "zz-clash" / f"web-{i}.yaml").parent.mkdir(parents=True, exist_ok=True)
        (root / "zz-clash" / f"web-{i}.yaml").write_text(same)
    # An existing template named as a workload read before it: the pass starts again.
    (root / "zz-clash" / "zz" / "existing.yaml").parent.mkdir()
    (root / "zz-clash" / "zz" / "existing.yaml").write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"
        "metadata: {name: web-gpu-3}\nspec:\n  spec:\n    devices:\n      requests:\n"
        "      - name: gpu\n        exactly: {deviceClassName: gpu.nvidia.com}\n")
    (root / "zz-clash" / "broken.yaml").write_text("kind: Pod\nmetadata: {name: [nvidia.com/gpu\n")

    one = _converted(root)
    taken: list[bool] = []
    take = converter._Pass._take

    def counted(self: Any, read: ReadFile, ahead: Any) -> bool:
        taken.append(take(self, read, ahead))
        return taken[-1]

    monkeypatch.setattr(converter._Pass, "_take", counted)
    for name in ("read_all", "list_and_read"):
        monkeypatch.setattr(converter, name, functools.partial(getattr(converter, name),
                                                               pool_from=100))
    # Batches of 10 files: many of them handed out while the tree is still listed.
    monkeypatch.setattr(files_pool, "BATCH", 10)
    assert _converted(root) == one
    assert taken.count(True) > 40 and taken.count(False) >= 5  # clashes go to the pass
    names = {r.created for r in one[0] if "clash" in r.file}
    assert len(one[1]) > 50 and one[2] and len(names) == 6  # six different claim names



def test_a_kustomize_tree_read_by_workers_is_planned_by_the_pass(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first pass's workers plan ahead before convert knows the tree has kustomizations;
    the pass then takes none of those plans (overlays need every file it read)."""
    import shutil

    import gpudra.convert.converter as converter

    root = tmp_path / "tree"
    gen_tree.generate(str(root), files=150, seed=5, gpu_percent=10, decoy_percent=5,
                      avg_size=600)
    trees = Path(__file__).resolve().parent / "kustomize" / "trees"
    for case in ("multi-level", "smp-count", "blocked"):
        shutil.copytree(trees / case, root / "zz" / case,
                        ignore=shutil.ignore_patterns("case.yaml"))

    one = _converted(root)
    for name in ("read_all", "list_and_read"):
        monkeypatch.setattr(converter, name, functools.partial(getattr(converter, name),
                                                               pool_from=100))
    assert _converted(root) == one
    assert any("overlays" in c[0] for c in one[1])  # overlays were planned and edited


@pytest.mark.parametrize("pool_from", [100, 100_000])
def test_a_convert_that_copies_nothing_keeps_only_stdin_among_its_inputs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pool_from: int) -> None:
    """Without --output-dir the report names no inputs but stdin, and the listing lets go of
    its entries: a pass started again for a name found late lists the tree anew, and all of
    it converts as before."""
    import gpudra.convert.converter as converter
    from gpudra.convert.planner import ConvertOptions
    from gpudra.dra.versions import DEFAULT

    root = tmp_path / "tree"
    gen_tree.generate(str(root), files=200, seed=11, gpu_percent=20, decoy_percent=5,
                      avg_size=600)
    (root / "zz" / "existing.yaml").parent.mkdir()
    (root / "zz" / "existing.yaml").write_text(  # named like a workload read before it
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"
        "metadata: {name: web-gpu}\nspec:\n  spec:\n    devices:\n      requests:\n"
        "      - name: gpu\n        exactly: {deviceClassName: gpu.nvidia.com}\n")
    (root / "a" / "web.yaml").parent.mkdir()
    (root / "a" / "web.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n"
        "    spec:\n      containers:\n      - name: c\n        image: x\n"
        "        resources: {limits: {nvidia.com/gpu: 1}}\n")
    for name in ("read_all", "list_and_read"):
        monkeypatch.setattr(converter, name, functools.partial(getattr(converter, name),
                                                               pool_from=pool_from))
    passes: list[bool] = []
    relisted = converter._Pass.read

    def counted(self: Any, entries: list, stdin: Any, started: Any = None) -> None:
        passes.append(started is None and bool(entries))
        relisted(self, entries, stdin, started)

    monkeypatch.setattr(converter._Pass, "read", counted)
    kept = converter.convert_paths([str(root)], ConvertOptions(DEFAULT))
    bare = converter.convert_paths([str(root)], ConvertOptions(DEFAULT), keep_inputs=False)
    assert passes == [False, True, False, True]  # each run: its listing, then a relisting
    assert len(kept.inputs) == kept.files_scanned > 200 and bare.inputs == ()
    def seen(report: Any) -> tuple:
        return (report.results, [(c.label, c.old, c.new, c.created) for c in report.changes],
                report.errors, report.files_scanned, report.documents_parsed, report.skipped)

    assert seen(bare) == seen(kept)
    assert any("web-gpu-2" in r.created for r in kept.results)  # web-gpu was taken
    stdin = converter.convert_paths(["-"], ConvertOptions(DEFAULT), keep_inputs=False,
                                    stdin=lambda: (root / "a" / "web.yaml").read_bytes())
    assert [e.label for e in stdin.inputs] == ["-"] and stdin.changes


def _converted(root: Path) -> tuple:
    """What a convert of `root` reports, every part of it that a reader can see."""
    from gpudra.convert.converter import convert_paths
    from gpudra.convert.planner import ConvertOptions
    from gpudra.dra.versions import DEFAULT

    report = convert_paths([str(root)], ConvertOptions(DEFAULT))
    return (report.results, [(c.label, c.old, c.new) for c in report.changes],
            report.errors, report.files_scanned, report.inputs, report.documents_parsed,
            report.skipped)


def test_an_inventory_keeps_its_order_while_a_lists_items_wait_for_its_text_to_go() -> None:
    from gpudra.plan.run import _lists_after_their_text

    given = [({"n": "a"}, False), ({"n": "i1"}, True), ({"n": "i2"}, True), ({"n": "b"}, False),
             ({"n": "i3"}, True)]
    read: list[str] = []

    def reading() -> Any:
        for data, in_list in given:
            read.append(data["n"])
            yield data, in_list

    stream = _lists_after_their_text(reading())
    assert next(stream) == {"n": "a"} and read == ["a"]
    assert next(stream) == {"n": "i1"} and read == ["a", "i1", "i2", "b"]  # past the List
    assert [d["n"] for d in stream] == ["i2", "b", "i3"]
