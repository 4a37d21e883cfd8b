"""The values a `values present` line shows for the equality terms convert writes from GFD
labels (`productName.replace(" ", "-") == ...`, `architecture.lowerAscii().replace(...)`) are
the attribute as the term transforms it. gpudra applies the string methods itself
(gpudra.plan.selector_text.apply_chain); the CEL implementation the selectors run on is the
oracle: for each published value, the term must hold for exactly the transformed value."""

from __future__ import annotations

import json

import pytest

from gpudra.dra.cel import SelectorEngine, engine_available
from gpudra.plan.selector_text import apply_chain, string_chain, term_label

ATTR = 'device.attributes["gpu.nvidia.com"]'
VALUES = ["NVIDIA H100 80GB HBM3", "Ada Lovelace", "NVIDIA  A100-SXM4-80GB", " lead", "ÄBC Ünï",
          "MiXeD Case", "", "tab\there"]
CHAINS = ['.replace(" ", "-")', '.lowerAscii().replace(" ", "-")', ".upperAscii()",
          ".replace('-', ' ')", '.replace(" ", "")']


def device(name: str) -> dict:
    return {"driver": "gpu.nvidia.com",
            "attributes": {"gpu.nvidia.com": {"type": "gpu", "productName": name}}}


@pytest.mark.skipif(not engine_available(), reason="the CEL engine is not installed")
@pytest.mark.parametrize("chain", CHAINS)
@pytest.mark.parametrize("value", VALUES)
def test_the_chain_transforms_as_cel_does(chain: str, value: str) -> None:
    transformed = apply_chain(chain, value)
    term = f"{ATTR}.productName{chain} == {json.dumps(transformed)}"
    assert string_chain(term) == chain
    assert SelectorEngine().evaluate(term, device(value)) is True
    other = f"{ATTR}.productName{chain} == {json.dumps(transformed + 'x')}"
    assert SelectorEngine().evaluate(other, device(value)) is False


def test_an_operand_with_quotes_is_not_read_so_no_values_are_shown() -> None:
    """The term parser takes operands without quotes only: such a term gets no `values
    present` line, rather than one computed from a misread operand."""
    assert string_chain(f'{ATTR}.productName.replace(" ", "-") == "a\\"b"') == ""


@pytest.mark.parametrize("term,label", [
    (f'{ATTR}.productName.replace(" ", "-") == "NVIDIA-L4"',
     'productName.replace(" ", "-") == "NVIDIA-L4"'),
    (f'{ATTR}.architecture.lowerAscii().replace(" ", "-") in ["hopper", "ada-lovelace"]',
     'architecture.lowerAscii().replace(" ", "-") in ["hopper", "ada-lovelace"]'),
    (f'{ATTR}.productName == "NVIDIA L4"', 'productName == "NVIDIA L4"'),
])
def test_the_term_is_labelled_with_its_chain(term: str, label: str) -> None:
    assert term_label(term) == label
