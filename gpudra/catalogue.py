"""The catalogue commands' use case: `gpudra checks`, `rules` and `controllers` list what gpudra
checks, audits and converts; `gpudra explain` gives one rule's or check's documentation.

Each is a request in and a result out, as every command is (docs/architecture.md, the command
seam); nothing here prints. They read gpudra's own packaged tables, never the user's inputs,
so they take no RunContext. Each catalogue is imported when it is asked for: `gpudra checks`
never loads the rules, `gpudra controllers` neither.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from gpudra.results.model import ExitCode

if TYPE_CHECKING:
    from gpudra.controllers.registry import ControllerRow
    from gpudra.preflight.check_records import CheckInfo
    from gpudra.results.model import RuleInfo

# One catalogue's entries, in the order it lists them.
Entries: TypeAlias = "tuple[CheckInfo, ...] | tuple[RuleInfo, ...] | tuple[ControllerRow, ...]"


class Catalogue(enum.Enum):
    CHECKS = "checks"            # the preflight checks
    RULES = "rules"              # the audit rules
    CONTROLLERS = "controllers"  # the controller registry


@dataclass(frozen=True)
class CatalogueRequest:
    catalogue: Catalogue


@dataclass(frozen=True)
class CatalogueResult:
    catalogue: Catalogue
    entries: Entries

    def exit_code(self) -> ExitCode:
        return ExitCode.OK  # a packaged table: nothing to fail or find


def run_catalogue(request: CatalogueRequest) -> CatalogueResult:
    entries: Entries
    if request.catalogue is Catalogue.CHECKS:
        from gpudra.preflight import catalogue as checks

        entries = tuple(checks().values())
    elif request.catalogue is Catalogue.RULES:
        from gpudra.rules import catalogue as rules

        entries = tuple(rules().values())
    else:
        from gpudra.controllers.registry import registry

        entries = registry().rows
    return CatalogueResult(request.catalogue, entries)


@dataclass(frozen=True)
class ExplainRequest:
    id: str  # a rule id (GPU101) or a preflight check id (CLUSTER001), as the user typed it


@dataclass(frozen=True)
class ExplainResult:
    text: str  # Markdown

    def exit_code(self) -> ExitCode:
        return ExitCode.OK


def run_explain(request: ExplainRequest) -> ExplainResult:
    """The documentation of `request.id`; a UsageError naming the closest id for an unknown
    one."""
    from gpudra.preflight.docs import explain_id

    return ExplainResult(explain_id(request.id))
