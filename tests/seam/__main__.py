"""python -m tests.seam record [NAME_PART...] | tree [--record]"""

from __future__ import annotations

import subprocess
import sys

from tests.seam import record
from tests.seam.cases import CHECKOUT, all_cases
from tests.seam.run import fake_clusters, run_case

USAGE = "usage: python -m tests.seam record | python -m tests.seam tree [--record]"


def _head() -> str:
    """The commit recorded from, marked when the working tree changes the code under test
    (gpudra/ and its packaging): the record says what it was made from."""
    code = ["gpudra", "pyproject.toml"]
    last = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=CHECKOUT,
                          capture_output=True, text=True, check=False).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", *code], cwd=CHECKOUT,
                           capture_output=True, text=True, check=False).stdout.strip()
    return f"{last or 'unknown'}{' with uncommitted changes' if dirty else ''}"


def record_all() -> None:
    cases = all_cases()
    found: dict[str, dict] = {}
    with fake_clusters({c.cluster for c in cases if c.cluster}) as clusters:
        for case in cases:
            found.setdefault(case.group, {})[case.name] = run_case(case, clusters)
    for group, runs in found.items():
        record.save(group, runs, _head())
        print(f"{group}: {len(runs)} cases -> {record.path_of(group).relative_to(CHECKOUT)}")


def main(argv: list[str]) -> int:
    if argv == ["record"]:
        record_all()
        return 0
    if argv[:1] == ["tree"] and argv[1:] in ([], ["--record"]):
        from tests.seam.tree import compare_tree

        return compare_tree(write=argv[1:] == ["--record"])
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
