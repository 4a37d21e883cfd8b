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


RELEASE_LINE = ("v25.3.x, v25.8.x and v25.12.0 as NVIDIA/k8s-dra-driver-gpu, then v0.4.x and "
                "v0.5.0 as kubernetes-sigs/dra-driver-nvidia-gpu")


def test_an_explanation_naming_both_numberings_of_the_driver_orders_them() -> None:
    """issue 36, item 5: `explain GPU605` said "since v25.12.0" beside "since v0.5.0" without
    saying which came first (the driver's releases were renumbered when it moved)."""
    import re

    mixing = []
    for rule_id, info in catalogue().items():
        text = " ".join(info.explanation.split())
        if re.search(r"\bv25\.", text) and re.search(r"\bv0\.\d", text):
            mixing.append(rule_id)
            assert RELEASE_LINE in text, rule_id
    assert "GPU605" in mixing
