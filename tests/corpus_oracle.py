"""An independent oracle for corpus tests: where should device requests be reported?

It shares no code with gpudra's sources or workload table: it walks every mapping of every
document and treats any `resources.limits`/`resources.requests` entry as a request, which is
what the workload table plus generic search must reach.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

DEVICE = re.compile(r"^nvidia\.com/(?:gpu(?:\.shared)?|mig-(?:\d+c\.)?\d+g\.\d+gb(?:\.(?:me|gfx|all))*(?:\.shared)?)$")
DEVICE_LINE = re.compile(r"""(?<![\w./-])nvidia\.com/(?:gpu(?:\.shared)?|mig-[0-9cg.]+gb(?:\.(?:me|gfx|all))*(?:\.shared)?)(?![\w./-])["']?\s*:""")
MARKER = re.compile(r"^(?:---|\.\.\.)(?=\s|$)", re.M)
TEMPLATE = re.compile(r"\{\{-?\s*(?:[.$]|/\*|if\b|range\b|include\b|toYaml\b|with\b|end\b|define\b|template\b)")


def expected_lines(path: Path) -> tuple[set[int], bool]:
    """(lines where a device request must be reported, whether the file is a template)."""
    text = path.read_bytes().decode("utf-8-sig")
    lines: set[int] = set()
    templated = False
    starts = [0] + [m.start() for m in MARKER.finditer(text) if m.start()]
    for i, start in enumerate(starts):
        chunk = text[start: starts[i + 1] if i + 1 < len(starts) else len(text)]
        first = text.count("\n", 0, start) + 1
        if "nvidia.com/" not in chunk:
            continue
        try:
            if TEMPLATE.search(chunk):
                raise yaml.YAMLError("template")
            node = yaml.compose(chunk, Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            templated = True
            lines |= _grep(chunk, first)
            continue
        if node is None:
            continue
        data = yaml.safe_load(chunk)
        if not (isinstance(data, dict) and "kind" in data and "apiVersion" in data) and not isinstance(data, list):
            lines |= _grep(chunk, first)  # not an object: reported as text
            continue
        lines |= _walk(node, first)
    return lines, templated


def _grep(chunk: str, first: int) -> set[int]:
    return {first + i for i, line in enumerate(chunk.splitlines())
            if DEVICE_LINE.search(line) and not line.lstrip().startswith("#")}


def _walk(node: yaml.Node, first: int) -> set[int]:
    out: set[int] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, yaml.MappingNode):
            sections = {k.value: v for k, v in current.value if isinstance(k, yaml.ScalarNode)}
            if current.value and any(k in sections for k in ("limits", "requests")):
                keys: dict[str, int] = {}
                for section in ("requests", "limits"):  # limits wins when both are present
                    value = sections.get(section)
                    if isinstance(value, yaml.MappingNode):
                        for k, _ in value.value:
                            if isinstance(k, yaml.ScalarNode) and DEVICE.match(k.value):
                                keys[k.value] = first + k.start_mark.line
                out |= set(keys.values())
            stack.extend(v for _, v in current.value)
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)
    return out
