"""Which DaemonSets are the NVIDIA device plugin: the one matcher behind the audit's cluster
rules, the cluster source, preflight's CLUSTER007-008 and verify.

Device-plugin DaemonSets (facts-turn2 section 9; NVIDIA/k8s-device-plugin @ v0.20.0
`deployments/helm/nvidia-device-plugin/templates/daemonset-device-plugin.yml`):
- GPU Operator: `nvidia-device-plugin-daemonset`, label `app: nvidia-device-plugin-daemonset`,
  nodeSelector `nvidia.com/gpu.deploy.device-plugin: "true"`;
- standalone chart: `<release>-nvidia-device-plugin` (fullname rules), label
  `app.kubernetes.io/name: nvidia-device-plugin`, container `nvidia-device-plugin-ctr` running
  `nvidia-device-plugin`, hostPath `/var/lib/kubelet/device-plugins`; its GFD
  (`<fullname>-gpu-feature-discovery`) and MPS (`<fullname>-mps-control-daemon`) DaemonSets use
  the same image and labels, so they are excluded by name and command;
- static manifest: `nvidia-device-plugin-daemonset`, pod label `name: nvidia-device-plugin-ds`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpudra.k8s.object_fields import containers, image_repository, labels_of, pod_template_labels
from gpudra.k8s.objects import dig

DEVICE_PLUGIN_DAEMONSETS = frozenset({"nvidia-device-plugin-daemonset"})
DEVICE_PLUGIN_IMAGE = "k8s-device-plugin"
DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"
NOT_THE_PLUGIN = ("gpu-feature-discovery", "mps-control-daemon")


def device_plugin_daemonsets(daemonsets: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The NVIDIA device-plugin DaemonSets among `daemonsets` (GFD and MPS excluded)."""
    found = []
    for ds in daemonsets:
        name = str(dig(ds, "metadata", "name") or "")
        ctrs = containers(ds)
        if any(marker in name for marker in NOT_THE_PLUGIN) or any(
                marker in c.argv_text for c in ctrs for marker in NOT_THE_PLUGIN):
            continue
        labels, template = labels_of(ds), pod_template_labels(ds)
        images = {image_repository(c.image).rsplit("/", 1)[-1] for c in ctrs}
        runs_plugin = any(c.command[:1] == ("nvidia-device-plugin",)
                          or c.name == "nvidia-device-plugin-ctr" for c in ctrs)
        known = (name in DEVICE_PLUGIN_DAEMONSETS
                 or labels.get("app.kubernetes.io/name") == "nvidia-device-plugin"
                 or "nvidia-device-plugin-daemonset" in (labels.get("app"), template.get("app"))
                 or template.get("name") == "nvidia-device-plugin-ds")
        by_image = DEVICE_PLUGIN_IMAGE in images and (runs_plugin or _mounts_plugin_dir(ds))
        if known or by_image or runs_plugin:
            found.append(ds)
    return found


def _mounts_plugin_dir(ds: Mapping[str, Any]) -> bool:
    volumes = dig(ds, "spec", "template", "spec", "volumes") or ()
    return any(isinstance(v, Mapping) and
               str(dig(v, "hostPath", "path") or "").rstrip("/") == DEVICE_PLUGIN_DIR
               for v in volumes)
