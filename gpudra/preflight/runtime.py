"""Pure judgements about versions: the container runtime's CDI support and kubelet skew.

The cluster tier feeds these from `node.status.nodeInfo` (`containerRuntimeVersion`,
`kubeletVersion`) and the apiserver's `/version`; the node tier from `containerd --version` or
`crio --version`. Nothing here reads files or talks to anything.

Facts (each read from the named source):

containerd (containerd/containerd)
- No CDI before 1.7: `EnableCDI` does not exist in `pkg/cri/config/config.go` @ v1.6.39.
- 1.7.0 adds `enable_cdi` / `cdi_spec_dirs`, default off, dirs `/etc/cdi`, `/var/run/cdi`
  (`pkg/cri/config/config_unix.go` @ v1.7.0).
- 1.7.0 and 1.7.1 read CDI devices only from annotations; the CRI `CDIDevices` field, which is
  what the kubelet sends for DRA claims, is read from 1.7.2 (`pkg/cri/opts/spec_linux.go`
  `WithCDI` @ v1.7.2).
- 2.0 turns CDI on by default (`internal/cri/config/config_unix.go` @ v2.0.0,
  `EnableCDI: true`); the key moves to `[plugins."io.containerd.cri.v1.runtime"]`.
- 2.3 deprecates the key: `enable_cdi = false` logs a deprecation warning
  (`pkg/deprecation/deprecation.go`, `internal/cri/config/config.go` @ v2.3.0); RELEASES.md
  @ v2.3.0 lists it as deprecated since v2.2 with removal in v2.4, "CDI support will always be
  enabled". Nothing replaces it.
- Config versions: 1.7 reads 1 and 2; 2.0-2.2 write 3 (`version/version.go`
  `ConfigVersion = 3`); 2.3 writes 4 (`ConfigVersion = 4`, server settings moved to plugins).

CRI-O (cri-o/cri-o)
- CDI injection is always on (no enable switch); before 1.28 only from annotations
  (`internal/factory/container/device.go` @ v1.27.8); the CRI `CDIDevices` field is read from
  v1.28.0 (same file @ v1.28.0).

Kubelet skew (kubernetes/website, release-1.35, `content/en/releases/version-skew-policy.md`)
- kubelet must not be newer than kube-apiserver; it may be up to three minor versions older
  (kubelet < 1.25: only two).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpudra.k8s.object_fields import image_tag
from gpudra.preflight.check_records import CheckOutcome

_VERSION_RE = re.compile(
    r"v?(?P<major>\d+)\.(?P<minor>\d+)(?:\.(?P<patch>\d+))?(?:-(?P<suffix>[0-9A-Za-z.-]+))?"
    r"(?:\+[0-9A-Za-z.-]*)?")
# Only these suffixes mark a pre-release; others are vendor builds (1.7.27-k3s1, 1.34.2-gke.1).
_PRERELEASE_RE = re.compile(r"^(alpha|beta|rc|dev)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Version:
    """major.minor.patch; a pre-release (-alpha/-beta/-rc) sorts below its release.

    That is the cautious reading: pre-releases change defaults mid-way (containerd
    v2.0.0-beta.0 still had CDI off, v2.0.0-rc.0 had it on), so a threshold is met only by the
    release itself or anything later.
    """

    major: int
    minor: int
    patch: int
    is_release: bool = True
    text: str = ""

    def __str__(self) -> str:
        return self.text or f"{self.major}.{self.minor}.{self.patch}"

    def at_least(self, major: int, minor: int, patch: int = 0) -> bool:
        return (self.major, self.minor, self.patch, self.is_release) >= (major, minor, patch, True)


def parse_version(text: str, *, anywhere: bool = False) -> Version | None:
    """`1.7.27`, `v2.1.4`, `1.34.2-gke.100`, `2.0.0-rc.1`; None when `text` holds no version.

    With `anywhere`, the first version-looking word in a longer line is taken (command output).
    """
    text = text.strip()
    if anywhere:
        match = re.search(r"(?<![\w.])" + _VERSION_RE.pattern + r"(?![\w.])", text)
    else:
        match = _VERSION_RE.fullmatch(text)
    if match is None:
        return None
    suffix = match.group("suffix") or ""
    return Version(int(match.group("major")), int(match.group("minor")),
                   int(match.group("patch") or 0), not _PRERELEASE_RE.match(suffix),
                   match.group(0).lstrip("v"))


@dataclass(frozen=True, slots=True)
class Judgement:
    """An outcome with its one-line message and, unless it passed, what to do."""

    outcome: CheckOutcome
    message: str
    remediation: str | None = None


@dataclass(frozen=True, slots=True)
class RuntimeVersion:
    """`containerd://1.7.27` split: the runtime name as the kubelet reports it, and its version."""

    name: str
    version: Version | None
    raw: str


def split_runtime_version(raw: str) -> RuntimeVersion:
    name, sep, rest = raw.strip().partition("://")
    if not sep:
        return RuntimeVersion("", None, raw)
    return RuntimeVersion(name.lower(), parse_version(rest), raw)


@dataclass(frozen=True, slots=True)
class ContainerdTraits:
    """What a containerd release does about CDI, by version (facts in the module docstring)."""

    version: Version
    has_cdi: bool
    reads_cdi_devices_field: bool
    cdi_on_by_default: bool
    enable_cdi_deprecated: bool
    newest_config_version: int


CONTAINERD_CDI_TABLE_V2 = 'plugins."io.containerd.grpc.v1.cri"'
CONTAINERD_CONFIG_FIX = (
    "set `enable_cdi = true` and `cdi_spec_dirs = [\"/etc/cdi\", \"/var/run/cdi\"]` under "
    f"[{CONTAINERD_CDI_TABLE_V2}] in /etc/containerd/config.toml, then "
    "`systemctl restart containerd`")


def containerd_traits(version: Version) -> ContainerdTraits:
    return ContainerdTraits(
        version=version,
        has_cdi=version.at_least(1, 7, 0),
        reads_cdi_devices_field=version.at_least(1, 7, 2),
        cdi_on_by_default=version.at_least(2, 0, 0),
        enable_cdi_deprecated=version.at_least(2, 3, 0),
        newest_config_version=4 if version.at_least(2, 3, 0)
        else 3 if version.at_least(2, 0, 0) else 2,
    )


def judge_containerd(version: Version) -> Judgement:
    traits = containerd_traits(version)
    if not traits.has_cdi:
        return Judgement(CheckOutcome.FAIL,
                         f"containerd {version} has no CDI support (added in 1.7.0)",
                         "upgrade containerd to 2.x, or to 1.7.2 or newer with enable_cdi = true")
    if not traits.reads_cdi_devices_field:
        return Judgement(
            CheckOutcome.FAIL,
            f"containerd {version} ignores the CDI devices the kubelet sends for DRA claims "
            "(read from 1.7.2)",
            "upgrade containerd to 2.x, or to 1.7.2 or newer with enable_cdi = true")
    if not traits.cdi_on_by_default:
        return Judgement(
            CheckOutcome.WARN,
            f"containerd {version} supports CDI but leaves it off unless enable_cdi = true",
            "check the config with the node checks (NODE003), or " + CONTAINERD_CONFIG_FIX)
    note = "; enable_cdi is deprecated, CDI stays on" if traits.enable_cdi_deprecated else ""
    return Judgement(CheckOutcome.PASS, f"containerd {version} turns CDI on by default{note}")


def judge_crio(version: Version) -> Judgement:
    if not version.at_least(1, 28, 0):
        return Judgement(
            CheckOutcome.FAIL,
            f"CRI-O {version} ignores the CDI devices the kubelet sends for DRA claims "
            "(read from 1.28.0)",
            "upgrade CRI-O to 1.28 or newer")
    return Judgement(CheckOutcome.PASS, f"CRI-O {version} injects CDI devices (always on)")


def judge_runtime_version(container_runtime_version: str) -> Judgement:
    """Judge `status.nodeInfo.containerRuntimeVersion` for DRA: can the runtime inject the CDI
    devices the kubelet passes for a claim?"""
    runtime = split_runtime_version(container_runtime_version)
    if runtime.name == "containerd" and runtime.version:
        return judge_containerd(runtime.version)
    if runtime.name == "cri-o" and runtime.version:
        return judge_crio(runtime.version)
    if runtime.name in ("containerd", "cri-o"):
        return Judgement(CheckOutcome.UNAVAILABLE,
                         f"cannot read a version in {container_runtime_version!r}",
                         "check the runtime version on the node (`containerd --version`)")
    if runtime.name == "docker":
        return Judgement(
            CheckOutcome.UNAVAILABLE,
            f"runtime {container_runtime_version!r} (cri-dockerd): gpudra does not know whether "
            "it passes CDI devices; the NVIDIA DRA driver documents containerd and CRI-O",
            "move the node to containerd 2.x or CRI-O 1.28+")
    shown = container_runtime_version or "(empty)"
    return Judgement(CheckOutcome.UNAVAILABLE,
                     f"unknown container runtime {shown!r}; gpudra judges containerd and CRI-O",
                     "check CDI support in the runtime's documentation")


KUBELET_MAX_OLDER = 3
KUBELET_MAX_OLDER_BEFORE_1_25 = 2


def judge_kubelet_skew(kubelet_version: str, apiserver_version: str) -> Judgement:
    """Kubernetes version-skew policy for a kubelet against its kube-apiserver."""
    kubelet, apiserver = parse_version(kubelet_version), parse_version(apiserver_version)
    if kubelet is None or apiserver is None:
        bad = kubelet_version if kubelet is None else apiserver_version
        return Judgement(CheckOutcome.UNAVAILABLE, f"cannot read a Kubernetes version in {bad!r}",
                         "compare `kubectl version` with `kubectl get nodes`")
    if kubelet.major != 1 or apiserver.major != 1:
        return Judgement(CheckOutcome.UNAVAILABLE,
                         f"kubelet {kubelet}, apiserver {apiserver}: only 1.x is known",
                         "see https://kubernetes.io/releases/version-skew-policy/")
    if kubelet.minor > apiserver.minor:
        return Judgement(
            CheckOutcome.FAIL,
            f"kubelet {kubelet} is newer than kube-apiserver {apiserver} (not supported)",
            "upgrade the control plane before the kubelets")
    allowed = KUBELET_MAX_OLDER if kubelet.minor >= 25 else KUBELET_MAX_OLDER_BEFORE_1_25
    behind = apiserver.minor - kubelet.minor
    if behind > allowed:
        return Judgement(
            CheckOutcome.FAIL,
            f"kubelet {kubelet} is {behind} minor versions behind kube-apiserver {apiserver} "
            f"(at most {allowed} supported)",
            f"upgrade the kubelet to 1.{apiserver.minor - allowed} or newer")
    return Judgement(CheckOutcome.PASS,
                     f"kubelet {kubelet} within the supported skew of kube-apiserver {apiserver}")


def image_version(image: str) -> Version | None:
    """The version in an image tag (`v1.32.1`, `1.14.1`, `v26.7.0-ubi9`), or None."""
    tag = image_tag(image)
    return parse_version(tag, anywhere=True) if tag else None
