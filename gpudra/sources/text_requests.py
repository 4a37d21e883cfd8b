"""Device requests in text gpudra reads only as text: Helm templates and values files, templated
documents, and documents that are no Kubernetes object (a job spec of another tool, a config
file). The audit's GPU701 and convert's blocked files are both read here, so both count the same
files as GPU workloads and neither counts a label or a zero count.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from gpudra.k8s.devices import DEVICE_NAME_PATTERN
from gpudra.k8s.quantity import parse_device_count
from gpudra.sources.discovery import KUSTOMIZATION_FILES

# Device resource names only, as keys: GFD labels such as nvidia.com/gpu.product are not
# requests, and neither is a name in prose. The value is a template action, or a plain value
# that ends where a flow mapping or sequence does.
_TEXT_REQUEST = re.compile(
    rf"""(?<![\w./-])(?P<name>{DEVICE_NAME_PATTERN})(?![\w./-])["']?\s*:\s*"""
    r"""(?P<value>["']?\{\{.*?\}\}["']?|[^#\n,{}\[\]]*)""")

# A device name as a string inside a template action (`dict (... | default "nvidia.com/gpu")
# $count`): a chart that builds the resource key in the template still asks for devices, with
# a count only the render knows.
_ACTION_REQUEST = re.compile(
    rf"""\{{\{{[^}}]*?["'](?P<name>{DEVICE_NAME_PATTERN})["'][^}}]*\}}\}}""")


@dataclass(frozen=True, slots=True)
class TextRequest:
    """One `nvidia.com/<device>: <count>` key found in text."""

    line: int
    resource: str
    value: str  # as written, quotes stripped; "" when nothing follows the colon
    quantity: int | None  # None: a placeholder or a template action

    @property
    def allocates(self) -> bool:
        """Asks for at least one device; a placeholder may, so it counts."""
        return self.quantity != 0

    @property
    def shown(self) -> str:
        return f"{self.resource}: {self.value}" if self.value else self.resource


def text_requests(file: str, text: str, first_line: int = 1) -> Iterator[TextRequest]:
    """Every device request key in `text`, line by line; none in a kustomization file, whose
    inline patches are read as patches (the overlay audit, convert's overlay planner)."""
    if os.path.basename(file) in KUSTOMIZATION_FILES:
        return
    for offset, line in enumerate(text.splitlines()):
        for match in _TEXT_REQUEST.finditer(line):
            value = match.group("value").strip().strip("'\"")
            count = parse_device_count(value) if value else None
            yield TextRequest(first_line + offset, match.group("name"), value,
                              count.value if count is not None else None)
        if "{{" in line:
            for match in _ACTION_REQUEST.finditer(line):
                yield TextRequest(first_line + offset, match.group("name"), "", None)


def text_allocates(file: str, text: str) -> bool:
    """Whether text gpudra reads only as text is a GPU workload: it asks for a device."""
    return any(r.allocates for r in text_requests(file, text))
