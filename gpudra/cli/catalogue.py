"""`gpudra checks`, `gpudra rules`, `gpudra controllers` and `gpudra explain`: what gpudra
checks and converts, and why."""

from __future__ import annotations

import typer

from gpudra.cli.output import (
    CatalogueFormat,
    catalogue_format_option,
    write_catalogue,
    write_explanation,
)
from gpudra.cli.root import app, guarded
from gpudra.errors import UsageError
from gpudra.results.model import ExitCode


def _listed(catalogue: str, fmt: CatalogueFormat) -> ExitCode:
    """One catalogue (a gpudra.catalogue.Catalogue's word) through its run, written in `fmt`.
    gpudra.catalogue is imported here, by the commands that list: its records cost 2 ms at
    start-up, and `gpudra --help` registers these commands without running them."""
    from gpudra.catalogue import Catalogue, CatalogueRequest, run_catalogue

    result = run_catalogue(CatalogueRequest(Catalogue(catalogue)))
    write_catalogue(result, fmt)
    return result.exit_code()


@app.command(short_help="List the preflight checks.")
@guarded
def checks(output: str = catalogue_format_option()) -> ExitCode:
    """List every preflight check: id, tier, title and what it looks at (docs/checks.md)."""
    return _listed("checks", CatalogueFormat.parse(output, "-o"))


@app.command(short_help="List the audit rules.")
@guarded
def rules(output: str = catalogue_format_option()) -> ExitCode:
    """List the rule catalogue: id, default severity, name and summary."""
    try:
        fmt = CatalogueFormat(output)
    except ValueError:
        raise UsageError(f"unknown format {output!r} ({CatalogueFormat.words()})") from None
    return _listed("rules", fmt)


@app.command(short_help="List the controllers whose kinds convert converts.")
@guarded
def controllers(output: str = catalogue_format_option()) -> ExitCode:
    """List the controller registry: per kind and API version, whether its controller reads
    nvidia.com/gpu, what convert does (safe, writes, native, blocks) and where that was
    checked. convert blocks custom resources not listed here unless .gpudra.yaml vouches for
    the kind (docs/controllers.md)."""
    return _listed("controllers", CatalogueFormat.parse(output, "-o"))


@app.command(short_help="Explain a rule or a check (GPU101, CLUSTER001).")
@guarded
def explain(rule: str = typer.Argument(..., metavar="ID",
                                       help="A rule id (GPU101) or a preflight check id "
                                            "(CLUSTER001).")) -> ExitCode:
    """Print a rule's or a preflight check's documentation: why it matters, what is wrong and
    right, the fix."""
    from gpudra.catalogue import ExplainRequest, run_explain

    result = run_explain(ExplainRequest(rule))
    write_explanation(result.text)
    return result.exit_code()
