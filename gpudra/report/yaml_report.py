"""`-o yaml`: the JSON report's data, as YAML.

Values are hostile text, so a string that holds a control, line-separator, bidirectional or
surrogate character is written double-quoted, where each of them is an escape (`\\n`, `\\e`,
`\\u202e`): a line break inside a value never starts a line of the output, and no line is
folded (the width is unbounded). A string that starts with `::` is quoted too, so that no line
begins with a GitHub Actions command.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from gpudra.results.model import Report
from gpudra.printable import UNSAFE, may_hold_credential, redacted_data
from gpudra.report import RenderOptions
from gpudra.report.json_report import as_data

_UNSAFE = re.compile(f"[{UNSAFE}]")
_UNLIMITED = 1 << 30


class _Dumper(yaml.SafeDumper):
    def write_double_quoted(self, text: str, split: bool = True) -> None:
        # PyYAML writes characters above U+00A0 as they are when allow_unicode is on; these
        # strings must show every unsafe one as an escape, whatever the rest holds.
        if not _UNSAFE.search(text):
            super().write_double_quoted(text, split)
            return
        self.allow_unicode = False
        try:
            super().write_double_quoted(text, split=False)
        finally:
            self.allow_unicode = True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # A key written plain at the start of its line must not begin a runner command (`::`).
    style = '"' if _UNSAFE.search(value) or value.startswith("::") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def render(report: Report, options: RenderOptions) -> str:
    return dump(as_data(report))


def dump(data: Any) -> str:
    text = _dump(data)
    # Redacted in the data: an escape of a double-quoted string (`\\xE9`) hides a credential
    # from the redaction of the text.
    return _dump(redacted_data(data)) if may_hold_credential(text) else text


def _dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                     width=_UNLIMITED)
