"""CLUSTER014: does Kueue count GPU claims against ClusterQueue quota?

Facts (kubernetes-sigs/kueue @ v0.19.2, v0.18.0, v0.14.0; facts-turn2 section 12):
- The manager `Configuration` (`config.kueue.x-k8s.io/v1beta1`, or v1beta2 since v0.15) maps
  DeviceClasses to quota resource names under `resources.deviceClassMappings[]`
  (`name`, `deviceClassNames[]`, optional `sources[]`). It exists since v0.14.0.
- Gate: `DynamicResourceAllocation` (alpha, off) in v0.14-v0.17; renamed `KueueDRAIntegration`
  in v0.18.0 (beta, on); the old name is locked off from v0.18.
- The configuration is the ConfigMap `kueue-system/kueue-manager-config`, key
  `controller_manager_config.yaml` (config/default/kustomization.yaml namePrefix `kueue-` @
  046d42f705c5, config/components/manager/kustomization.yaml @ 0a599629b1ac); the Helm chart
  names it `<fullname>-manager-config`.
- Image `registry.k8s.io/kueue/kueue:v0.19.2`; gates also come from `--feature-gates`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from gpudra.dra.emit import GPU_CLASS
from gpudra.k8s.gpu_use import is_device_plugin_resource
from gpudra.k8s.object_fields import (
    containers,
    feature_gates,
    image_repository,
    workload_name,
)
from gpudra.k8s.objects import as_list, as_mapping, dig
from gpudra.preflight.check_records import CheckOutcome, CheckResult, Tier, check, result
from gpudra.preflight.cluster.nodes import named
from gpudra.preflight.cluster.options import NO_OPTIONS, ClusterOptions
from gpudra.preflight.cluster.snapshot import (
    CLUSTERQUEUES,
    DEPLOYMENTS,
    KUEUE_CONFIG,
    ClusterSnapshot,
    Listing,
    unreadable,
)
from gpudra.preflight.runtime import Version, image_version

CONFIG_GROUP = "config.kueue.x-k8s.io/"
OLD_GATE, NEW_GATE = "DynamicResourceAllocation", "KueueDRAIntegration"
ADD_MAPPING = (
    "add to Kueue's Configuration (ConfigMap kueue-system/kueue-manager-config): resources: "
    "{deviceClassMappings: [{name: <quota resource>, deviceClassNames: [gpu.nvidia.com]}]}, and "
    "give <quota resource> nominalQuota in the GPU ClusterQueues (Kueue v0.14+)")

CLUSTER014 = check(
    "CLUSTER014", "Kueue maps the GPU DeviceClass to quota", Tier.CLUSTER,
    "ClusterQueues with GPU quota need `deviceClassMappings` for `gpu.nvidia.com` claims.",
    """
**Why it matters.** Kueue admits workloads against ClusterQueue quota. A workload whose pods
request `nvidia.com/gpu` is counted against `nvidia.com/gpu` quota; the same workload using
a ResourceClaim requests no such resource. Kueue counts claims only through
`resources.deviceClassMappings` in its manager Configuration, which maps DeviceClasses (here
`gpu.nvidia.com`) to a quota resource name that ClusterQueues then cover:

```yaml
resources:
  deviceClassMappings:
  - name: whole-gpus                  # give this nominalQuota in the ClusterQueues
    deviceClassNames: [gpu.nvidia.com]
```

The field exists from Kueue **v0.14** behind the alpha gate `DynamicResourceAllocation`
(off); v0.18 renamed the gate `KueueDRAIntegration`, beta and on. gpudra reads the
ClusterQueues, the Configuration from the ConfigMap `kueue-system/kueue-manager-config`, and
the version and `--feature-gates` of the Kueue Deployment.

**Outcomes.** *pass*: Kueue is not installed, no ClusterQueue has GPU quota, or
`gpu.nvidia.com` is mapped to a resource ClusterQueues cover with the integration on.
*warn*: GPU ClusterQueues but no mapping for `gpu.nvidia.com` (also when there is no
Configuration at all: Kueue's defaults map nothing); a mapping no ClusterQueue covers; the DRA
integration gate off; Kueue older than v0.14. *unavailable*: ClusterQueues or the
Configuration could not be read.

**Fix.** Add the mapping and cover its name in the GPU ClusterQueues; on v0.14-v0.17 also
enable `DynamicResourceAllocation=true` in `--feature-gates`.
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.UNAVAILABLE))


