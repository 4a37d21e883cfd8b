"""CDI spec files on the node: do they parse and validate, and which NVIDIA ones exist (NODE006).

Validation follows the CDI library the runtimes vendor (cncf-tags/container-device-interface
@ v1.1.0):
- a spec directory's files ending in `.yaml` or `.json` are specs; subdirectories are skipped
  (`pkg/cdi/spec-dirs.go` `scanSpecDirs`);
- decoding is strict: unknown fields are errors (`pkg/cdi/spec.go` `ParseSpec`,
  `yaml.UnmarshalStrict`); fields are those of `specs-go/config.go`;
- `cdiVersion` must be a released spec version, 0.1.0 to 1.1.0 (`specs-go/version.go`);
- `kind` is `vendor/class`: both start with a letter, end with a letter or digit, and use
  letters, digits, `_`, `-`, `.` in between (`pkg/parser/parser.go`);
- at least one device; names start and end with a letter or digit, may use `_ - . :`, are
  unique in the spec, and every device has at least one container edit (`pkg/cdi/device.go`);
- the same fully qualified device in two specs of one directory is a conflict and *neither* is
  usable; across directories the later directory wins (`pkg/cdi/cache.go` `refresh`).

NVIDIA specs (docs/dra-reference.md section 9): `nvidia-ctk cdi generate` writes kind
`nvidia.com/gpu` (devices `0`, `GPU-<uuid>`, `all`, ...), used by the device plugin and
`--device nvidia.com/gpu=...`; the DRA driver writes one transient spec per prepared claim with
kind `k8s.gpu.nvidia.com/claim` and devices `<claimUID>-<device>` into `/var/run/cdi`. Only the
latter matter for DRA, so only a broken claim spec fails the check; any other broken spec warns
(the runtime skips it and logs an error on every container start).
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from gpudra.preflight.check_records import CheckOutcome, CheckResult, Tier, check, result
from gpudra.preflight.node.cdi_dirs import (
    DEFAULT_SPEC_DIRS,
    DRA_DRIVER_CDI_DIR,
    format_dirs,
    same_dir,
)
from gpudra.preflight.node.host import Host, HostReadError

try:
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML without libyaml
    _Loader = yaml.SafeLoader

KNOWN_CDI_VERSIONS = ("0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0",
                      "1.0.0", "1.1.0")
NVIDIA_GPU_KIND = "nvidia.com/gpu"
DRA_CLAIM_KIND = "k8s.gpu.nvidia.com/claim"

_SPEC_KEYS = {"cdiVersion", "kind", "annotations", "devices", "containerEdits"}
_DEVICE_KEYS = {"name", "annotations", "containerEdits"}
_EDIT_KEYS = {"env", "deviceNodes", "netDevices", "hooks", "mounts", "intelRdt",
              "additionalGids"}
_REQUIRED_IN_EDIT = {"deviceNodes": ("path",), "mounts": ("hostPath", "containerPath"),
                     "hooks": ("hookName", "path"), "netDevices": ("hostInterfaceName", "name")}
_VENDOR_CLASS_RE = re.compile(r"^[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?$")
_DEVICE_NAME_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?$")
_SHOW_DEVICES = 6

NODE006 = check(
    "NODE006", "CDI specs are valid", Tier.NODE,
    "Every CDI spec in the runtime's spec directories parses and validates; NVIDIA specs listed.",
    """
**Why it matters.** The runtime resolves a claim's device names through the CDI specs in its
spec directories (`/etc/cdi`, `/var/run/cdi` and any `cdi_spec_dirs`). A spec that does not
parse or validate is skipped with an error on every container start, and two specs in one
directory that define the same device make *both* unusable. gpudra validates each spec the
way the CDI library does and lists the NVIDIA ones: `nvidia.com/gpu` from `nvidia-ctk cdi
generate` (device plugin / CDI mode) and `k8s.gpu.nvidia.com/claim`, written by the DRA driver
for each prepared claim.

Missing directories are normal: the DRA driver creates `/var/run/cdi` content only when it
prepares a claim, so an empty or absent `/var/run/cdi` on a node without running GPU claims
is not a problem.

