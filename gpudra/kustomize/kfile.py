"""Round-trip edits of kustomization files with ruamel.yaml: comments, order and quoting kept.

Only the small kustomization files go through ruamel (manifests use the text editor). The
result is verified twice: it must read back (with the same loader as everything else) as the
intended data, and only lines that belong to what was edited may differ from the original.
Anything else raises LayoutError, and the caller leaves the file alone and says why.
"""

from __future__ import annotations

import difflib
import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from gpudra.yamledit.textedit import LayoutError, detect_style
from gpudra.yamledit.yaml_nodes import NodeDocument, compose, load

Entry = tuple[str, int]  # (field, index) of a patch entry


@dataclass(frozen=True)
class KustomizationEdit:
    add_patches: tuple[Mapping[str, Any], ...] = ()       # {"target": {...}, "patch": text}
    inline: tuple[tuple[Entry, str], ...] = ()            # new text of an inline patch
    remove: tuple[Entry, ...] = ()                        # entries to drop
    add_configurations: tuple[str, ...] = ()


def edit_kustomization(raw: bytes, edit: KustomizationEdit) -> bytes:
    """`raw` with `edit` applied. Raises LayoutError when it cannot be done faithfully.

    Each top-level key the edit touches is round-tripped on its own, with the indentation that
    key's block uses, and spliced back: other keys keep their text whatever their style.
    """
    bom = raw.startswith(b"\xef\xbb\xbf")
    original = raw.decode("utf-8-sig")
    crlf = "\r\n" in original
    text = original.replace("\r\n", "\n")
    try:
        nodes = compose(text)
    except yaml.YAMLError as exc:
        raise LayoutError(f"the kustomization is not valid YAML ({exc})") from None
    if not isinstance(nodes.data, dict) or not isinstance(nodes.root, yaml.MappingNode) or \
            nodes.root.flow_style:
        raise LayoutError("the kustomization is not a block mapping")
    expected = _apply_plain(nodes.data, edit)
    touched = {entry[0] for entry, _ in edit.inline} | {f for f, _ in edit.remove}
    touched |= {"patches"} if edit.add_patches else set()
    touched |= {"configurations"} if edit.add_configurations else set()
    lines = text.splitlines(keepends=True)
    starts = [key.start_mark.line for key, _ in nodes.root.value]
    parts = ["".join(lines[: starts[0]])] if starts else [text]
    for i, (key, _) in enumerate(nodes.root.value):
        block = "".join(lines[starts[i]: starts[i + 1] if i + 1 < len(starts) else len(lines)])
        if key.value in touched:
            if not block.endswith("\n"):
                block += "\n"
            block = _roundtrip(block, _only(edit, key.value), key.value)
        parts.append(block)
    for key in ("patches", "configurations"):
        if key in touched and key not in nodes.data:
            if parts and not parts[-1].endswith("\n"):
                parts[-1] += "\n"
            parts.append(_roundtrip(f"{key}: []\n", _only(edit, key), key, style_of=text))
    new = "".join(parts)
    if not text.endswith("\n"):
        new = new.rstrip("\n")
    try:
        if load(new) != expected:
            raise LayoutError("the edited kustomization does not read back as intended")
    except yaml.YAMLError as exc:
        raise LayoutError(f"the edited kustomization is not valid YAML ({exc})") from None
    _check_untouched(text, new, _editable_lines(nodes, edit))
    if crlf:
        new = new.replace("\n", "\r\n")
    return (("\ufeff" if bom else "") + new).encode("utf-8")


def _only(edit: KustomizationEdit, key: str) -> KustomizationEdit:
    return KustomizationEdit(
        add_patches=edit.add_patches if key == "patches" else (),
        inline=tuple(e for e in edit.inline if e[0][0] == key),
        remove=tuple(e for e in edit.remove if e[0] == key),
        add_configurations=edit.add_configurations if key == "configurations" else ())


