"""Manifests the tests write, built by one function so that a variation is an argument, not a
copy. Text placeholders such as ``"{name}"`` pass through, for tests that ``.format`` them."""

from __future__ import annotations

from collections.abc import Mapping


def gpu_job(name: str = "{name}", *, namespace: str | None = None, gpus: int | str = 1,
            container: str = "c", image: str = "x", restart_never: bool = False,
            annotations: Mapping[str, str] | None = None) -> str:
    """A batch/v1 Job whose one container asks the device plugin for `gpus` GPUs, in block
    style (values are written as given: quote them in the argument where YAML needs it)."""
    metadata = [f"  name: {name}"]
    if namespace is not None:
        metadata.append(f"  namespace: {namespace}")
    if annotations:
        metadata.append("  annotations:")
        metadata += [f"    {key}: {value}" for key, value in annotations.items()]
    spec = ["      restartPolicy: Never"] if restart_never else []
    return "\n".join([
        "apiVersion: batch/v1", "kind: Job", "metadata:", *metadata,
        "spec:", "  template:", "    spec:", *spec,
        "      containers:", f"      - name: {container}", f"        image: {image}",
        "        resources:", "          limits:", f"            nvidia.com/gpu: {gpus}",
    ]) + "\n"
