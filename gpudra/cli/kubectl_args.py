"""kubectl's global options before the subcommand: `kubectl gpudra --context prod audit`.

kubectl hands a plugin every argument as typed, and kubectl users put the cluster options
first, as they do for `kubectl --context prod get pods`. gpudra's cluster options belong to
each command, so the ones typed before the command are moved after it (issue 36, item 4);
everything else stays where it was, and a command that lacks such an option still says so."""

from __future__ import annotations

from collections.abc import Sequence

# The cluster options gpudra's commands share (gpudra.cli.options), as kubectl spells them.
WITH_VALUE = frozenset({"--kubeconfig", "--context", "-n", "--namespace", "--request-timeout"})
FLAGS = frozenset({"-A", "--all-namespaces", "--all-contexts"})


def global_options_after_command(args: Sequence[str]) -> list[str]:
    """`args` with the cluster options that come before the first word that is not one (the
    command) moved to just after it; unchanged when none comes first, or no command follows."""
    moved: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        name = word.split("=", 1)[0]
        if name in WITH_VALUE and "=" in word or word in FLAGS:
            moved.append(word)
            index += 1
        elif word in WITH_VALUE and index + 1 < len(args):
            moved += args[index:index + 2]
            index += 2
        else:
            break
    if not moved or index >= len(args):
        return list(args)
    return [args[index], *moved, *args[index + 1:]]