**Outcomes.** *pass*: every spec found is valid (or there are none yet). *warn*: a spec other
than a DRA claim spec is invalid or conflicts (for example a hand-written or stale
`/etc/cdi/nvidia.yaml`). *fail*: a DRA claim spec (`k8s.gpu.nvidia.com/claim`) is invalid or
conflicts: the pod using that claim cannot start. *unavailable*: a spec directory or file
could not be read.

**Fix.** Regenerate or delete the named file: `nvidia-ctk cdi generate
--output=/etc/cdi/nvidia.yaml` for the device-plugin spec; for a claim spec, restart the DRA
driver's kubelet plugin on the node so it rewrites its specs. `nvidia-ctk cdi list` shows the
devices the CDI library can resolve.
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))


@dataclass(frozen=True, slots=True)
class SpecFile:
    path: str
    directory: str
    kind: str | None
    devices: tuple[str, ...]
    errors: tuple[str, ...]
    notes: tuple[str, ...] = ()

    @property
    def is_claim_spec(self) -> bool:
        return self.kind == DRA_CLAIM_KIND


@dataclass(frozen=True, slots=True)
class SpecScan:
    dirs: tuple[str, ...]  # scanned, in priority order (later wins)
    missing_dirs: tuple[str, ...]
    not_scanned_by_runtime: tuple[str, ...]
    files: tuple[SpecFile, ...]
    unreadable: tuple[str, ...]
    conflicts: tuple[tuple[str, str, str], ...]  # (device, file, file)
    ignored: tuple[str, ...] = ()  # look like specs but CDI never reads them (.yml)


def scan_specs(host: Host, runtime_dirs: Sequence[str] | None) -> SpecScan:
    """Scan the runtime's directories (defaults when unknown) plus the two default ones."""
    ordered: list[str] = []
    seen: set[str] = set()
    for directory in [*(runtime_dirs or DEFAULT_SPEC_DIRS), *DEFAULT_SPEC_DIRS]:
        key = same_dir(host, directory)
        if directory.startswith("/") and key not in seen:
            seen.add(key)
            ordered.append(posixpath.normpath(directory))
    scanned_by_runtime = {same_dir(host, d) for d in (runtime_dirs or DEFAULT_SPEC_DIRS)}
    files: list[SpecFile] = []
    missing, unreadable, ignored = [], [], []
    for directory in ordered:
        try:
            names = host.list_dir(directory)
        except HostReadError as exc:
            unreadable.append(f"{directory}: {exc.reason}")
            continue
        if names is None:
            missing.append(directory)
            continue
        for name in names:
            path = posixpath.join(directory, name)
            if host.is_dir(path):
                continue
            if name.endswith(".yml"):
                ignored.append(path)
            if not name.endswith((".yaml", ".json")):
                continue
            try:
                text = host.read_text(path)
            except HostReadError as exc:
                unreadable.append(f"{path}: {exc.reason}")
                continue
            if text is not None:
                files.append(read_spec(path, directory, text))
    not_scanned = tuple(d for d in ordered if same_dir(host, d) not in scanned_by_runtime)
    return SpecScan(tuple(ordered), tuple(missing), not_scanned, tuple(files),
                    tuple(unreadable), tuple(_conflicts(files)), tuple(ignored))


