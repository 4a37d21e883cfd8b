"""`-o junit`: JUnit XML, so CI test-report views show gpudra next to the test results.

`suite_text` is the one writer of every command's JUnit: audit's cases come from
`audit_cases` below (a line per finding, from its diagnostic), the verdict commands'
(preflight, plan, verify) from `verdict_case`, a case per verdict's diagnostic, which
gpudra.report.outcomes.render_junit calls; both hand it `Case` records.

Audit's suite:

One ``<testsuite name="gpudra">`` whose test cases are the rule catalogue, so the test count is
the same on every run and a rule that stops firing shows up as a fixed test. Failures follow
``--fail-on`` (``RenderOptions.fail_on``), so the report and the exit code never disagree:

* a rule with findings at or above --fail-on fails with a single ``<failure>`` (most JUnit
  readers keep only one per test case); its text lists every finding of the rule as
  ``file:line: message``, and ``type`` carries the highest severity;
* a rule whose findings are all below --fail-on (or any rule with findings under
  ``--fail-on never``) is ``<skipped>``, with a message such as ``2 findings below --fail-on
  warning (highest: info)`` and the same list as its text. Skipped rather than passed with a
  ``<system-out>``: GitLab shows a skipped case's text as the reason it was skipped
  (docs.gitlab.com/ci/testing/unit_test_reports) but a case's system output only when the case
  fails (gitlab-org/gitlab#370760), and GitLab and Jenkins count skipped cases apart from
  passed ones. The findings stay visible and the run stays green;
* a rule disabled in the configuration is ``<skipped/>`` with the message ``disabled in the
  configuration`` (unless it somehow has findings, which are never hidden);
* the extra test case ``inputs`` is in error when an input could not be read or nothing was
  scanned (the same condition that makes the exit code 3), and passes otherwise.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gpudra.k8s.objects import plural
from gpudra.results.diagnostic import Detail, Diagnostic, Level
from gpudra.results.model import ClusterRead, FailOn, Finding, Report, RuleInfo
from gpudra.printable import quote_name
from gpudra.report import RenderOptions
from gpudra.report.summary import summarize

SUITE = "gpudra"
INPUTS_CASE = "inputs"

# XML 1.0 cannot carry most control characters, even escaped; a manifest can contain them.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True, slots=True)
class Mark:
    """What a test case carries when it did not simply pass: a `failure`, a `skipped` or an
    `error` element, with its message, type and text."""

    tag: str  # failure | skipped | error
    message: str
    type: str | None = None
    text: str | None = None


@dataclass(frozen=True, slots=True)
class Case:
    classname: str
    name: str
    mark: Mark | None = None  # None: the case passed


def suite_text(name: str, properties: Iterable[tuple[str, str]], cases: Iterable[Case]) -> str:
    """The one JUnit writer: a testsuite with its properties, its cases and the counts of
    tests, failures, errors and skipped cases. Every command's `-o junit` comes here."""
    suite = ET.Element("testsuite", name=name)
    props = ET.SubElement(suite, "properties")
    for key, value in properties:
        ET.SubElement(props, "property", name=key, value=value)
    elements = [_case_element(case) for case in cases]
    suite.extend(elements)
    for attribute, tag in (("tests", None), ("failures", "failure"), ("errors", "error"),
                           ("skipped", "skipped")):
        count = sum(1 for c in elements if tag is None or c.find(tag) is not None)
        suite.set(attribute, str(count))
    ET.indent(suite)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{ET.tostring(suite, encoding="unicode")}\n'


def _case_element(case: Case) -> ET.Element:
    element = ET.Element("testcase", classname=case.classname, name=_clean(case.name))
    if case.mark is not None:
        attributes = {"message": _clean(case.mark.message)}
        if case.mark.type is not None:
            attributes["type"] = case.mark.type
        mark = ET.SubElement(element, case.mark.tag, attributes)
        if case.mark.text is not None:
            mark.text = _clean(case.mark.text)
    return element


