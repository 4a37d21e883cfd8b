"""MANIFEST001-004: is a manifest tree ready for a target release's DRA API? (CI, no cluster.)

The checks take the tree's objects (`ManifestObject`, with file and line) and the audit's
findings, so one scan serves the audit rules and these checks alike. Each detail about one
object or finding carries its file and line as data (`Detail.location`): formats that point
at lines (GitHub annotations) read them from there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gpudra.dra.served import GROUP, availability
from gpudra.dra.validate import StrictValidator, UnavailableError, semantic_errors
from gpudra.dra.versions import DEFAULT, TargetVersion
from gpudra.results.diagnostic import Detail, Location
from gpudra.results.model import Finding, InputError, Severity
from gpudra.k8s.objects import ManifestObject, plural
from gpudra.preflight.check_records import CheckInfo, CheckOutcome, CheckResult, Tier, check, result
from gpudra.rules.device_requests import CONVERTIBLE_RULES

DEVICE_PLUGIN_RULES = frozenset(CONVERTIBLE_RULES)
TEMPLATE_RULE = "GPU701"  # a chart or template that requests devices (a zero count does not)
DRA_LINT_PREFIX = "GPU6"
SERVED_RULE = "GPU611"
MAX_SHOWN = 3
# A package index has kubernetes-validate; gpudra itself installs from a checkout.
VALIDATE_EXTRA = ("pip install kubernetes-validate "
                  "(from a gpudra checkout: pip install '.[validate]')")

MANIFEST001 = check(
    "MANIFEST001", "DRA objects use API versions the target serves", Tier.MANIFESTS,
    "Every `resource.k8s.io` object uses a version and kind the target release has, served by "
    "default.",
    """
**Why it matters.** `kubectl apply` of a `resource.k8s.io` object fails when the cluster
does not serve its `apiVersion`: `no matches for kind "ResourceClaim" in version
"resource.k8s.io/v1beta1"`. What exists and what is served by default per release:

| target | versions with ResourceClaim & co. | served by default |
|---|---|---|
| 1.32 | v1beta1, v1alpha3 | none |
| 1.33 | v1beta2, v1beta1, v1alpha3 | none |
| 1.34-1.37 | v1, v1beta2, v1beta1 | v1 |

On 1.32/1.33 every version needs the `DynamicResourceAllocation` feature gate on all
components and `--runtime-config=resource.k8s.io/<version>=true`; on 1.34+ the beta versions
need `--runtime-config` too. Old alpha APIs (`v1alpha2`, classic DRA) exist in none of them.
The message names the flag that would make a version served.

**Outcomes.** *pass*: every DRA object uses a version served by default (or there are none).
*warn*: a version the target has but does not serve by default (the message says which
`--runtime-config` serves it). *fail*: a version or kind the target does not have.
*unavailable*: nothing could be read.

**Fix.** Write the target's default version (`gpudra convert --target-version <release>`
writes `resource.k8s.io/v1` for 1.34+), or enable the version on the API server.
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))

MANIFEST002 = check(
    "MANIFEST002", "DRA objects validate strictly against the target", Tier.MANIFESTS,
    "`resource.k8s.io` objects match the target release's schema with no unknown fields, and "
    "pass the API server's cross-field rules gpudra knows.",
    """
**Why it matters.** The request shape changed between versions (`exactly:` from v1beta2), and
strict decoding rejects fields of another version (`unknown field "deviceClassName"`) while
lenient clients silently drop them. gpudra validates each DRA object against the target
release's strict OpenAPI schemas (kubernetes-validate) and adds cross-field rules the schemas
do not carry: exactly one of `exactly`/`firstAvailable`, the inner `spec` of a
ResourceClaimTemplate, DNS-label request names, pod `resourceClaims` entries with exactly one
source, and container `resources.claims` that name a pod claim.

Strict schemas come from the optional package kubernetes-validate (about 100 MB installed),
so they are an extra: `pip install kubernetes-validate` (from a gpudra checkout:
`pip install '.[validate]'`). Without it the cross-field rules
still run; the check then fails on their errors or says *unavailable*.

Objects whose version the target does not have are left to MANIFEST001.

**Outcomes.** *pass*: everything validates. *fail*: the message names the first problems.
*unavailable*: kubernetes-validate is not installed (and the cross-field rules found
nothing), or there was nothing to read.

**Fix.** `gpudra convert --target-version <release>` repairs what it can tell unambiguously:
it moves ResourceClaims, ResourceClaimTemplates and DeviceClasses to the target's version and
request shape (flat v1beta1 fields under `exactly:` and back), adds a template's missing inner
`spec:`, and rewrites `>=` on quantities and memory read as an attribute in selectors
(docs/convert.md). Correct other fields by hand.
""",
    (CheckOutcome.PASS, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))