def read_spec(path: str, directory: str, text: str) -> SpecFile:
    try:
        data = json.loads(text) if path.endswith(".json") else yaml.load(text, Loader=_Loader)
    except json.JSONDecodeError as exc:
        return SpecFile(path, directory, None, (),
                        (f"does not parse: line {exc.lineno}, column {exc.colno}: {exc.msg}",))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        return SpecFile(path, directory, None, (),
                        (f"does not parse: {where}{exc.problem or exc.context}",))
    except (ValueError, yaml.YAMLError) as exc:
        return SpecFile(path, directory, None, (), (f"does not parse: {_one_line(exc)}",))
    kind, devices, errors, notes = validate_spec(data)
    return SpecFile(path, directory, kind, devices, tuple(errors), tuple(notes))


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def validate_spec(data: Any) -> tuple[str | None, tuple[str, ...], list[str], list[str]]:
    """(kind, device names, errors, notes) for one decoded spec."""
    if not isinstance(data, Mapping):
        return None, (), ["not a CDI spec (the document is not a mapping)"], []
    errors: list[str] = [f"unknown field `{k}`" for k in data if k not in _SPEC_KEYS]
    notes: list[str] = []
    version = data.get("cdiVersion")
    if not isinstance(version, str) or not version:
        errors.append("`cdiVersion` is missing")
    elif version not in KNOWN_CDI_VERSIONS:
        if _is_newer_version(version, KNOWN_CDI_VERSIONS[-1]):
            notes.append(f"cdiVersion {version} is newer than gpudra knows "
                         f"({KNOWN_CDI_VERSIONS[-1]}); runtimes with an older CDI library "
                         "reject it")
        else:
            errors.append(f"`cdiVersion` {version!r} is not a CDI spec version")
    kind = data.get("kind")
    if not isinstance(kind, str) or not kind:
        errors.append("`kind` is missing")
        kind = None
    else:
        errors += _kind_errors(kind)
    errors += _edit_errors(data.get("containerEdits"), "containerEdits", required=False)
    names = _device_errors(data.get("devices"), errors)
    return kind, names, errors, notes


def _is_newer_version(version: str, newest: str) -> bool:
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        return False
    return tuple(map(int, version.split("."))) > tuple(map(int, newest.split(".")))


def _kind_errors(kind: str) -> list[str]:
    vendor, slash, klass = kind.partition("/")
    if not slash:
        return [f"`kind` {kind!r} is not vendor/class"]
    return [f"`kind` {kind!r}: {part} {value!r} must start with a letter, end with a letter or "
            "digit, and contain only letters, digits, '_', '-', '.'"
            for part, value in (("vendor", vendor), ("class", klass))
            if not _VENDOR_CLASS_RE.match(value)]


def _device_errors(devices: Any, errors: list[str]) -> tuple[str, ...]:
    if not isinstance(devices, list) or not devices:
        errors.append("`devices` is missing or empty (a spec needs at least one device)")
        return ()
    names: list[str] = []
    for index, device in enumerate(devices):
        where = f"devices[{index}]"
        if not isinstance(device, Mapping):
            errors.append(f"{where} is not a mapping")
            continue
        errors += [f"{where}: unknown field `{k}`" for k in device if k not in _DEVICE_KEYS]
        name = device.get("name")
        if not isinstance(name, str) or not _DEVICE_NAME_RE.match(name):
            errors.append(f"{where}: name {name!r} must start and end with a letter or digit "
                          "and contain only letters, digits, '_', '-', '.', ':'")
        elif name in names:
            errors.append(f"{where}: device {name!r} is defined twice")
        else:
            names.append(name)
        errors += _edit_errors(device.get("containerEdits"), f"{where}.containerEdits",
                               required=True)
    return tuple(names)


def _edit_errors(edits: Any, where: str, *, required: bool) -> list[str]:
    if edits is None:
        return [f"{where} is missing (a device needs at least one edit)"] if required else []
    if not isinstance(edits, Mapping):
        return [f"{where} is not a mapping"]
    errors = [f"{where}: unknown field `{k}`" for k in edits if k not in _EDIT_KEYS]
    if required and not any(edits.get(k) for k in _EDIT_KEYS):
        errors.append(f"{where} is empty (a device needs at least one edit)")
    for key, fields in _REQUIRED_IN_EDIT.items():
        items = edits.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            errors.append(f"{where}.{key} is not a list")
            continue
        for index, item in enumerate(items):
            missing = [f for f in fields if not isinstance(item, Mapping) or not item.get(f)]
            if missing:
                errors.append(f"{where}.{key}[{index}] lacks {', '.join(missing)}")
    env = edits.get("env")
    if env is not None and (not isinstance(env, list)
                            or not all(isinstance(e, str) for e in env)):
        errors.append(f"{where}.env must be a list of VAR=value strings")
    return errors


