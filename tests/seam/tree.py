"""The 10,000-file tree (benchmarks/gen_tree.py, fixed seed): audit, convert and preflight
--manifests outputs hashed and compared with record/tree.json. Too slow for CI (minutes on two
cores); run by hand before a refactor merges:

    python -m tests.seam tree            # compare
    python -m tests.seam tree --record   # record again (an intended change)
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.seam.cases import CHECKOUT
from tests.seam.masks import apply, masks_for

TREE_RECORD = Path(__file__).with_name("record") / "tree.json"
GENERATOR = CHECKOUT / "benchmarks" / "gen_tree.py"
FILES, SEED = 10_000, 1
RUNS: tuple[tuple[str, ...], ...] = (
    ("audit", "tree", "-o", "json"),
    ("audit", "tree", "-o", "sarif"),
    ("audit", "tree"),
    ("convert", "tree", "--diff"),
    ("convert", "tree", "--output-dir", "out", "-o", "json"),
    ("preflight", "--manifests", "tree", "-o", "json"),
)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def hashes(work: Path) -> dict[str, object]:
    """Each run's exit code, stderr (masked text) and stdout hash, and the hash of every
    file the runs wrote."""
    subprocess.run([sys.executable, str(GENERATOR), str(work / "tree"), "--files", str(FILES),
                    "--seed", str(SEED)], check=True, capture_output=True)
    env = {**os.environ, "NO_COLOR": "1", "GPUDRA_CACHE_DIR": str(work / ".cache")}
    for name in ("COLUMNS", "LINES", "GPUDRA_DEBUG"):
        env.pop(name, None)
    masks = masks_for(str(work), ())
    found: dict[str, object] = {"files": FILES, "seed": SEED}
    for argv in RUNS:
        done = subprocess.run([sys.executable, "-m", "gpudra", *argv], cwd=work, env=env,
                              capture_output=True, timeout=1800)
        found[" ".join(argv)] = {
            "exit": done.returncode,
            "stderr": _digest(apply(done.stderr.decode("utf-8", "replace"),
                                    masks).encode("utf-8")),
            "stdout": _digest(apply(done.stdout.decode("utf-8", "replace"),
                                    masks).encode("utf-8"))}
        print(f"seam tree: exit {done.returncode}  gpudra {' '.join(argv)}", flush=True)
    found["written"] = _written(work / "out", work / "tree")
    return found


def _written(out: Path, tree: Path) -> dict[str, object]:
    """convert --output-dir copies the whole tree: the count and one digest of every file,
    and each file's own hash only where it differs from the input (the converted ones)."""
    files = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
             if p.is_file()}
    listing = "".join(f"{path} {_digest(data)}\n" for path, data in files.items())
    changed = {path: _digest(data) for path, data in files.items()
               if not (tree / path).is_file() or (tree / path).read_bytes() != data}
    return {"count": len(files), "digest": _digest(listing.encode("utf-8")), "changed": changed}


def compare_tree(write: bool) -> int:
    with tempfile.TemporaryDirectory(prefix="gpudra-seam-tree-") as tmp:
        found = hashes(Path(tmp).resolve())
    if write:
        TREE_RECORD.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
        print(f"seam tree: recorded {TREE_RECORD.relative_to(CHECKOUT)}")
        return 0
    recorded = json.loads(TREE_RECORD.read_text(encoding="utf-8"))
    changed = sorted(k for k in recorded.keys() | found.keys() if recorded.get(k) != found.get(k))
    for key in changed:
        print(f"seam tree: differs: {key}", file=sys.stderr)
        then, now = recorded.get(key), found.get(key)
        if isinstance(then, dict) and isinstance(now, dict):
            for sub in sorted(then.keys() | now.keys()):
                if then.get(sub) != now.get(sub):
                    print(f"  {sub}: recorded {then.get(sub)!r:.200}, now {now.get(sub)!r:.200}",
                          file=sys.stderr)
    print(f"seam tree: {len(RUNS)} runs, {len(changed)} outputs differ")
    return 1 if changed else 0
