"""One vocabulary for --strategy across convert, cutover and guard (issue 33's known limits):
the strategy that moves requests into claims is `rewrite` to convert and cutover and `claims`
to guard and the docs, and every command takes both words for it, with the same result; each
--help says so, and cutover's names the riders (workloads that ride the bridge under it)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.run import invoke, said
from tests.verify.generated_fleet import varied_fleet

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = str(ROOT / "examples")


def _fleet(tmp_path: Path) -> list[str]:
    fleet = tmp_path / "fleet.json"
    fleet.write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                 "items": varied_fleet(40, seed=3)}))
    return ["--from", str(fleet), "-o", "json"]


# command -> (the arguments besides --strategy, made in tmp_path; its canonical word, its
# other name for the same strategy)
COMMANDS: dict[str, tuple[Callable[[Path], list[str]], str, str]] = {
    "convert": (lambda _: [EXAMPLES, "--diff", "-o", "json"], "rewrite", "claims"),
    "cutover": (_fleet, "rewrite", "claims"),
    "guard": (lambda _: ["-o", "json"], "claims", "rewrite"),
}


@pytest.mark.parametrize("command", COMMANDS)
def test_both_words_name_one_strategy(command: str, tmp_path: Path) -> None:
    arguments, canonical, other = COMMANDS[command]
    runs = {word: invoke(command, *arguments(tmp_path), "--strategy", word)
            for word in (canonical, other, "bridge")}
    assert runs[canonical].exit_code in (0, 1), said(runs[canonical])
    assert (runs[other].exit_code, runs[other].stdout, runs[other].stderr) == \
        (runs[canonical].exit_code, runs[canonical].stdout, runs[canonical].stderr)
    # the option is read: the other strategy writes something else
    assert runs["bridge"].stdout != runs[canonical].stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_word_is_a_usage_error(command: str, tmp_path: Path) -> None:
    arguments, canonical, other = COMMANDS[command]
    run = invoke(command, *arguments(tmp_path), "--strategy", "claim")
    assert run.exit_code == 2
    # the message names every word the option takes, the alias too
    assert f"--strategy must be {canonical} (also spelled {other}) or bridge, not 'claim'" \
        in said(run)


HELP = [
    ("convert", ("also spelled claims",)),
    ("cutover", ("also spelled claims", "rides the bridge unchanged", "a rider")),
    ("guard", ("also spelled rewrite",)),
]


@pytest.mark.parametrize(("command", "phrases"), HELP, ids=[c for c, _ in HELP])
def test_help_says_the_other_word(command: str, phrases: tuple[str, ...]) -> None:
    text = " ".join(invoke(command, "--help").stdout.split())
    for phrase in phrases:
        assert phrase in text