def _roundtrip(block: str, edit: KustomizationEdit, key: str, style_of: str | None = None) -> str:
    """One top-level key's block, edited by ruamel in that block's own style."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.error import YAMLError as RuamelError

    sample = style_of if style_of is not None else block
    style = detect_style(sample, compose(sample).root)
    rt = YAML()
    rt.preserve_quotes = True
    rt.width = 4096
    rt.indent(mapping=style.indent, sequence=style.sequence_offset + style.item_gap,
              offset=style.sequence_offset)
    try:
        data = rt.load(block)
        if style_of is not None:
            data[key] = CommentedSeq()
        _apply_ruamel(data, edit, CommentedMap, CommentedSeq)
        out = io.StringIO()
        if key in data:
            rt.dump(data, out)
    except (RuamelError, KeyError, IndexError, TypeError) as exc:
        raise LayoutError(f"cannot edit the kustomization's {key} ({exc})") from None
    new = out.getvalue()
    return new if not new or new.endswith("\n") else new + "\n"


def _apply_plain(data: dict[str, Any], edit: KustomizationEdit) -> dict[str, Any]:
    out = {k: v for k, v in data.items()}
    for (field_name, index), text in edit.inline:
        entries = list(out[field_name])
        entry = entries[index]
        entries[index] = text if isinstance(entry, str) else {**entry, "patch": text}
        out[field_name] = entries
    for field_name in {f for f, _ in edit.remove}:
        drop = {i for f, i in edit.remove if f == field_name}
        kept = [e for i, e in enumerate(out[field_name]) if i not in drop]
        if kept:
            out[field_name] = kept
        else:
            del out[field_name]
    if edit.add_patches:
        out["patches"] = list(out.get("patches") or []) + [_plain(p) for p in edit.add_patches]
    if edit.add_configurations:
        out["configurations"] = list(out.get("configurations") or []) + \
            list(edit.add_configurations)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _apply_ruamel(data: Any, edit: KustomizationEdit, cmap: type, cseq: type) -> None:
    from ruamel.yaml.scalarstring import LiteralScalarString

    for (field_name, index), text in edit.inline:
        entries = data[field_name]
        if isinstance(entries[index], str):
            entries[index] = LiteralScalarString(text)
        else:
            entries[index]["patch"] = LiteralScalarString(text)
    for field_name in {f for f, _ in edit.remove}:
        for index in sorted((i for f, i in edit.remove if f == field_name), reverse=True):
            del data[field_name][index]
        if not data[field_name]:
            del data[field_name]
    if edit.add_patches:
        if "patches" not in data or data["patches"] is None:
            data["patches"] = cseq()
        for patch in edit.add_patches:
            entry = cmap()
            for key, value in patch.items():
                if isinstance(value, Mapping):
                    inner = cmap()
                    inner.update(value)
                    entry[key] = inner
                elif isinstance(value, str) and "\n" in value:
                    entry[key] = LiteralScalarString(value)
                else:
                    entry[key] = value
            data["patches"].append(entry)
    if edit.add_configurations:
        if "configurations" not in data or data["configurations"] is None:
            data["configurations"] = cseq()
        data["configurations"].extend(edit.add_configurations)


def _editable_lines(nodes: NodeDocument, edit: KustomizationEdit) -> set[int]:
    """0-based lines of the original that an edit may change: the edited or removed entries,
    and a flow-style list that grows (it is one line that changes)."""
    lines: set[int] = set()
    for entry in [*(e for e, _ in edit.inline), *edit.remove]:
        located = nodes.at(entry)
        if located is not None:
            node = located.value
            lines.update(range(node.start_mark.line, node.end_mark.line + 1))
    for key, grows in (("patches", edit.add_patches), ("configurations", edit.add_configurations)):
        located = nodes.at((key,)) if grows else None
        if located is not None and getattr(located.value, "flow_style", False):
            lines.update(range(located.value.start_mark.line, located.value.end_mark.line + 1))
    if edit.remove:
        for field_name in {f for f, _ in edit.remove}:
            located = nodes.at((field_name,))
            if located is not None and located.key is not None:
                lines.add(located.key.start_mark.line)  # the key goes when its list empties
    return lines


def _check_untouched(old: str, new: str, allowed: set[int]) -> None:
    old_lines, new_lines = old.splitlines(), new.splitlines()
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            for line in range(i1, i2):
                if line not in allowed and old_lines[line].strip():
                    raise LayoutError(f"editing it would change line {line + 1} "
                                      f"({old_lines[line].strip()!r}), which is not edited")
