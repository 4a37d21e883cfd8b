"""Rules about what a Kustomize overlay renders. GPU110: a container that gets DRA claims and
device-plugin devices at once. GPU610: a rename that leaves claim references behind.

The plain-manifest half lives here (it also covers `kustomize build overlay | gpudra audit -`);
the overlay half, where a converted base meets a patch that puts `nvidia.com/gpu` back, is
found by gpudra.kustomize.audit, which emits the same rule at the patch's line.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpudra.devices import classify
from gpudra.model import Severity
from gpudra.objects import ManifestObject
from gpudra.quantity import parse_device_count
from gpudra.rules.base import AuditContext, Checker, rule

GPU110 = rule(
    "GPU110", "claims-beside-device-plugin", Severity.ERROR, "device requests",
    "Container gets DRA claims and a device-plugin request at once.",
    """
A container references `resources.claims` and also asks the device plugin for NVIDIA devices
(`nvidia.com/gpu`, a MIG or shared resource). The pod then needs devices from both routes: the
scheduler looks for a node with free device-plugin GPUs *and* allocates the claim, so the pod
gets more GPUs than intended, or never schedules where only the DRA driver publishes GPUs.

It usually comes from a Kustomize overlay: the base was converted to claims, and an overlay
patch still sets the count the old way (a strategic-merge patch with
`resources.limits.nvidia.com/gpu`, or a JSON6902 operation on
`/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu`). Kustomize builds the
overlay without complaint; the rendered Deployment has both. `gpudra audit` reports it at the
patch's file and line, and counts that workload as not migrated.

Problematic (rendered):

```yaml
containers:
- name: train
  resources:
    claims:
    - {name: gpu, request: train}
    limits:
      nvidia.com/gpu: 4
```

Correct: the count lives in the claim. In an overlay, patch the ResourceClaimTemplate instead
(JSON6902, `/spec/spec/devices/requests/0/exactly/count`); `gpudra convert` rewrites such
patches (docs/kustomize.md).
""",
    "Remove the device-plugin request and set the count on the claim (gpudra convert does it "
    "for overlay patches).",
)


GPU610 = rule(
    "GPU610", "kustomize-claim-reference-not-renamed", Severity.ERROR, "dra objects",
    "A kustomization renames a ResourceClaimTemplate that pods reference by its old name.",
    """
`namePrefix` and `nameSuffix` rename every object of a kustomization, ResourceClaimTemplates
and ResourceClaims included, and kustomize then fixes the references to renamed objects that
its name-reference table knows. That table (kustomize v5.5.0, kubectl 1.32) has no entry for
`resourceClaimTemplateName` or `resourceClaimName`: the rendered pods go on asking for
`trainer-gpu` while the template is now `staging-trainer-gpu`, and they never start.

Problematic (`kubectl kustomize overlays/staging`):

```yaml
kind: Deployment
metadata: {name: staging-trainer}
spec:
  template:
    spec:
      resourceClaims:
      - {name: gpu, resourceClaimTemplateName: trainer-gpu}   # not renamed
---
kind: ResourceClaimTemplate
metadata: {name: staging-trainer-gpu}
```

Correct: a `configurations:` file in the base (or the renaming overlay) that tells kustomize
about the reference; `gpudra convert` writes `gpudra-name-references.yaml` for the workloads it
converts (docs/kustomize.md):

```yaml
nameReference:
- kind: ResourceClaimTemplate
  group: resource.k8s.io
  fieldSpecs:
  - {path: spec/template/spec/resourceClaims/resourceClaimTemplateName, group: apps,
     kind: Deployment}
```
""",
    "Add a nameReference configuration for resourceClaimTemplateName (gpudra convert writes "
    "one).",
)


class ClaimsBesideDevicePlugin(Checker):
    # GPU610 is found by gpudra.kustomize.audit (it needs the kustomize tree); it is listed
    # here so that the catalogue, its docs and its suppression work like every rule's.
    rules = (GPU110, GPU610)

    def check_object(self, obj: ManifestObject, ctx: AuditContext) -> None:
        for spec in ctx.pod_specs(obj):
            for container in spec.containers:
                resources = container.data.get("resources")
                if not isinstance(resources, Mapping):
                    continue
                claims = resources.get("claims")
                found = device_plugin_request(resources) if isinstance(claims, list) and claims \
                    else None
                if found is None:
                    continue
                section, name, value, count = found
                ctx.emit("GPU110", obj,
                         f"container {container.name!r} references DRA claims and also requests "
                         f"{value} × {name} through the device plugin",
                         path=container.path + ("resources", section, name),
                         container=container.name, resource=name, quantity=count)


def device_plugin_request(resources: Mapping) -> tuple[str, str, object, int | None] | None:
    """The first NVIDIA device-plugin request of a `resources` block that asks for devices:
    (section, resource, raw value, count)."""
    for section in ("limits", "requests"):
        values = resources.get(section)
        for name, value in values.items() if isinstance(values, Mapping) else ():
            device = classify(name)
            count = parse_device_count(value).value
            if device is not None and device.is_nvidia_device_plugin and count != 0:
                return section, name, value, count
    return None