def verdict_case(classname: str, title: str, d: Diagnostic, failing: bool,
                 detail_text: Callable[[Detail], str] = str) -> Case:
    """The case of one verdict of preflight, plan or verify: `id title [subject]`; it fails
    when the verdict fails the run, is skipped with its message when it warns (or is
    unavailable) without failing it, passes otherwise. Its text: the message, the details,
    the fix."""
    name = f"{d.id} {title}" + (f" [{d.subject}]" if d.subject else "")
    fix = [f"fix: {d.remediation}"] if d.remediation else []
    text = "\n".join([d.message, *map(detail_text, d.details), *fix])
    if failing:
        return Case(classname, name, Mark("failure", d.message, d.level.word, text))
    if d.level is not Level.PASS:
        return Case(classname, name, Mark("skipped", f"{d.level.word}: {d.message}", text=text))
    return Case(classname, name)


def render(report: Report, options: RenderOptions) -> str:
    return suite_text(SUITE, _properties(report), audit_cases(report, options.fail_on))


def audit_cases(report: Report, fail_on: FailOn = FailOn.WARNING) -> list[Case]:
    """One case per rule of the catalogue, then any rule missing from it, then `inputs`."""
    by_rule: dict[str, list[Finding]] = defaultdict(list)
    for finding in report.findings:
        by_rule[finding.rule].append(finding)
    cases = [_rule_case(r, by_rule.pop(r.id, []), r.id in report.disabled_rules, fail_on)
             for r in report.rules]
    # Findings of a rule missing from the catalogue must still be reported somewhere.
    cases += [_rule_case(None, by_rule[rule_id], False, fail_on, rule_id)
              for rule_id in sorted(by_rule)]
    cases.append(_inputs_case(report))
    return cases


def _properties(report: Report) -> list[tuple[str, str]]:
    s = summarize(report)
    props = [(name, "unknown" if value is None else str(value))
             for name, value in (("source", s.source),
                                 ("files_scanned", s.files_scanned),
                                 ("documents_parsed", s.documents_parsed),
                                 ("objects_read", s.objects_read),
                                 ("suppressed", s.suppressed),
                                 ("gpu_workloads", s.gpu_workloads),
                                 ("percent_migrated", s.percent_migrated))]
    if report.cluster_read is not None:
        props += cluster_properties(report.cluster_read)
    return props


def cluster_properties(read: ClusterRead) -> list[tuple[str, str]]:
    """`cluster.context`, `cluster.server`, `cluster.read_at` of a live report."""
    return [(f"cluster.{name}", value or "") for name, value in read.as_data().items()]


def _rule_case(info: RuleInfo | None, findings: list[Finding], disabled: bool,
               fail_on: FailOn, rule_id: str = "") -> Case:
    if info is not None:
        classname, name = f"{SUITE}.{_slug(info.category)}", f"{info.id} {info.name}"
    else:
        classname, name = f"{SUITE}.unknown", rule_id
    if findings:
        worst = max((f.severity for f in findings), key=lambda s: s.rank)
        count = plural(len(findings), "finding")
        text = "\n".join(_finding_line(f) for f in findings)
        if fail_on.triggered_by(worst):
            return Case(classname, name, Mark("failure", count, worst.value, text))
        below = ("; --fail-on never" if fail_on is FailOn.NEVER
                 else f" below --fail-on {fail_on.value}")
        return Case(classname, name,
                    Mark("skipped", f"{count}{below} (highest: {worst.value})", text=text))
    if disabled:
        return Case(classname, name, Mark("skipped", "disabled in the configuration"))
    return Case(classname, name)


def _inputs_case(report: Report) -> Case:
    lines = [f"{e.where}: {e.message}" for e in report.errors]
    if report.nothing_read and not report.errors:
        lines.append(report.nothing_read_message)
    mark = None
    if lines:
        message = (plural(len(report.errors), "unreadable input") if report.errors
                   else report.nothing_read_message)
        mark = Mark("error", message, "InputError", "\n".join(lines))
    return Case(f"{SUITE}.{INPUTS_CASE}", INPUTS_CASE, mark)


def _finding_line(f: Finding) -> str:
    """`file:line: message [subject]` of the finding's diagnostic (and its template)."""
    d = f.diagnostic
    file = d.location.file if d.location is not None else None
    line = d.location.line if d.location is not None else None
    where = quote_name(file) if file else "-"
    text = f"{where}:{line}: {d.message}" if line is not None else f"{where}: {d.message}"
    if d.subject:
        text += f" [{d.subject}]"
    if f.template:
        text += f" (template {f.template})"
    return text




def _slug(category: str) -> str:
    # classname is dotted like a Java package; readers split on dots and dislike spaces.
    return re.sub(r"[^A-Za-z0-9]+", "_", category).strip("_").lower() or "rules"



def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)