def _covered(queue: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    for group in as_list(dig(queue, "spec", "resourceGroups")):
        if isinstance(group, Mapping):
            names.update(str(r) for r in as_list(group.get("coveredResources")))
    return names


def kueue_configuration(configmaps: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The Kueue manager Configuration inside the given ConfigMaps, if any parses as one."""
    for cm in configmaps:
        for text in as_mapping(cm.get("data")).values():
            try:
                doc = yaml.safe_load(str(text))
            except yaml.YAMLError:
                continue
            if isinstance(doc, Mapping) and doc.get("kind") == "Configuration" and \
                    str(doc.get("apiVersion", "")).startswith(CONFIG_GROUP):
                return doc
    return None


def _kueue_deployment(deployments: Iterable[Mapping[str, Any]]
                      ) -> tuple[str, Version | None, dict[str, bool]] | None:
    for deploy in deployments:
        for ctr in containers(deploy):
            if image_repository(ctr.image).rsplit("/", 1)[-1].startswith("kueue"):
                return workload_name(deploy), image_version(ctr.image), feature_gates(ctr)
    return None


def _gpu_class_mappings(config: Mapping[str, Any] | None) -> set[str]:
    """The quota resources Kueue's deviceClassMappings charge gpu.nvidia.com claims to."""
    mappings = [m for m in as_list(dig(config, "resources", "deviceClassMappings"))
                if isinstance(m, Mapping)]
    return {str(m.get("name")) for m in mappings
            if GPU_CLASS in [str(c) for c in as_list(m.get("deviceClassNames"))]}


def _without_configuration(config_listing: Listing, gpu_queues: list[str]) -> CheckResult:
    """GPU quota, and no Kueue Configuration: there is none (Kueue's defaults map no
    DeviceClass), or it could not be read."""
    if config_listing.items == ():
        # Read, and there is none (404): Kueue runs on its defaults, which map no DeviceClass.
        return result(CLUSTER014, CheckOutcome.WARN,
                      f"ClusterQueues {named(gpu_queues)} have GPU quota, but no ConfigMap "
                      "kueue-system/kueue-manager-config holds a Kueue Configuration: Kueue "
                      f"runs on its defaults, which map no quota resource to {GPU_CLASS}, so "
                      "workloads with GPU claims are not counted", ADD_MAPPING)
    why = config_listing.reason or "no ConfigMap holds a Kueue Configuration"
    return result(CLUSTER014, CheckOutcome.UNAVAILABLE,
                  f"ClusterQueues with GPU quota ({named(gpu_queues)}), but Kueue's "
                  f"Configuration could not be read: {why}",
                  "check resources.deviceClassMappings in kueue-system/kueue-manager-config "
                  "by hand")


def check_kueue(snapshot: ClusterSnapshot,
                options: ClusterOptions = NO_OPTIONS) -> CheckResult:
    queues = snapshot.listing(CLUSTERQUEUES)
    if queues.served is False:
        return result(CLUSTER014, CheckOutcome.PASS, "Kueue is not installed (no ClusterQueue API)")
    if queues.items is None:
        return unreadable(CLUSTER014, "ClusterQueues", queues, "clusterqueues.kueue.x-k8s.io")
    config_listing = snapshot.listing(KUEUE_CONFIG)
    config = kueue_configuration(config_listing.items or ())
    mapped_names = _gpu_class_mappings(config)
    gpu_queues = sorted(str(dig(q, "metadata", "name")) for q in queues.items
                        if any(is_device_plugin_resource(r) for r in _covered(q))
                        or _covered(q) & mapped_names)
    if not gpu_queues and not mapped_names:
        return result(CLUSTER014, CheckOutcome.PASS,
                      "Kueue is installed, but no ClusterQueue has GPU quota")
    if config is None:
        return _without_configuration(config_listing, gpu_queues)
    deployment = _kueue_deployment(snapshot.listing(DEPLOYMENTS).items or ())
    details = [f"GPU ClusterQueues: {', '.join(gpu_queues) or 'none'}",
               f"mappings of {GPU_CLASS}: {', '.join(sorted(mapped_names)) or 'none'}"]
    if deployment is not None:
        details.append(f"Kueue {deployment[1] or '(version unknown)'} ({deployment[0]})")
    gate_problem = _gate_problem(deployment, config)
    if not mapped_names:
        return result(CLUSTER014, CheckOutcome.WARN,
                      f"ClusterQueues {named(gpu_queues)} have GPU quota, but Kueue maps no "
                      f"quota resource to {GPU_CLASS}: workloads with GPU claims are not counted",
                      ADD_MAPPING, details=details)
    if gate_problem:
        return result(CLUSTER014, CheckOutcome.WARN,
                      f"Kueue maps {GPU_CLASS} to {', '.join(sorted(mapped_names))}, but "
                      f"{gate_problem}", f"upgrade Kueue to v0.18+ (DRA integration on by "
                      f"default), or on v0.14-v0.17 set --feature-gates={OLD_GATE}=true",
                      details=details)
    covered = {name for q in queues.items for name in _covered(q)}
    uncovered = sorted(mapped_names - covered)
    if uncovered:
        return result(CLUSTER014, CheckOutcome.WARN,
                      f"Kueue maps {GPU_CLASS} to {', '.join(uncovered)}, which no ClusterQueue "
                      "covers: workloads with GPU claims cannot be admitted",
                      f"add {', '.join(uncovered)} to the coveredResources and nominalQuota of "
                      "the GPU ClusterQueues", details=details)
    return result(CLUSTER014, CheckOutcome.PASS,
                  f"Kueue maps {GPU_CLASS} claims to {', '.join(sorted(mapped_names))}, covered "
                  f"by ClusterQueues {named(gpu_queues)}", details=details)


def _gate_problem(deployment: tuple[str, Version | None, dict[str, bool]] | None,
                  config: Mapping[str, Any]) -> str | None:
    """Why Kueue's DRA integration is off, or None (on, or the version is unknown)."""
    if deployment is None:
        return None
    _, version, gates = deployment
    if version is None:
        return None
    gates = {**{str(k): bool(v) for k, v in as_mapping(config.get("featureGates")).items()},
             **gates}
    if not version.at_least(0, 14, 0):
        return f"Kueue {version} predates deviceClassMappings (v0.14)"
    if not version.at_least(0, 18, 0):
        if not gates.get(OLD_GATE, False):
            return f"Kueue {version} needs the alpha gate {OLD_GATE}=true (off by default)"
        return None
    if gates.get(NEW_GATE) is False:
        return f"the gate {NEW_GATE} is turned off"
    return None
