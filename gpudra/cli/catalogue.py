"""`gpudra checks`, `gpudra rules`, `gpudra controllers` and `gpudra explain`: what gpudra
checks and converts, and why."""

from __future__ import annotations

import typer

from gpudra.cli.output import (
    CatalogueFormat,
    catalogue_format_option,
    write_checks,
    write_controllers,
    write_explanation,
    write_rules,
)
from gpudra.cli.root import app, guarded
from gpudra.errors import UsageError


@app.command(short_help="List the preflight checks.")
@guarded
def checks(output: str = catalogue_format_option()) -> None:
    """List every preflight check: id, tier, title and what it looks at (docs/checks.md)."""
    write_checks(CatalogueFormat.parse(output, "-o"))


@app.command(short_help="List the audit rules.")
@guarded
def rules(output: str = catalogue_format_option()) -> None:
    """List the rule catalogue: id, default severity, name and summary."""
    try:
        fmt = CatalogueFormat(output)
    except ValueError:
        raise UsageError(f"unknown format {output!r} ({CatalogueFormat.words()})") from None
    write_rules(fmt)


@app.command(short_help="List the controllers whose kinds convert converts.")
@guarded
def controllers(output: str = catalogue_format_option()) -> None:
    """List the controller registry: per kind and API version, whether its controller reads
    nvidia.com/gpu, what convert does (safe, writes, native, blocks) and where that was
    checked. convert blocks custom resources not listed here unless .gpudra.yaml vouches for
    the kind (docs/controllers.md)."""
    write_controllers(CatalogueFormat.parse(output, "-o"))


@app.command(short_help="Explain a rule or a check (GPU101, CLUSTER001).")
@guarded
def explain(rule: str = typer.Argument(..., metavar="ID",
                                       help="A rule id (GPU101) or a preflight check id "
                                            "(CLUSTER001).")) -> None:
    """Print a rule's or a preflight check's documentation: why it matters, what is wrong and
    right, the fix."""
    from gpudra.preflight.docs import explain_id

    write_explanation(explain_id(rule))
