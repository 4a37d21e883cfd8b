"""docs/controllers.md, generated from the controller registry (tests/controllers keeps the
page equal to this; regenerate with `python -m gpudra.controllers.docs > docs/controllers.md`)."""

from __future__ import annotations

from gpudra.controllers.registry import ControllerRow, Registry, registry

_HEAD = """\
# The controller registry

<!-- Generated from gpudra/controllers/registry.yaml by gpudra.controllers.docs; do not edit. -->

convert rewrites the pod templates of the kinds below, and no others: a custom resource that is
not in this table is **blocked** with "gpudra has not checked whether <Kind>'s controller reads
nvidia.com/gpu", because a controller that derives something from the device-plugin limit (a
process count, a hostfile, an image, a ComputeDomain channel) runs the converted workload
differently, and nothing in the manifest says so. `gpudra audit` counts the GPU workloads that
sit in such kinds (`unchecked`).

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
    lines = [_HEAD, "| kind | API versions | controller | reads the GPU limit | convert | "
             "what convert does | pod templates | checked at |",
             "|---|---|---|---|---|---|---|---|"]
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


if __name__ == "__main__":  # the generator's entry point: prints the page (no other output)
    import sys

    sys.stdout.write(controllers_markdown())
