"""The HTML report in a real browser (issue 20): headless Chromium loads the pages of the
tests' trees; the DOM it builds shows the JSON report's counts, and a screenshot shows the
charts (the migration bar's colours), not a blank page. Skips without a browser (fails in CI:
tests/report/browser.py)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudra.cli import app
from tests.report import browser
from tests.report.page import Page
from tests.report.test_html import check_counts

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
# The migration bar's colours (gpudra/report/html.css): device plugin and claims
DEVICE_PLUGIN, CLAIMS = (0xD5, 0x5E, 0x00), (0x00, 0x9E, 0x73)


@pytest.fixture(scope="module")
def chromium() -> str:
    return browser.find_browser()


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, tuple[dict, Path]]:
    """JSON and HTML of: the examples tree, a merge of two trees, preflight of the examples."""
    out = tmp_path_factory.mktemp("html")
    runner = CliRunner()

    def both(name: str, *args: str) -> tuple[dict, Path]:
        result = runner.invoke(app, [*args, "-o", f"json={out / name}.json",
                                     "-o", f"html={out / name}.html"])
        assert result.exit_code in (0, 1), result.output
        return json.loads((out / f"{name}.json").read_text()), out / f"{name}.html"

    made = {"examples": both("examples", "audit", str(EXAMPLES), "-q"),
            "apps": both("apps", "audit", str(EXAMPLES / "apps"), "-q"),
            "preflight": both("preflight", "preflight", "--manifests", str(EXAMPLES), "-q")}
    made["fleet"] = both("fleet", "report", "merge", f"{out / 'examples'}.json",
                         f"{out / 'apps'}.json")
    return made


@pytest.fixture(scope="module")
def loaded(chromium, pages, tmp_path_factory) -> dict[str, tuple[Page, Path | None]]:
    """Each page loaded once: its DOM, and for the examples a screenshot."""
    out = tmp_path_factory.mktemp("shots")
    result = {}
    for name, (_, page_file) in pages.items():
        if name == "apps":
            continue  # merged into the fleet page only
        shot = out / f"{name}.png" if name == "examples" else None
        result[name] = (Page(browser.load(chromium, page_file, shot)), shot)
    return result


@pytest.mark.parametrize("name", ["examples", "fleet"])
def test_the_dom_shows_the_json_reports_counts(pages, loaded, name):
    data = pages[name][0]
    page = loaded[name][0]
    check_counts(data, page)
    if name == "fleet":
        rows = page.text_by_id["clusters"]
        for cluster in data["clusters"]:
            assert f"{cluster['name']} {cluster['summary']['gpu_workloads']} " in rows
    assert page.count("details") == len({(f["rule"], f["severity"]) for f in data["findings"]})


def test_preflight_verdicts_in_the_dom(pages, loaded):
    data, page = pages["preflight"][0], loaded["preflight"][0]
    counts = Counter(c["outcome"] for c in data["checks"])
    for status in ("fail", "warn", "unavailable", "pass"):
        assert page.number(f"outcome-{status}") == counts[status]


def test_the_screenshot_shows_the_charts(loaded):
    width, height, pixels = browser.png_pixels(loaded["examples"][1])
    assert (width, height) == (500, 350)  # 1000 x 700 CSS pixels at scale 0.5
    colours = Counter(pixels)
    background, most = colours.most_common(1)[0]
    assert len(colours) > 50, "a blank page or a single colour"
    assert most < 0.97 * len(pixels), f"{most / len(pixels):.0%} of the page is {background}"

    def near(colour: tuple[int, ...]) -> int:
        return sum(n for c, n in colours.items()
                   if all(abs(a - b) <= 8 for a, b in zip(c, colour)))

    # the examples are 5 of 6 on the device plugin, 1 on claims: both parts of the bar drawn
    assert near(DEVICE_PLUGIN) > 2000 and near(CLAIMS) > 200
