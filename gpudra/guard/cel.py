"""The CEL of the guard's policy, written once per strategy and per object (the new object, and
on UPDATE the old one).

Every field below the pod spec is optional in the API's schema, so each is read with CEL's
optional selection (`.?field.orValue(...)`): an object without containers, resources or limits
evaluates to "asks for nothing", never to an error. The object is read through `dyn(...)` because
one policy matches kinds whose pod spec sits at different paths; a typed selection of
`spec.template` would not type-check against a Pod (status.typeChecking would warn), while
`request.resource.resource` says which path holds it.
"""

from __future__ import annotations

from gpudra.k8s.devices import GPU

# Where each matched resource keeps its pod spec, as optional selections on the object. The
# default (every other matched resource) is a workload's `spec.template.spec`.
POD_SPEC_PATHS: tuple[tuple[str, str], ...] = (
    ("pods", ".?spec"),
    ("cronjobs", ".?spec.?jobTemplate.?spec.?template.?spec"),
    ("podtemplates", ".?template.?spec"),
)
TEMPLATE_PATH = ".?spec.?template.?spec"
ASKS = " asks for "


def _mig_or_shared(key: str) -> str:
    """MIG slices (`nvidia.com/mig-<profile>`, mixed strategy) and renamed shared resources
    (`nvidia.com/gpu.shared`, `nvidia.com/mig-<profile>.shared`): what no DRA DeviceClass maps
    through the extended-resource bridge with the whole-GPU class."""
    return (f"{key}.startsWith('nvidia.com/mig-') || "
            f"({key}.startsWith('nvidia.com/') && {key}.endsWith('.shared'))")


def key_predicate(key: str, bridge: bool) -> str:
    """The CEL that is true when resource name `key` is a device-plugin resource the cluster no
    longer serves: under the claims strategy every NVIDIA device-plugin name (whole GPUs, MIG,
    shared; gpudra.k8s.devices' GPU, MIG and SHARED kinds), under the bridge only MIG and shared
    ones (`nvidia.com/gpu` is served by the bridge's DeviceClass)."""
    if bridge:
        return _mig_or_shared(key)
    return f"{key} == '{GPU}' || {_mig_or_shared(key)}"


def pod_spec(root: str) -> str:
    """The pod spec of `root` (`object` or `oldObject`), `{}` when it has none."""
    selected = f"dyn({root})"
    expression = f"{selected}{TEMPLATE_PATH}.orValue({{}})"
    for resource, path in reversed(POD_SPEC_PATHS):
        expression = (f"request.resource.resource == '{resource}' ? "
                      f"{selected}{path}.orValue({{}}) : {expression}")
    return f"({expression})"


def containers(spec: str) -> str:
    """Containers and init containers (sidecars are init containers) of the pod spec variable
    `spec`. Ephemeral containers cannot set resources (API validation), so they are not read."""
    return f"{spec}.?containers.orValue([]) + {spec}.?initContainers.orValue([])"


def offending(containers_variable: str, bridge: bool) -> str:
    """One string per container that asks for a refused key: `container NAME asks for KEYS`.
    Limits and requests are both read (requests default from limits, so a key in both is named
    once). Every container gets its string and those that name no key are dropped, so the keys
    are worked out once per container."""
    limits = "c.?resources.?limits.orValue({})"
    requests = "c.?resources.?requests.orValue({})"
    keys = (f"({limits}.filter(k, {key_predicate('k', bridge)}) + "
            f"{requests}.filter(k, !(k in {limits}) && ({key_predicate('k', bridge)})))")
    return (f"{containers_variable}.map(c, 'container ' + string(c.?name.orValue('')) + "
            f"'{ASKS}' + {keys}.join(', ')).filter(a, !a.endsWith('{ASKS}'))")