def _conflicts(files: Iterable[SpecFile]) -> list[tuple[str, str, str]]:
    owner: dict[tuple[str, str], SpecFile] = {}
    out = []
    for spec in files:
        if spec.errors or spec.kind is None:
            continue
        for name in spec.devices:
            qualified = f"{spec.kind}={name}"
            other = owner.get((spec.directory, qualified))
            if other is not None:
                out.append((qualified, other.path, spec.path))
            owner[(spec.directory, qualified)] = spec
    return out


def check_cdi_specs(scan: SpecScan, subject: str | None) -> CheckResult:
    details = [_describe(spec) for spec in scan.files]
    details += [f"conflict: {dev} is defined in both {a} and {b}; neither is usable"
                for dev, a, b in scan.conflicts]
    details += [f"cannot read {u}" for u in scan.unreadable]
    details += [f"{path}: ignored, CDI reads only .yaml and .json files" for path in scan.ignored]
    if scan.missing_dirs:
        details.append(f"missing (nothing to scan): {format_dirs(scan.missing_dirs)}")
    details += [f"{d} is not in the runtime's cdi_spec_dirs: its specs are not used"
                for d in scan.not_scanned_by_runtime]
    bad = [s for s in scan.files if s.errors]
    conflicting = {path for _, a, b in scan.conflicts for path in (a, b)}
    bad_claims = [s for s in scan.files
                  if s.is_claim_spec and (s.errors or s.path in conflicting)]
    if bad_claims:
        spec = bad_claims[0]
        why = spec.errors[0] if spec.errors else "conflicts with another spec"
        return result(NODE006, CheckOutcome.FAIL,
                      f"DRA claim spec {spec.path} is unusable: {why}",
                      "restart the NVIDIA DRA driver's kubelet plugin on this node so it "
                      "rewrites its specs", subject=subject, details=details)
    if bad or scan.conflicts or scan.ignored:
        if bad:
            path, why = bad[0].path, bad[0].errors[0]
        elif scan.conflicts:
            path, why = scan.conflicts[0][1], f"conflicts over {scan.conflicts[0][0]}"
        else:
            path, why = scan.ignored[0], "ignored, CDI reads only .yaml and .json files"
        count = len(bad) + len(scan.conflicts) + len(scan.ignored)
        return result(NODE006, CheckOutcome.WARN,
                      f"{count} CDI spec problem(s); {path}: {why}",
                      f"regenerate or remove {path} (`nvidia-ctk cdi generate "
                      "--output=/etc/cdi/nvidia.yaml` for NVIDIA's)",
                      subject=subject, details=details)
    if scan.unreadable:
        return result(NODE006, CheckOutcome.UNAVAILABLE, f"cannot read {scan.unreadable[0]}",
                      "run gpudra as root on the node; fix or remove broken links",
                      subject=subject, details=details)
    return result(NODE006, CheckOutcome.PASS, _summary(scan), subject=subject, details=details)


def _describe(spec: SpecFile) -> str:
    if spec.errors:
        return f"{spec.path}: invalid: {'; '.join(spec.errors)}"
    shown = ", ".join(spec.devices[:_SHOW_DEVICES])
    if len(spec.devices) > _SHOW_DEVICES:
        shown += f", ... ({len(spec.devices)} in all)"
    text = f"{spec.path}: {spec.kind}: {shown}"
    if spec.notes:
        text += f" ({'; '.join(spec.notes)})"
    return text


def _summary(scan: SpecScan) -> str:
    if not scan.files:
        return (f"no CDI specs yet in {format_dirs(scan.dirs)}; normal before the DRA driver "
                f"prepares a claim (it writes to {DRA_DRIVER_CDI_DIR})")
    claims = [s for s in scan.files if s.is_claim_spec]
    gpu = [s for s in scan.files if s.kind == NVIDIA_GPU_KIND]
    parts = [f"{len(scan.files)} valid CDI spec file(s)"]
    if claims:
        parts.append(f"{len(claims)} DRA claim spec(s) ({DRA_CLAIM_KIND})")
    if gpu:
        devices = sum(len(s.devices) for s in gpu)
        parts.append(f"{NVIDIA_GPU_KIND} with {devices} device name(s) in "
                     f"{', '.join(s.path for s in gpu)}")
    if not claims and not gpu:
        parts.append("none from NVIDIA")
    return "; ".join(parts)
