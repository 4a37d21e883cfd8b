"""Each rule's explanation is a Markdown file beside the rules (gpudra/rules/explanations),
shipped with the package; none is missing, none is left over."""

from __future__ import annotations

from importlib import resources

from gpudra.rules import catalogue


def test_every_rule_explains_itself_from_one_file() -> None:
    folder = resources.files("gpudra.rules") / "explanations"
    files = {entry.name for entry in folder.iterdir() if entry.name.endswith(".md")}
    composed = {"GPU201", "GPU202", "GPU203"}  # share a paragraph: composed in rules/quotas.py
    assert files == {f"{rule_id}.md" for rule_id in catalogue()} - {f"{r}.md" for r in composed}
    for rule_id, info in catalogue().items():
        assert info.explanation and info.explanation == info.explanation.strip(), rule_id
        if rule_id not in composed:
            text = (folder / f"{rule_id}.md").read_text(encoding="utf-8")
            assert text.strip() == info.explanation
