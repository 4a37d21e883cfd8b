"""The groups .ci/run's two pytest workers share tests by (tests/support/workers.py): one
group per directory that shares clusters, one per other module, the longest groups first."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.support import workers

TESTS = workers.TESTS

GROUPS = [
    ("journey/test_gke_journey.py", "journey"),
    ("journey/test_kwok.py", "journey"),
    ("controlplane/test_dry_run.py", "controlplane"),
    ("controlplane/test_client.py", "controlplane"),
    ("cluster/test_cluster_audit.py", "cluster/test_cluster_audit.py"),
    ("test_docs_commands.py", "test_docs_commands.py"),
]


@pytest.mark.parametrize(("path", "group"), GROUPS)
def test_group_of_a_test_file(path: str, group: str) -> None:
    assert workers.group_of(TESTS / path) == group


class _Item(SimpleNamespace):
    def add_marker(self, mark: pytest.MarkDecorator) -> None:
        self.marks.append(mark)


def _items(paths: list[str]) -> list[_Item]:
    return [_Item(path=TESTS / path, name=f"{path}#{index}", marks=[])
            for index, path in enumerate(paths)]


ORDERS = [
    # collection order -> the order handed to xdist (journey, then controlplane, then the rest
    # as collected; each group's tests in their own order)
    (["cluster/a.py", "controlplane/b.py", "dra/c.py", "journey/d.py", "journey/e.py",
      "controlplane/f.py", "test_g.py"],
     ["journey/d.py", "journey/e.py", "controlplane/b.py", "controlplane/f.py",
      "cluster/a.py", "dra/c.py", "test_g.py"]),
    (["test_a.py", "test_b.py"], ["test_a.py", "test_b.py"]),
    ([], []),
]


@pytest.mark.parametrize(("collected", "handed"), ORDERS)
def test_whole_directories_go_first_and_every_test_is_marked(collected: list[str],
                                                              handed: list[str]) -> None:
    items = _items(collected)
    ordered = workers.assign(items)
    assert [Path(item.path).relative_to(TESTS).as_posix() for item in ordered] == handed
    assert sorted(item.name for item in ordered) == sorted(item.name for item in items)
    assert [[(m.name, m.args) for m in item.marks] for item in ordered] == [
        [("xdist_group", (workers.group_of(Path(item.path)),))] for item in ordered]
