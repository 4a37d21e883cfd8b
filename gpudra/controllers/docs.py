"""The controller registry as text: `gpudra controllers` (table, JSON, Markdown:
gpudra.cli.formats, Kind.CONTROLLERS) and the generated docs/controllers.md
(`gpudra controllers -o markdown > docs/controllers.md`; tests/controllers keeps them equal)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from gpudra.controllers.registry import ControllerRow, Registry, registry

_HEAD = """\
# The controller registry

<!-- Generated from gpudra/controllers/registry.yaml: gpudra controllers -o markdown. -->

convert rewrites the pod templates of the kinds below, and no others: a custom resource that is
not in this table is **blocked** with "gpudra has not checked whether <Kind>'s controller reads
nvidia.com/gpu", because a controller that derives something from the device-plugin limit (a
process count, a hostfile, an image, a ComputeDomain channel) runs the converted workload
differently, and nothing in the manifest says so. `gpudra audit` counts the GPU workloads that
sit in such kinds (`unchecked_kinds` in `-o json`).

If you know a kind's controller does not read the limit, vouch for it in `.gpudra.yaml`
([configuration.md](configuration.md#vouching-for-a-controller)):

```yaml
vouch:
  - {kind: Trainer, apiVersion: example.com/v1, owner: ml-platform@example.com,
     reason: the operator copies the pod template as written, expires: 2027-03-31}
```

Adding a controller to gpudra is one row in `gpudra/controllers/registry.yaml` (checked at the
controller's source, the fact recorded in [facts.md](facts.md)) plus its test cases.

What convert does: **safe** converts as for any workload (the controller does not read the
limit); **writes** converts and writes the count where the controller reads it after
conversion; **native** uses the controller's own DRA field; **blocks** leaves the workload on
the device plugin, in the cases the row names, with the reason.

"""


def controllers_markdown(table: Registry | None = None) -> str:
    table = table or registry()
    header = ("kind", "API versions", "controller", "reads the GPU limit", "convert",
              "what convert does", "pod templates", "checked at")
    lines = [_HEAD, "| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    lines += [_row(row) for row in table.rows]
    lines += ["", "## Why, per row", ""]
    for row in table.rows:
        lines.append(f"- **{', '.join(row.kinds)}** ({_versions(row)}): {row.reason}.")
    return "\n".join(lines) + "\n"


def _versions(row: ControllerRow) -> str:
    return ", ".join(row.api_versions())


def _row(row: ControllerRow) -> str:
    pods = ", ".join(f"`{p}`" for p in row.pod_specs) or "(found by the search for containers)"
    source = f"{row.source.repo} `{row.source.commit[:12]}`: " + \
        ", ".join(f"`{f}`" for f in row.source.files)
    cells = (", ".join(row.kinds), _versions(row), row.controller,
             "yes" if row.reads_gpu_limit else "no", row.convert, row.does, pods, source)
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def render_table(rows: Sequence[ControllerRow], options: object) -> str:
    """One line per kind and API group: what convert does, and the controller. `options` (the
    format registry's RenderOptions, a floor above this one) changes nothing here."""
    lines = [(", ".join(r.kinds), ", ".join(r.api_versions()), r.convert, r.controller)
             for r in rows]
    widths = [max(len(line[i]) for line in [("KIND", "API VERSIONS", "CONVERT", ""), *lines])
              for i in range(3)]
    head = f"{'KIND':<{widths[0]}}  {'API VERSIONS':<{widths[1]}}  {'CONVERT':<{widths[2]}}"
    out = [f"{head}  CONTROLLER"]
    out += [f"{k:<{widths[0]}}  {v:<{widths[1]}}  {c:<{widths[2]}}  {who}"
            for k, v, c, who in lines]
    out.append("Other custom resources are blocked unless .gpudra.yaml vouches for the kind "
               "(docs/controllers.md).")
    return "\n".join(out) + "\n"


def render_json(rows: Sequence[ControllerRow], options: object) -> str:
    return json.dumps([_row_data(r) for r in rows], indent=2) + "\n"


def render_markdown(rows: Sequence[ControllerRow], options: object) -> str:
    return controllers_markdown(Registry(tuple(rows)))


def _row_data(row: ControllerRow) -> dict[str, Any]:
    return {"kinds": list(row.kinds), "apiVersions": list(row.api_versions()),
            "podSpecs": list(row.pod_specs), "containers": list(row.containers),
            "controller": row.controller, "readsGpuLimit": row.reads_gpu_limit,
            "convert": row.convert, "does": row.does, "reason": row.reason,
            "source": {"repo": row.source.repo, "commit": row.source.commit,
                       "files": list(row.source.files)}}
