"""Every reader of a file opens it through gpudra.regular_file (docs/architecture.md): a FIFO
or device is refused with one clear line instead of blocking the run or never ending, and a
file past the reader's cap is refused before it is read. Before, the kubeconfig, the
kustomization convert extends, the files the overlay planner reads back and the files
cutover's waves read from their staging folder were read with open()/read_bytes(): no cap, no
FIFO guard. Oversized files are sparse (truncate): nothing is written."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from gpudra.cluster.errors import KubeconfigError
from gpudra.cluster.kubeconfig import MAX_KUBECONFIG_BYTES, find_kubeconfig
from gpudra.convert.assembly import _kustomization_change
from gpudra.convert.treeview import TreeView
from gpudra.cutover.manifests import read_converted
from gpudra.errors import GpudraError, UnreadableInputError
from gpudra.sources.file_bytes import MAX_FILE_BYTES

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")


def _kubeconfig(path: Path) -> object:
    return find_kubeconfig(str(path), {})


def _kustomization(path: Path) -> object:
    return _kustomization_change(path.parent, "claims.yaml")


def _tree_view(path: Path) -> object:
    view = TreeView.__new__(TreeView)
    view._pending = {}  # nothing planned: the file is read from the disk
    return view.read(str(path))


def _staged(path: Path) -> object:
    return read_converted(path)


# reader -> (the file name it reads, its cap, the error it raises, the words of its refusal)
READERS: dict[str, tuple[Callable[[Path], object], str, int, type[GpudraError]]] = {
    "kubeconfig": (_kubeconfig, "config", MAX_KUBECONFIG_BYTES, KubeconfigError),
    "kustomization": (_kustomization, "kustomization.yaml", MAX_FILE_BYTES,
                      UnreadableInputError),
    "overlay tree view": (_tree_view, "patch.yaml", MAX_FILE_BYTES, UnreadableInputError),
    "cutover staging": (_staged, "deployment-llm.yaml", MAX_FILE_BYTES, UnreadableInputError),
}
REFUSALS = {"fifo": "not a regular file", "oversized": "larger than"}
# The kustomization convert extends is looked for among regular files (kustomize's own rule):
# a FIFO under its name is no kustomization, passed over unread.
PASSED_OVER = {("kustomization", "fifo")}


@pytest.mark.parametrize("refusal", sorted(REFUSALS))
@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_reader_refuses_a_fifo_and_an_oversized_file(reader: str, refusal: str,
                                                       tmp_path: Path) -> None:
    read, name, cap, error = READERS[reader]
    path = tmp_path / name
    if refusal == "fifo":
        os.mkfifo(path)  # nobody writes: a reader that opens it blocking would hang here
    else:
        with open(path, "wb") as handle:
            handle.truncate(cap + 1)
    if (reader, refusal) in PASSED_OVER:
        assert read(path) is None
        return
    with pytest.raises(error) as raised:
        read(path)
    message = str(raised.value)
    assert REFUSALS[refusal] in message and "\n" not in message
    assert str(path) in message or reader == "kustomization"
