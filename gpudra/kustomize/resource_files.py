"""Objects of a resource file, numbered the way the converter numbers them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from gpudra.errors import UnreadableInputError
from gpudra.k8s.objects import PathT, is_list, list_members
from gpudra.sources.documents import split_documents
from gpudra.sources.file_bytes import decode, read_regular
from gpudra.yamledit.yaml_nodes import load


def file_objects(path: str) -> tuple[tuple[int, PathT, Mapping[str, Any]], ...]:
    """(document index, path inside the document, object) for every object of `path`."""
    try:
        text = decode(read_regular(path))  # as the file scanner decodes it (UTF-16 too)
    except (OSError, UnicodeDecodeError, UnreadableInputError):
        return ()  # the file scanner reports it
    out = []
    for index, chunk in enumerate(split_documents(text)):
        try:
            data = load(chunk.text)
        except yaml.YAMLError:
            continue
        out += [(index, base, obj) for obj, base in objects_in(data)]
    return tuple(out)


def objects_in(data: Any) -> list[tuple[Mapping[str, Any], PathT]]:
    """A document's objects: a List's items (Lists inside it flattened, as kustomize does),
    else the document itself."""
    if not isinstance(data, dict):
        return []
    if is_list(data):
        return list(list_members(data["items"], ("items",)))
    return [(data, ())]
