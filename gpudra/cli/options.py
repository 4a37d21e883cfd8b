"""Options that several commands share, declared once, and the typed values they parse to.

Every option that takes one of a fixed set of words is a `Choice` enum. Where typer's own
enum handling would change `--help` or an error message, the option stays a `str` on the
command line and its value is parsed through the enum in the command's request, with the
message the command has always printed."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, TypeVar

import typer

from gpudra.dra.versions import DEFAULT, SUPPORTED_RANGE
from gpudra.errors import UsageError
from gpudra.vocabulary import words

if TYPE_CHECKING:  # loaded by the commands that use them (the cluster's only for cluster work)
    from gpudra.cluster.options import ClusterOptions
    from gpudra.config import Config
    from gpudra.results.baseline import Baseline

_Choice = TypeVar("_Choice", bound="Choice")


_Word = TypeVar("_Word", bound=enum.Enum)


def parse_word(vocabulary: type[_Word], text: str, option: str) -> _Word:
    """The member of `vocabulary` (a CLI Choice, or a core enum such as convert's Strategy)
    whose value is `text` exactly; a UsageError naming `option` otherwise."""
    try:
        return vocabulary(text)
    except ValueError:
        raise UsageError(f"{option} must be {words(vocabulary)}, not {text!r}") from None


class Choice(str, enum.Enum):
    """A word from a fixed vocabulary."""

    @classmethod
    def words(cls) -> str:
        """The values as "a, b or c", in declaration order."""
        return words(cls)

    @classmethod
    def parse(cls: type[_Choice], text: str, option: str) -> _Choice:
        """The member named `text` exactly; a UsageError naming `option` otherwise."""
        return parse_word(cls, text, option)


class SeverityWord(Choice):
    """audit's --fail-on: the severities, and preflight's words for two of them."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    NEVER = "never"
    FAIL = "fail"
    WARN = "warn"


class OutcomeWord(Choice):
    """preflight's --fail-on: the outcomes, and audit's words for two of them."""

    FAIL = "fail"
    WARN = "warn"
    UNAVAILABLE = "unavailable"
    ERROR = "error"
    WARNING = "warning"


# Connection options, declared once for audit, convert --from-cluster, preflight, verify, plan,
# cutover and rbac; only how each command's help words them differs.
def kubeconfig_option(help: str = "Cluster: kubeconfig file.") -> Any:
    return typer.Option(None, "--kubeconfig", metavar="FILE", help=help)


def context_option(help: str = "Cluster: kubeconfig context to use.", many: bool = False
                   ) -> Any:
    """One --context, or (audit) a repeatable one: a list, empty when not given."""
    return typer.Option([] if many else None, "--context", metavar="NAME", help=help)


def namespace_option(help: str = "Cluster: only this namespace's workloads.") -> Any:
    return typer.Option(None, "-n", "--namespace", metavar="NS", help=help)


def all_namespaces_option(help: str = "Cluster: every namespace (the default).") -> Any:
    return typer.Option(False, "-A", "--all-namespaces", help=help)


def request_timeout_option(help: str = "Cluster: per-request timeout.") -> Any:
    return typer.Option(None, "--request-timeout", metavar="DURATION", help=help)


@dataclass(frozen=True)
class Connection:
    """kubectl's connection flags as given on the command line."""

    kubeconfig: Optional[str] = None
    context: Optional[str] = None
    namespace: Optional[str] = None
    request_timeout: Optional[str] = None

    @property
    def given(self) -> bool:
        return any((self.kubeconfig, self.context, self.namespace, self.request_timeout))

    def cluster_options(self) -> ClusterOptions:
        """As ClusterOptions: every namespace unless -n names one. Imported
        here: the Kubernetes client loads only for cluster work."""
        from gpudra.cluster import ClusterOptions, parse_duration

        return ClusterOptions(kubeconfig=self.kubeconfig, context=self.context,
                              namespace=self.namespace, all_namespaces=not self.namespace,
                              request_timeout=parse_duration(self.request_timeout)
                              if self.request_timeout else None)


def exclusive_namespaces(namespace: Optional[str], all_namespaces: bool) -> None:
    if namespace and all_namespaces:
        raise UsageError("choose one of -n/--namespace and -A/--all-namespaces")


# Options most commands have.
def config_option() -> Any:
    return typer.Option(None, "--config", metavar="FILE",
                        help="Config file (default: nearest .gpudra.yaml).")


def quiet_option(help: str = "No progress on stderr.") -> Any:
    return typer.Option(False, "-q", "--quiet", help=help)


def verbose_option() -> Any:
    return typer.Option(False, "-v", "--verbose",
                        help="List skipped documents (not Kubernetes objects).")


def exclude_option(help: str) -> Any:
    return typer.Option([], "--exclude", metavar="GLOB", help=help)


def target_version_option(help: str, default: Optional[str] = str(DEFAULT)) -> Any:
    """--target-version RELEASE, parsed into a TargetVersion by the command's request."""
    return typer.Option(default, "--target-version", metavar=SUPPORTED_RANGE, help=help)


# Audit options that preflight --manifests passes on to the audit, declared once.
def strict_option(help: str) -> Any:
    return typer.Option(False, "--strict", help=help)


def baseline_option(help: str) -> Any:
    return typer.Option(None, "--baseline", metavar="FILE", help=help)


def load_cfg(paths: Sequence[str], config: Optional[Path], strict: bool = False) -> Config:
    """The nearest .gpudra.yaml (or --config), checked against the rule catalogue;
    --strict on top of the config's own `strict:`."""
    from dataclasses import replace

    from gpudra.config import config_for, load_config
    from gpudra.rules import catalogue

    cfg = load_config(config_for(list(paths), config), catalogue())
    return replace(cfg, strict=True) if strict else cfg


def load_baseline(path: Optional[Path]) -> Optional[Baseline]:
    if path is None:
        return None
    from gpudra.results.baseline import load_baseline as load

    return load(path)
