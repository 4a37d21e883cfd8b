"""`-o junit`: JUnit XML, so CI test-report views show the audit next to the test results.

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

from gpudra.results.model import FailOn, Finding, Report, RuleInfo
from gpudra.k8s.objects import plural
from gpudra.printable import quote_name
from gpudra.report import RenderOptions
from gpudra.report.summary import summarize

SUITE = "gpudra"
INPUTS_CASE = "inputs"

# XML 1.0 cannot carry most control characters, even escaped; a manifest can contain them.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def render(report: Report, options: RenderOptions) -> str:
    suite = testsuite(report, options.fail_on)
    ET.indent(suite)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{ET.tostring(suite, encoding="unicode")}\n'


def testsuite(report: Report, fail_on: FailOn = FailOn.WARNING) -> ET.Element:
    by_rule: dict[str, list[Finding]] = defaultdict(list)
    for finding in report.findings:
        by_rule[finding.rule].append(finding)
    suite = ET.Element("testsuite", name=SUITE)
    suite.append(_properties(report))
    cases = [_rule_case(r, by_rule.pop(r.id, []), r.id in report.disabled_rules, fail_on)
             for r in report.rules]
    # Findings of a rule missing from the catalogue must still be reported somewhere.
    cases += [_rule_case(None, by_rule[rule_id], False, fail_on, rule_id)
              for rule_id in sorted(by_rule)]
    cases.append(_inputs_case(report))
    suite.extend(cases)
    set_counts(suite, cases)
    return suite


def _properties(report: Report) -> ET.Element:
    s = summarize(report)
    props = ET.Element("properties")
    for name, value in (("source", s.source),
                        ("files_scanned", s.files_scanned),
                        ("documents_parsed", s.documents_parsed),
                        ("objects_read", s.objects_read),
                        ("suppressed", s.suppressed),
                        ("gpu_workloads", s.gpu_workloads),
                        ("percent_migrated", s.percent_migrated)):
        ET.SubElement(props, "property", name=name,
                      value="unknown" if value is None else str(value))
    if report.cluster_read is not None:
        for name, value in report.cluster_read.as_data().items():
            ET.SubElement(props, "property", name=f"cluster.{name}", value=value or "")
    return props


def _rule_case(info: RuleInfo | None, findings: list[Finding], disabled: bool,
               fail_on: FailOn, rule_id: str = "") -> ET.Element:
    if info is not None:
        case = ET.Element("testcase", classname=f"{SUITE}.{_slug(info.category)}",
                          name=f"{info.id} {info.name}")
    else:
        case = ET.Element("testcase", classname=f"{SUITE}.unknown", name=rule_id)
    if findings:
        worst = max((f.severity for f in findings), key=lambda s: s.rank)
        count = plural(len(findings), "finding")
        if fail_on.triggered_by(worst):
            element = ET.SubElement(case, "failure", message=count, type=worst.value)
        else:
            below = ("; --fail-on never" if fail_on is FailOn.NEVER
                     else f" below --fail-on {fail_on.value}")
            element = ET.SubElement(case, "skipped",
                                    message=f"{count}{below} (highest: {worst.value})")
        element.text = _clean("\n".join(_finding_line(f) for f in findings))
    elif disabled:
        ET.SubElement(case, "skipped", message="disabled in the configuration")
    return case


def _inputs_case(report: Report) -> ET.Element:
    case = ET.Element("testcase", classname=f"{SUITE}.{INPUTS_CASE}", name=INPUTS_CASE)
    lines = [f"{e.where}: {e.message}" for e in report.errors]
    if report.nothing_read and not report.errors:
        lines.append(report.nothing_read_message)
    if lines:
        message = (plural(len(report.errors), "unreadable input") if report.errors
                   else report.nothing_read_message)
        error = ET.SubElement(case, "error", message=_clean(message), type="InputError")
        error.text = _clean("\n".join(lines))
    return case


def set_counts(suite: ET.Element, cases: list[ET.Element]) -> None:
    """A suite's tests, failures, errors and skipped attributes, counted from its cases."""
    def having(tag: str) -> int:
        return sum(1 for case in cases if case.find(tag) is not None)

    suite.set("tests", str(len(cases)))
    suite.set("failures", str(having("failure")))
    suite.set("errors", str(having("error")))
    suite.set("skipped", str(having("skipped")))


def _finding_line(f: Finding) -> str:
    file = quote_name(f.file) if f.file else "-"
    where = f"{file}:{f.line}" if f.line is not None else file
    obj = "/".join(x for x in (f.context, f.namespace, f.kind, f.name) if x)
    text = f"{where}: {f.message}"
    if obj:
        text += f" [{obj}]"
    if f.template:
        text += f" (template {f.template})"
    return text




def _slug(category: str) -> str:
    # classname is dotted like a Java package; readers split on dots and dislike spaces.
    return re.sub(r"[^A-Za-z0-9]+", "_", category).strip("_").lower() or "rules"



def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)

