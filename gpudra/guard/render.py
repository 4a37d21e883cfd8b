"""The guard's objects as text: a multi-document YAML stream for `kubectl apply -f -`, or a
JSON `List`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

HEADER = ("# gpudra guard: refuse device-plugin GPU requests in namespaces labelled "
          "gpudra.io/migrated=true (docs/guard.md)\n")


class _Dumper(yaml.SafeDumper):
    """Long strings (the CEL) as folded block scalars, readable and loaded back unchanged."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = ">" if len(value) > 80 and "\n" not in value and value == value.strip() else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _string)


def as_yaml(objects: Sequence[Mapping[str, Any]]) -> str:
    return HEADER + "".join(
        "---\n" + yaml.dump(o, Dumper=_Dumper, sort_keys=False, width=96,
                            default_flow_style=False) for o in objects)


def as_json(objects: Sequence[Mapping[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)},
                      indent=2) + "\n"