MANIFEST003 = check(
    "MANIFEST003", "No workload requests device-plugin GPUs", Tier.MANIFESTS,
    "No container, Helm chart or template still asks for `nvidia.com/gpu`, `nvidia.com/mig-*` "
    "or shared GPUs (audit rules GPU101-GPU103, GPU701).",
    """
**Why it matters.** Once the device plugin is gone from a cluster, pods that still request
`nvidia.com/gpu` stay Pending (unless a DeviceClass maps the name, see CLUSTER009). This check
reuses the audit's findings GPU101 (whole GPUs), GPU102 (MIG), GPU103 (shared GPUs) and GPU701
(a Helm template or values file, or another templated document, that sets one of them to
anything but 0: the chart still renders device-plugin requests); suppressions
(`gpudra.io/ignore`) and `.gpudra.yaml` settings apply as in `gpudra audit`. A file passed on
its own (as pre-commit does) is still recognised as part of a chart by the Chart.yaml above it.

With `--require-migrated` (a CI gate for a migrated repository) a remaining request fails;
without it, it is a warning, so a tree that is being migrated passes with `--fail-on fail`.

**Outcomes.** *pass*: no device-plugin GPU requests. *warn*: some remain (without
`--require-migrated`). *fail*: some remain with `--require-migrated`. *unavailable*: nothing
could be read.

**Fix.** `gpudra convert <path>` rewrites them to ResourceClaims.
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))

MANIFEST004 = check(
    "MANIFEST004", "DRA objects pass gpudra's lint", Tier.MANIFESTS,
    "The audit's DRA rules (GPU601-GPU609) find no errors in the tree's DRA objects.",
    """
**Why it matters.** The audit's GPU6xx rules catch DRA objects that the API server rejects or
that never allocate: request shapes of another version, templates without the inner `spec`,
invalid allocation modes, CEL selectors on attributes the NVIDIA driver does not publish or
comparisons CEL rejects, and pods whose claim references do not resolve. This check turns
those findings into one result: error findings fail, warnings warn (severities follow
`.gpudra.yaml`).

**Outcomes.** *pass*: no GPU6xx finding at warning or error. *warn*: warnings only. *fail*:
at least one error. *unavailable*: nothing could be read.

**Fix.** `gpudra explain GPU6xx` describes each rule and its fix.
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))

MANIFEST_CHECKS = (MANIFEST001, MANIFEST002, MANIFEST003, MANIFEST004)


@dataclass(frozen=True)
class ManifestInput:
    """A tree as read once: its objects, the audit's findings, and what could not be read."""

    objects: tuple[ManifestObject, ...]
    findings: tuple[Finding, ...] = ()
    errors: tuple[InputError, ...] = ()
    files_scanned: int | None = None


@dataclass(frozen=True)
class ManifestOptions:
    target_version: TargetVersion = DEFAULT
    require_migrated: bool = False
    validator: StrictValidator | None = field(default=None, compare=False)


def run_manifest_checks(tree: ManifestInput,
                        options: ManifestOptions = ManifestOptions()) -> tuple[CheckResult, ...]:
    """Every manifests check, in catalogue order."""
    validator = options.validator or StrictValidator(options.target_version)
    return (check_api_versions(tree, options.target_version),
            check_strict_validation(tree, options.target_version, validator),
            check_migrated(tree, options.require_migrated),
            check_dra_lint(tree))


def where(obj: ManifestObject, line: int | None = None, path: str | None = None) -> Location:
    """The object's place: its first line, or the line of the field a problem names."""
    return Location(obj.file, obj.first_line if line is None else line, path)


def describe(obj: ManifestObject, said: str = "", line: int | None = None,
             path: str | None = None) -> Detail:
    """`Kind name` and what is `said` of it, at its place (`file:line Kind name...`)."""
    return Detail(f"{obj.kind} {obj.name or '(unnamed)'}{said}", where(obj, line, path))


_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _at_field(obj: ManifestObject, problem: str) -> Detail:
    """`file:line Kind name: path: message`, the line that of the field the problem names (as
    the audit cites it; issue 36, item 5: MANIFEST002 cited the object's first line)."""
    path_text = problem.split(": ", 1)[0]
    path: tuple[str | int, ...] = ()
    if path_text != "(root)":
        path = tuple(int(index) if index else key
                     for key, index in _SEGMENT.findall(path_text))
    return describe(obj, f": {problem}", obj.line_of(path),
                    None if path_text == "(root)" else path_text)


