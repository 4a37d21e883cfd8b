"""KServe: where the controller reads the GPU limit convert removes.

KServe passes a predictor's resources through to the pod, but reads the GPU limit of the
predictor container (the InferenceService's container merged over its ServingRuntime's) in
three places (kserve/kserve `pkg/utils/utils.go` IsGPUEnabled: a `nvidia.com/gpu` or
`nvidia.com/mig*` limit; docs/facts.md):

- the webhook rejects a `tensorflow:`/`pytorch:` predictor whose `runtimeVersion` names a GPU
  build (`-gpu`) when it has no GPU limit;
- without a `runtimeVersion`, the image is chosen by it: with a GPU, TF Serving, TorchServe and
  the Hugging Face server get the `-gpu` image; without one the vLLM server gets the `-cpu`
  build (`UpdateImageTag`; an image pinned by digest is left alone);
- a multi-node predictor (`workerSpec`) gets `nvidia.com/gpu` limits written into its head and
  worker Deployments by KServe itself, computed from tensor x pipeline parallel size.

Each case would run differently after conversion, so it is blocked with the reason. KServe's
LLMInferenceService does not read the limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpudra.convert.records import Blocked
from gpudra.k8s.objects import PathT, as_mapping, dig

GROUP = "serving.kserve.io"
SERVER_TYPE_ANNOTATION = "serving.kserve.io/server-type"
# Server types whose image KServe picks by the GPU limit, and the built-in runtimes of them.
IMAGE_BY_GPU = frozenset({"tensorflow-serving", "torchserve", "huggingfaceserver", "vllmserver"})
BUILTIN_RUNTIMES = {"kserve-tensorflow-serving": "tensorflow-serving",
                    "kserve-torchserve": "torchserve",
                    "kserve-huggingfaceserver": "huggingfaceserver",
                    "kserve-vllmserver": "vllmserver"}
# Model formats a built-in runtime of those types serves when KServe picks the runtime itself.
AUTO_FORMATS = {"tensorflow": "tensorflow-serving", "pytorch": "torchserve",
                "huggingface": "huggingfaceserver"}
_GPU_RUNTIME_VERSION = "-gpu"


def gpu_enabled(limits: Mapping[str, Any], gone: frozenset[str] = frozenset()) -> bool:
    """IsGPUEnabled, with the resources in `gone` removed."""
    names = [str(k) for k in limits if str(k) not in gone]
    return "nvidia.com/gpu" in names or any(n.startswith("nvidia.com/mig") for n in names)


def check(data: Mapping[str, Any], group: str, kind: str, pod: PathT,
          removed: Iterable[tuple[PathT, str]]) -> None:
    """Raise Blocked where KServe would treat the converted predictor differently."""
    if group != GROUP:
        return
    by_container: dict[PathT, set[str]] = {}
    for where, name in removed:
        by_container.setdefault(where, set()).add(name)
    spec = as_mapping(dig(data, *pod))
    if by_container and "workerSpec" in spec:
        raise Blocked("a multi-node KServe predictor (workerSpec): KServe writes nvidia.com/gpu "
                      "limits into the head and worker Deployments itself, from tensor x "
                      "pipeline parallel size; migrate by hand")
    for where, gone in by_container.items():
        container = as_mapping(dig(data, *where))
        limits = as_mapping(as_mapping(container.get("resources")).get("limits"))
        if not gpu_enabled(limits) or gpu_enabled(limits, frozenset(gone)):
            continue
        _container(data, kind, where, container)


def _container(data: Mapping[str, Any], kind: str, where: PathT,
               container: Mapping[str, Any]) -> None:
    key = where[-1]
    version = container.get("runtimeVersion")
    if key in ("tensorflow", "pytorch") and isinstance(version, str) and \
            _GPU_RUNTIME_VERSION in version:
        raise Blocked(f"KServe rejects a {key} predictor with runtimeVersion {version!r} and no "
                      "GPU limit (the version names a GPU build); migrate by hand")
    if version is not None or "@sha256:" in str(container.get("image", "")):
        return  # the image is fixed: KServe does not choose it by the GPU limit
    server = _server_type(data, kind, key, container)
    if server in IMAGE_BY_GPU:
        fix = ("pin the runtime's image by digest" if kind.endswith("ServingRuntime") else
               "set the predictor's runtimeVersion to the GPU image's tag (or pin the image by "
               "digest)")
        raise Blocked(f"KServe picks the {server} image by the GPU limit (the GPU build with "
                      "one, the CPU build without); after conversion it would start the CPU "
                      f"image: {fix}, then convert")


def _server_type(data: Mapping[str, Any], kind: str, key: Any,
                 container: Mapping[str, Any]) -> str | None:
    """The KServe server type that would run this container, where the object says."""
    if kind in ("ServingRuntime", "ClusterServingRuntime"):
        annotations = as_mapping(dig(data, "metadata", "annotations"))
        name = str(dig(data, "metadata", "name") or "")
        return annotations.get(SERVER_TYPE_ANNOTATION) or BUILTIN_RUNTIMES.get(name)
    if key != "model":
        return None
    runtime = container.get("runtime")
    if isinstance(runtime, str):
        return BUILTIN_RUNTIMES.get(runtime)  # a runtime of the user's: its annotation decides
    return AUTO_FORMATS.get(str(dig(container, "modelFormat", "name") or ""))
