"""Which Helm chart a path belongs to: the directory with Chart.yaml above a chart's
templates/ tree, or beside its values files and Chart.yaml. Discovery reads chart files as
templates and values; the audit's Next hints leave out `convert --diff` for workloads only a
chart renders (convert blocks them: the chart must change)."""

from __future__ import annotations

import os


def enclosing_chart(dirpath: str) -> str | None:
    """The chart whose templates/ tree holds `dirpath` (when a walk starts inside one)."""
    probe = os.path.abspath(dirpath)
    for _ in range(6):
        parent, leaf = os.path.split(probe)
        if leaf == "templates" and os.path.isfile(os.path.join(parent, "Chart.yaml")):
            return parent if os.path.isabs(dirpath) else os.path.relpath(parent)
        if not parent or parent == probe:
            return None
        probe = parent
    return None


def chart_of_file(path: str) -> str | None:
    """The chart `path` belongs to, if any: a values file or Chart.yaml beside Chart.yaml, or
    a file in a chart's templates/ tree."""
    directory = os.path.dirname(path) or os.curdir
    if os.path.isfile(os.path.join(directory, "Chart.yaml")):
        return directory
    return enclosing_chart(directory)


def helm_renders(path: str) -> bool:
    """True for a chart (the directory the audit names a rendered workload by), or a chart's
    template or values file: what `helm template` turns into manifests (convert blocks these;
    a chart's other files are plain YAML)."""
    if os.path.isfile(os.path.join(path, "Chart.yaml")):
        return True
    chart = chart_of_file(path)
    if chart is None:
        return False
    relative = os.path.relpath(path, chart)
    return relative.split(os.sep)[0] == "templates" or (
        os.path.basename(relative).startswith("values") and os.sep not in relative)