def dra_objects(objects: Iterable[ManifestObject]) -> list[ManifestObject]:
    return [o for o in objects if not o.listing and o.group == GROUP]


def _unreadable(info: CheckInfo, tree: ManifestInput) -> CheckResult | None:
    """`unavailable` when the tree gave nothing to judge, None otherwise."""
    if tree.objects or tree.files_scanned:
        return None
    first = f": {tree.errors[0].where}: {tree.errors[0].message}" if tree.errors else ""
    return result(info, CheckOutcome.UNAVAILABLE,
                  f"nothing was read ({plural(len(tree.errors), 'input error')}{first})",
                  "check the paths given", details=[f"{e.where}: {e.message}"
                                                    for e in tree.errors])


def _errors_note(tree: ManifestInput) -> list[str]:
    return [f"not read: {e.where}: {e.message}" for e in tree.errors]


def _all(n: int) -> str:
    return "the DRA object" if n == 1 else f"all {n} DRA objects"


def _verb(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


def _shown(lines: Sequence[str | Detail]) -> str:
    head = "; ".join(map(str, lines[:MAX_SHOWN]))
    return head + (f"; and {len(lines) - MAX_SHOWN} more" if len(lines) > MAX_SHOWN else "")


def check_api_versions(tree: ManifestInput, target: TargetVersion) -> CheckResult:
    unreadable = _unreadable(MANIFEST001, tree)
    if unreadable:
        return unreadable
    objects = dra_objects(tree.objects)
    if not objects:
        return result(MANIFEST001, CheckOutcome.PASS, f"no {GROUP} objects in the tree",
                      details=_errors_note(tree))
    missing: list[Detail] = []
    off: list[Detail] = []
    for obj in objects:
        found = availability(target, obj.api_version, obj.kind)
        if not found.exists:
            missing.append(describe(obj, f" ({obj.api_version}): {found.how_to_enable()}"))
        elif not found.served_by_default:
            off.append(describe(obj, f" ({obj.api_version}): not served by default in "
                                     f"{target}: {found.how_to_enable()}"))
    details: list[str | Detail] = [*missing, *off, *_errors_note(tree)]
    if missing:
        return result(MANIFEST001, CheckOutcome.FAIL,
                      f"{len(missing)} of {plural(len(objects), 'DRA object')} "
                      f"{_verb(len(missing), 'uses a version', 'use versions')} Kubernetes "
                      f"{target} does not have: {_shown(missing)}",
                      f"rewrite them for {target}: gpudra convert --target-version {target}",
                      details=details)
    if off:
        return result(MANIFEST001, CheckOutcome.WARN,
                      f"{len(off)} of {plural(len(objects), 'DRA object')} "
                      f"{_verb(len(off), 'uses a version', 'use versions')} Kubernetes "
                      f"{target} does not serve by default: {_shown(off)}",
                      f"enable them on the API server as named, or write "
                      f"{target.resource_api_version}" if target.served_by_default else
                      f"enable DRA on the API server as named ({target} serves no {GROUP} version "
                      "by default)", details=details)
    return result(MANIFEST001, CheckOutcome.PASS,
                  f"{_all(len(objects))} {_verb(len(objects), 'uses a version', 'use versions')}"
                  f" Kubernetes {target} serves by default" if target.served_by_default else
                  f"{_all(len(objects))} {_verb(len(objects), 'uses a version', 'use versions')}"
                  f" Kubernetes {target} has",
                  details=details)


def check_strict_validation(tree: ManifestInput, target: TargetVersion,
                            validator: StrictValidator | None = None) -> CheckResult:
    unreadable = _unreadable(MANIFEST002, tree)
    if unreadable:
        return unreadable
    validator = validator or StrictValidator(target)
    problems: list[Detail] = []
    skipped: list[str] = []
    schema_missing: str | None = None
    checked = 0
    for obj in tree.objects:
        if obj.listing:
            continue
        if obj.group != GROUP:
            problems += [_at_field(obj, e) for e in semantic_errors(obj.data)]
            continue
        if not availability(target, obj.api_version, obj.kind).exists:
            skipped.append(f"not validated (see MANIFEST001): {describe(obj)}")
            continue
        checked += 1
        if schema_missing is None:
            try:
                problems += [_at_field(obj, e) for e in validator.errors(obj.data)]
                continue
            except UnavailableError as exc:
                schema_missing = str(exc)
        problems += [_at_field(obj, e) for e in semantic_errors(obj.data)]
    details: list[str | Detail] = [*problems, *skipped, *_errors_note(tree)]
    if problems:
        # Without the schemas only the cross-field rules ran: the fix of what they found is
        # not the whole story, so the failure says what was not checked and how to check it.
        unchecked = [] if schema_missing is None else [
            f"strict schema validation was not run: {' '.join(schema_missing.split())}"]
        return result(MANIFEST002, CheckOutcome.FAIL,
                      f"{plural(len(problems), 'validation error')} against Kubernetes {target}: "
                      f"{_shown(problems)}", f"gpudra convert --target-version {target} "
                      "repairs request shapes, a template's missing inner spec and old "
                      "versions; correct other fields by hand"
                      + ("" if schema_missing is None else
                         f"; for the strict schemas too: {VALIDATE_EXTRA}"),
                      details=[*details, *unchecked])
    if schema_missing is not None:
        return result(MANIFEST002, CheckOutcome.UNAVAILABLE,
                      f"cross-field rules pass, but strict schema validation is unavailable: "
                      f"{' '.join(schema_missing.split())}", VALIDATE_EXTRA, details=details)
    return result(MANIFEST002, CheckOutcome.PASS,
                  f"{plural(checked, 'DRA object')} {_verb(checked, 'validates', 'validate')} "
                  f"strictly against Kubernetes {target}"
                  if checked else f"no {GROUP} object to validate for Kubernetes {target}",
                  details=details)


def check_migrated(tree: ManifestInput, require_migrated: bool = False) -> CheckResult:
    unreadable = _unreadable(MANIFEST003, tree)
    if unreadable:
        return unreadable
    remaining = [f for f in tree.findings if f.rule in DEVICE_PLUGIN_RULES
                 or (f.rule == TEMPLATE_RULE and f.quantity != 0)]
    if not remaining:
        return result(MANIFEST003, CheckOutcome.PASS, "no workload requests device-plugin GPUs",
                      details=_errors_note(tree))
    lines = [_finding_line(f) for f in remaining]
    files = {f.file for f in remaining}
    outcome = CheckOutcome.FAIL if require_migrated else CheckOutcome.WARN
    note = "" if require_migrated else " (not required: --require-migrated is off)"
    return result(MANIFEST003, outcome,
                  f"{plural(len(remaining), 'device-plugin GPU request')} "
                  f"{_verb(len(remaining), 'remains', 'remain')} in "
                  f"{plural(len(files), 'file')}{note}: {_shown(lines)}",
                  "gpudra convert <path> rewrites them to ResourceClaims",
                  details=[*lines, *_errors_note(tree)])


def check_dra_lint(tree: ManifestInput) -> CheckResult:
    unreadable = _unreadable(MANIFEST004, tree)
    if unreadable:
        return unreadable
    lint = [f for f in tree.findings if f.rule.startswith(DRA_LINT_PREFIX)
            and f.rule != SERVED_RULE]  # versions are MANIFEST001's
    errors = [f for f in lint if f.severity is Severity.ERROR]
    warnings = [f for f in lint if f.severity is Severity.WARNING]
    details: list[str | Detail] = [*map(_finding_line, lint), *_errors_note(tree)]
    if errors:
        return result(MANIFEST004, CheckOutcome.FAIL,
                      f"{plural(len(errors), 'DRA lint error')}: "
                      f"{_shown([_finding_line(f) for f in errors])}",
                      f"gpudra explain {errors[0].rule}", details=details)
    if warnings:
        return result(MANIFEST004, CheckOutcome.WARN,
                      f"{plural(len(warnings), 'DRA lint warning')}: "
                      f"{_shown([_finding_line(f) for f in warnings])}",
                      f"gpudra explain {warnings[0].rule}", details=details)
    return result(MANIFEST004, CheckOutcome.PASS,
                  "the DRA objects pass gpudra's lint (GPU601-GPU609)", details=details)


def _finding_line(finding: Finding) -> Detail:
    """`file:line RULE: message`: the audit's finding at its place (the file alone when the
    finding has no line; `-` when it has no file)."""
    text = f"{finding.rule}: {finding.message}"
    if finding.file is None:
        return Detail(f"- {text}")
    return Detail(text, Location(finding.file, finding.line or None, finding.path))
