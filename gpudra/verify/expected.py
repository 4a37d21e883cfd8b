"""What a cutover wave moves, read from the wave's folder (`cutover --output-dir DIR` writes
DIR/wave-N, gpudra/cutover/manifests.py): `verify --wave-of DIR/wave-N` then fails a workload
the wave moves that is still on the device plugin, or not there at all.

The folder is untrusted input: only regular files ending in .yaml/.yml under
converted/replace/ and converted/recreate/ (and, under `cutover --strategy bridge`,
bridged/replace/ and bridged/recreate/: the workloads the wave leaves unchanged for the
bridge) are read, each at most MAX_FILE bytes and MAX_FILES
of them, every document a Kubernetes object with a kind and a name; anything else is refused
with the file and the reason (UnreadableInputError), since a wave read in part would pass
workloads it was meant to check.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpudra.errors import UnreadableInputError, UsageError
from gpudra.input_files import read_small

MOVED_FOLDERS = ("converted/replace", "converted/recreate", "bridged/replace",
                 "bridged/recreate")
MAX_FILE = 4 << 20
MAX_FILES = 20_000
_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True, slots=True, order=True)
class MovedWorkload:
    namespace: str
    kind: str
    name: str
    file: str  # the wave file that moves it, for the reason
    recreated: bool = False  # under */recreate/: deleted, then created again
    bridged: bool = False    # under bridged/: left unchanged, for the bridge to serve

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.namespace, self.kind, self.name)


@dataclass(frozen=True, slots=True)
class ExpectedWave:
    folder: str
    workloads: tuple[MovedWorkload, ...]


def read_wave(folder: str) -> ExpectedWave:
    """The workloads the wave in `folder` moves. Raises UsageError when `folder` is not a
    wave folder, UnreadableInputError when a file in it cannot be read."""
    root = Path(folder)
    parts = [root / sub for sub in MOVED_FOLDERS]
    if not ((root / "converted").is_dir() or (root / "bridged").is_dir()):
        raise UsageError(f"--wave-of {folder}: not a wave folder of gpudra cutover --output-dir "
                         "(it has no converted/ or bridged/ folder)")
    files = sorted((f, part.name == "recreate", part.parent.name == "bridged")
                   for part in parts if part.is_dir() for f in _yaml_files(part))
    if len(files) > MAX_FILES:
        raise UnreadableInputError(f"{folder}: more than {MAX_FILES} files under "
                                   f"{' and '.join(MOVED_FOLDERS)}: not a wave gpudra wrote")
    moved: dict[tuple[str, str, str], MovedWorkload] = {}
    for path, recreated, bridged in files:
        for workload in _workloads_in(path, recreated, bridged):
            moved.setdefault(workload.key, workload)
    return ExpectedWave(folder, tuple(sorted(moved.values())))


def _yaml_files(top: Path) -> list[Path]:
    found: list[Path] = []
    for directory, subdirs, names in os.walk(top, followlinks=False):
        subdirs.sort()
        found += [Path(directory, n) for n in names if n.endswith(_SUFFIXES)]
        if len(found) > MAX_FILES:
            break
    return found


def _workloads_in(path: Path, recreated: bool, bridged: bool) -> list[MovedWorkload]:
    from gpudra.sources.documents import ParseError, parse_data, split_documents

    data = read_small(str(path), MAX_FILE)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UnreadableInputError(f"{path}: cannot read: not UTF-8 text") from None
    out = []
    for chunk in split_documents(text):
        try:
            document = parse_data(chunk).data
        except ParseError as exc:
            raise UnreadableInputError(f"{path}:{exc.line or 1}: {exc.message}") from None
        if document is None:
            continue
        out.append(_workload(document, path, recreated, bridged))
    return out


def _workload(document: Any, path: Path, recreated: bool, bridged: bool) -> MovedWorkload:
    metadata = document.get("metadata") if isinstance(document, dict) else None
    kind = document.get("kind") if isinstance(document, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    namespace = metadata.get("namespace", "") if isinstance(metadata, dict) else None
    if not (isinstance(kind, str) and kind and isinstance(name, str) and name
            and isinstance(namespace, str)):
        raise UnreadableInputError(f"{path}: not a Kubernetes object with a kind, a name and "
                                   "a namespace: not a workload gpudra cutover wrote")
    return MovedWorkload(namespace, kind, name, str(path), recreated, bridged)
