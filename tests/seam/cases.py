"""Every recorded run, as data: what it runs, in which prepared working directory.

A case names the trees copied into its fresh working directory (`trees`: destination ->
source, relative to the checkout), the fake cluster whose kubeconfig is $KUBECONFIG (`cluster`,
a state under tests/fakeapi/testdata, or None: then $KUBECONFIG points at nothing), stdin (a
file of the working directory) and the argv. Paths in argv are relative to the working
directory, so the outputs that print them are stable."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

CHECKOUT = Path(__file__).resolve().parents[2]
GOLDEN = CHECKOUT / "tests" / "convert" / "golden"
EXAMPLES_CLUSTER = "examples-cluster.yaml"
SMALL_CLUSTER = "cluster.yaml"

AUDIT_FORMATS = ("table", "json", "yaml", "sarif", "junit", "markdown", "github", "html")
CHECK_FORMATS = ("table", "json", "junit", "markdown", "github", "html")


@dataclass(frozen=True)
class Case:
    group: str  # the record file it is stored in
    name: str
    argv: tuple[str, ...]
    trees: tuple[tuple[str, str], ...] = ()
    cluster: str | None = None
    stdin: str | None = None
    fixtures: tuple[str, ...] = field(default=())  # named extra inputs, see run.FIXTURES


def _examples() -> Iterator[Case]:
    ex = (("examples", "examples"),)
    conv_in = (("examples", "examples"), ("converted", "examples"))

    def case(name: str, *argv: str, trees=ex, **kw) -> Case:
        return Case("examples", name, argv, trees, **kw)

    yield case("version", "--version", trees=())
    yield case("help", "--help", trees=())
    for command in ("audit", "convert", "preflight", "plan", "verify", "cutover", "guard",
                    "checks", "rules", "controllers", "explain", "rbac", "report"):
        yield case(f"help-{command}", command, "--help", trees=())
    yield case("help-report-merge", "report", "merge", "--help", trees=())
    for fmt in AUDIT_FORMATS:
        yield case(f"audit-{fmt}", "audit", "examples", "-o", fmt)
    for fail_on in ("error", "warning", "info", "never"):
        yield case(f"audit-fail-on-{fail_on}", "audit", "examples", "--fail-on", fail_on,
                   "-o", "json")
    for fail_on in ("error", "info", "never"):
        for fmt in ("junit", "github", "sarif"):
            yield case(f"audit-{fmt}-fail-on-{fail_on}", "audit", "examples", "-o", fmt,
                       "--fail-on", fail_on)
    yield case("audit-stdin", "audit", "-", stdin="examples/apps/inference.yaml")
    yield case("audit-many-outputs", "audit", "examples", "-o", "table", "-o", "json=r.json",
               "-o", "sarif=r.sarif", "-o", "junit=r.xml", "-o", "html=r.html")
    yield case("audit-target-1.32", "audit", "examples", "--target-version", "1.32",
               "-o", "json")
    yield case("audit-write-baseline", "audit", "examples", "--write-baseline", "base.json",
               "-o", "json")
    yield case("audit-verbose", "audit", "examples", "-v")
    yield case("audit-missing-path", "audit", "nope")
    yield case("audit-bad-format", "audit", "examples", "-o", "pdf")
    yield case("convert-diff", "convert", "examples", "--diff")
    yield case("convert-diff-json", "convert", "examples", "--diff", "-o", "json")
    yield case("convert-check", "convert", "examples", "--check")
    yield case("convert-stdin", "convert", "-", stdin="examples/apps/training-job.yaml")
    yield case("convert-in-place", "convert", "converted", trees=conv_in)
    yield case("convert-in-place-json", "convert", "converted", "-o", "json", trees=conv_in)
    yield case("convert-output-dir", "convert", "examples", "--output-dir", "out", "-o", "json")
    yield case("convert-bridge", "convert", "examples", "--strategy", "bridge", "--diff")
    yield case("convert-shared-1.33", "convert", "examples", "--claim-mode", "shared",
               "--target-version", "1.33", "--output-dir", "out")
    yield case("convert-options", "convert", "examples", "--keep-node-selectors",
               "--add-toleration", "--min-memory", "40Gi", "--product", "NVIDIA-A100",
               "--claims-file", "claims.yaml", "--admin-access", "--output-dir", "out")
    for fmt in CHECK_FORMATS:
        yield case(f"preflight-manifests-{fmt}", "preflight", "--manifests", "examples",
                   "-o", fmt)
    yield case("preflight-require-migrated", "preflight", "--manifests", "examples",
               "--require-migrated", "-o", "json")
    for fail_on in ("fail", "warn", "unavailable", "error", "warning"):
        yield case(f"preflight-fail-on-{fail_on}", "preflight", "--manifests", "examples",
                   "--fail-on", fail_on)
    for fmt in ("junit", "github", "markdown", "table"):
        yield case(f"preflight-skip-{fmt}", "preflight", "--manifests", "examples", "--skip",
                   "MANIFEST001,MANIFEST003", "--fail-on", "warn", "-o", fmt)
        yield case(f"preflight-skip-all-{fmt}", "preflight", "--manifests", "examples",
                   "--skip", "all", "-o", fmt)
    for fail_on in ("unavailable", "warning"):
        for fmt in ("junit", "github"):
            yield case(f"preflight-{fmt}-fail-on-{fail_on}", "preflight", "--manifests",
                       "examples", "--fail-on", fail_on, "-o", fmt)
    yield case("preflight-node", "preflight", "--node", "--host-root", "host", "-o", "json",
               fixtures=("host",))
    for fmt in CHECK_FORMATS:
        yield case(f"plan-inventory-{fmt}", "plan", "examples", "--inventory", "nodes.yaml",
                   "-o", fmt, fixtures=("nodes",))
    yield case("plan-full-matches", "plan", "examples", "--inventory", "nodes.yaml",
               "--full-matches", "-o", "json", "--consumable-shares", "unlimited",
               fixtures=("nodes",))
    for fmt in ("table", "json", "markdown"):
        for command in ("checks", "rules", "controllers"):
            yield case(f"{command}-{fmt}", command, "-o", fmt, trees=())
    for rule in ("GPU101", "GPU611", "nope"):
        yield case(f"explain-{rule}", "explain", rule, trees=())
    yield case("rbac", "rbac", trees=())
    yield case("rbac-options", "rbac", "--name", "auditor", "-n", "ops", "--user", "alice",
               "--report-configmap", "gpu-report", trees=())
    yield case("guard", "guard", trees=())
    for strategy in ("claims", "bridge"):
        yield case(f"guard-{strategy}-deny-json", "guard", "--strategy", strategy, "--action",
                   "deny", "-o", "json", "--output-dir", "guard", trees=())
    yield case("report-merge", "report", "merge", "a.json", "b.json", "-o", "json",
               fixtures=("reports",))
    for fail_on in ("info", "never", "error"):
        yield case(f"report-merge-fail-on-{fail_on}", "report", "merge", "a.json", "b.json",
                   "-o", "json", "--fail-on", fail_on, fixtures=("reports",))
    for fmt in ("markdown", "html"):
        yield case(f"report-merge-{fmt}", "report", "merge", "a.json", "b.json", "-o", fmt,
                   "--fail-on", "warning", fixtures=("reports",))
    yield case("cutover-from-fleet", "cutover", "--from", "fleet.json", "-o", "json",
               "--output-dir", "waves", trees=(), fixtures=("fleet",))
    yield case("cutover-from-fleet-markdown", "cutover", "--from", "fleet.json", "-o",
               "markdown", "--max-wave-nodes", "3", trees=(), fixtures=("fleet",))
    yield case("cutover-from-fleet-bridge", "cutover", "--from", "fleet.json", "--strategy",
               "bridge", trees=(), fixtures=("fleet",))


def _clusters() -> Iterator[Case]:
    for state in (EXAMPLES_CLUSTER, SMALL_CLUSTER):
        tag = Path(state).stem

        def case(name: str, *argv: str, trees=(), **kw) -> Case:
            return Case("clusters", f"{tag}-{name}", argv, trees,  # noqa: B023 (this iteration)
                        cluster=state, **kw)  # noqa: B023

        for fmt in ("table", "json", "sarif"):
            yield case(f"audit-{fmt}", "audit", "-o", fmt)
        yield case("audit-namespace", "audit", "-n", "ml", "-o", "json")
        for fmt in ("junit", "github", "markdown"):
            yield case(f"audit-{fmt}", "audit", "-o", fmt)
        for fmt in ("table", "json", "junit", "github", "markdown", "html"):
            yield case(f"preflight-{fmt}", "preflight", "-o", fmt)
            yield case(f"plan-{fmt}", "plan", "-o", fmt)
            yield case(f"verify-{fmt}", "verify", "-o", fmt)
        for fmt in ("json", "junit", "github", "markdown"):
            yield case(f"verify-decommission-{fmt}", "verify", "--decommission", "-o", fmt)
        yield case("plan-converted", "plan", "examples", "-o", "json",
                   trees=(("examples", "examples"),))
        yield case("convert-from-cluster", "convert", "--from-cluster", "--output-dir",
                   "exported", "-o", "json")
        for fmt in ("table", "markdown"):
            yield case(f"cutover-{fmt}", "cutover", "-o", fmt)
        yield case("cutover-json-output-dir", "cutover", "-o", "json", "--output-dir", "waves")
        yield case("cutover-bridge-output-dir", "cutover", "--strategy", "bridge",
                   "--output-dir", "waves")
        yield case("cutover-bridge-1.36", "cutover", "--strategy", "bridge", "--target-version",
                   "1.36", "-o", "json", "--output-dir", "waves")


def _goldens() -> Iterator[Case]:
    for folder in sorted(p for p in GOLDEN.iterdir() if (p / "case.yaml").is_file()):
        spec = yaml.safe_load((folder / "case.yaml").read_text(encoding="utf-8")) or {}
        args = tuple(str(a) for a in spec.get("args") or ())
        tree = (("before", str((folder / "before").relative_to(CHECKOUT))),)

        def case(name: str, *argv: str) -> Case:
            return Case("golden", f"{folder.name}-{name}", argv, tree)  # noqa: B023 (this iteration)

        yield case("convert", "convert", "before", *args, "-o", "json")
        yield case("diff", "convert", "before", "--diff", *args)
        yield case("audit", "audit", "before", "-o", "json")
        yield case("audit-junit", "audit", "before", "-o", "junit", "--fail-on", "info")


def all_cases() -> list[Case]:
    cases = [*_examples(), *_clusters(), *_goldens()]
    names = [(c.group, c.name) for c in cases]
    if len(set(names)) != len(names):
        raise ValueError("two seam cases share a name")
    return cases
