"""containerd's CDI settings as containerd itself would read them (NODE003).

What containerd does with its config files (containerd/containerd, the tags named):

- **Loading** (`services/server/config/config.go` @ v1.7.27, `cmd/containerd/server/config/
  config.go` @ v2.x): the main file, then every entry of its top-level `imports`, breadth
  first, each file once. A non-absolute path is relative to the importing file's directory; a
  path with `*` is a glob. containerd 1.7 globs the pattern *before* making it absolute, so a
  relative glob is resolved against containerd's working directory (`/` under systemd); 2.x
  makes it absolute first. A missing imported file or a TOML syntax error stops containerd.
  No main file at all means built-in defaults (`cmd/containerd/command/main.go`).
- **Merging:** 1.7 replaces a plugin's whole table with the imported file's table
  (`for k, v := range from.Plugins { to.Plugins[k] = v }`), so a drop-in that only sets
  `enable_cdi` drops every other CRI setting of the main file. 2.x merges key by key (commit
  a21e379b6, "Allow sections of Plugins to be merged"). gpudra lets a later file's value win;
  for lists, 2.x may append instead of replace (mergo's slice transformer): `crictl info`
  (NODE005) shows what containerd made of it.
- **Config versions and the CDI table:** version 1 (no `version` key) uses `[plugins.cri]`;
  version 2 uses `[plugins."io.containerd.grpc.v1.cri"]` (containerd 1.7 reads that table for
  any version >= 2, `Decode` @ v1.7.2); version 3 (2.0+) moves `enable_cdi` and
  `cdi_spec_dirs` to `[plugins.'io.containerd.cri.v1.runtime']`. containerd 2.x migrates an
  older file (`plugins/cri/runtime/plugin.go` `configMigration`: keys of the old CRI table are
  copied into the runtime table unless already set there). 2.0-2.2 migrate the merged config
  from its `version` (the last file that sets one); 2.3+ migrate each file from its own
  version, treat a file without `version` as version 1, refuse a drop-in newer than the main
  file, and, since their newest config version is 4, also migrate version-3 files. A key in a
  table the file's version does not read does nothing.
- **Defaults:** `enable_cdi` false and `cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]` on 1.7
  (`pkg/cri/config/config_unix.go` @ v1.7.0); true and the same directories on 2.x
  (`internal/cri/config/config_unix.go` @ v2.0.0). From 2.3 the key is deprecated (warning for
  `enable_cdi = false`, removal planned for 2.4; RELEASES.md @ v2.3.0): CDI will always be on.

When the containerd version is unknown, the config is judged under every containerd release its
config version fits (version 2: 1.7, 2.0, 2.3; version 3: 2.0, 2.3; version 4: 2.3), and the
result says which releases were assumed. If they disagree, the check warns.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpudra.k8s.objects import as_mapping
from gpudra.preflight.check_records import CheckOutcome, CheckResult, Tier, check, result
from gpudra.preflight.node.cdi_dirs import (
    DEFAULT_SPEC_DIRS,
    ConfiguredCdi,
    covers_dra_dir,
    dra_dir_left_out,
    format_dirs,
    is_dir_list,
)
from gpudra.preflight.node.host import Host
from gpudra.preflight.node.runtime_info import CONTAINERD, RuntimeIdentity
from gpudra.preflight.node.tomlfiles import FileProblem, TomlFile, read_toml, table
from gpudra.preflight.runtime import ContainerdTraits, Version, containerd_traits

CONTAINERD_CONFIG = "/etc/containerd/config.toml"

PLUGIN_V1 = "cri"
PLUGIN_V2 = "io.containerd.grpc.v1.cri"
PLUGIN_V3 = "io.containerd.cri.v1.runtime"
CDI_KEYS = ("enable_cdi", "cdi_spec_dirs")
_TABLE_SHOWN = {
    PLUGIN_V1: "[plugins.cri]",
    PLUGIN_V2: '[plugins."io.containerd.grpc.v1.cri"]',
    PLUGIN_V3: "[plugins.'io.containerd.cri.v1.runtime']",
}
# The tables containerd really has, written without quotes: TOML splits them at every dot.
_UNQUOTED = {PLUGIN_V2: ("io", "containerd", "grpc", "v1", "cri"),
             PLUGIN_V3: ("io", "containerd", "cri", "v1", "runtime")}
# Representative releases when the version is unknown, per config version that fits them.
_V1_7, _V2_0, _V2_3 = Version(1, 7, 2), Version(2, 0, 0), Version(2, 3, 0)
_CANDIDATES = {1: (_V1_7, _V2_0, _V2_3), 2: (_V1_7, _V2_0, _V2_3), 3: (_V2_0, _V2_3),
               4: (_V2_3,)}

NODE003 = check(
    "NODE003", "containerd enables CDI", Tier.NODE,
    "containerd's config (with its imports) turns CDI on and scans /var/run/cdi.",
    """
**Why it matters.** containerd injects a claim's GPUs only when CDI is on and the directory
the NVIDIA DRA driver writes its per-claim specs to (`/var/run/cdi`) is among `cdi_spec_dirs`.
containerd 1.7 has CDI **off** unless `enable_cdi = true`; 2.x has it on unless a config turns
it off. The setting lives in a different table per config version, and a key in the wrong
table is silently ignored.

gpudra reads `/etc/containerd/config.toml` and its `imports` (globs, relative paths, drop-ins
such as `/etc/containerd/conf.d/99-nvidia.toml` written by `nvidia-ctk runtime configure`) the
way containerd does, then works out the effective `enable_cdi` and `cdi_spec_dirs`. It uses
the containerd version when it can learn it (NODE002), and otherwise judges the config under
every release its `version` fits and says so.

**Outcomes.** *pass*: CDI is on and `/var/run/cdi` is scanned. *warn*: CDI is on, but a CDI
key sits in a table that does nothing, an import replaces the main file's whole CRI table
(containerd 1.7), or the answer depends on a containerd version gpudra could not learn.
*fail*: CDI is off, `/var/run/cdi` is not scanned, a value has the wrong type, or a file
containerd will not start with (TOML syntax error, missing import). *unavailable*: containerd
is not this node's runtime, or the config could not be read.

**Fix.** containerd 1.7 (config `version = 2`):

```toml
[plugins."io.containerd.grpc.v1.cri"]
  enable_cdi = true
  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
```

containerd 2.x (config `version = 3`): CDI is on by default; remove any `enable_cdi = false`,
or set it under `[plugins.'io.containerd.cri.v1.runtime']`. Restart containerd afterwards
(`systemctl restart containerd`); NODE005 confirms what the running daemon uses.
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))


@dataclass(frozen=True, slots=True)
class ConfigFile:
    path: str
    version: int  # 0 when the file has no `version` key
    data: Mapping[str, Any]

    @property
    def plugins(self) -> Mapping[str, Any]:
        return as_mapping(self.data.get("plugins"))


@dataclass(frozen=True, slots=True)
class ContainerdConfig:
    """The files containerd would load, in load order, and what stopped any of them."""

    main_path: str
    main_exists: bool
    files: tuple[ConfigFile, ...]
    problems: tuple[FileProblem, ...]
    notes: tuple[str, ...] = ()

    @property
    def root_version(self) -> int:
        return self.files[0].version if self.files and self.main_exists else 0


def load_containerd_config(host: Host, path: str = CONTAINERD_CONFIG, *,
                           globs_relative_to_file: bool = True) -> ContainerdConfig:
    """Follow `imports` like containerd (see the module docstring). `globs_relative_to_file` is
    False for containerd 1.7, which resolves a relative glob against its working directory."""
    files: list[ConfigFile] = []
    problems: list[FileProblem] = []
    notes: list[str] = []
    main_exists = True
    loaded: set[str] = set()
    pending = [path]
    while pending:
        current, pending = pending[0], pending[1:]
        if current in loaded:
            continue
        loaded.add(current)
        read = read_toml(host, current)
        if read is None:
            if current == path:
                main_exists = False
            else:
                problems.append(FileProblem(
                    current, "imported but missing",
                    fix=f"create {current} or remove it from `imports`"))
            continue
        if isinstance(read, FileProblem):
            problems.append(read)
            continue
        version = read.data.get("version", 0)
        if not isinstance(version, int) or isinstance(version, bool):
            problems.append(FileProblem(current, f"`version` must be an integer, "
                                                 f"found {version!r}"))
            version = 0
        files.append(ConfigFile(current, version, read.data))
        imports, import_notes, import_problems = _resolve_imports(
            host, read, globs_relative_to_file)
        notes += import_notes
        problems += import_problems
        pending += imports
    return ContainerdConfig(path, main_exists, tuple(files), tuple(problems), tuple(notes))


def _resolve_imports(host: Host, parent: TomlFile, globs_relative_to_file: bool
                     ) -> tuple[list[str], list[str], list[FileProblem]]:
    raw = parent.data.get("imports", [])
    if not isinstance(raw, list) or not all(isinstance(i, str) for i in raw):
        return [], [], [FileProblem(parent.path, "`imports` must be a list of paths")]
    out: list[str] = []
    notes: list[str] = []
    base = posixpath.dirname(parent.path)
    for entry in raw:
        is_glob = "*" in entry
        if is_glob and not entry.startswith("/") and not globs_relative_to_file:
            notes.append(f"{parent.path}: containerd 1.7 resolves the relative glob {entry!r} "
                         "against its working directory (/ under systemd), not the config "
                         "directory")
            pattern = posixpath.normpath("/" + entry)
        else:
            pattern = posixpath.normpath(posixpath.join(base, entry))
        if is_glob:
            matches = host.glob(pattern)
            if not matches:
                notes.append(f"{parent.path}: import {entry!r} matches no file")
            out += matches
        else:
            out.append(pattern)
    return out, notes, []


@dataclass(frozen=True, slots=True)
class Note:
    """Something about the config worth saying. `key` identifies it across assumed versions."""

    outcome: CheckOutcome  # WARN or FAIL; PASS for information only
    text: str
    key: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CdiSettings:
    """The effective CDI settings for one containerd release."""

    traits: ContainerdTraits
    enabled: bool
    enabled_from: str
    enable_set_explicitly: bool
    spec_dirs: tuple[str, ...]
    dirs_from: str
    notes: tuple[Note, ...] = field(default=())


def _tables_read(version: int, traits: ContainerdTraits) -> tuple[str, ...]:
    """The CRI tables a file of config `version` is read from, in precedence order."""
    if traits.version.major < 2:
        return (PLUGIN_V1,) if version <= 1 else (PLUGIN_V2,)
    tables = [PLUGIN_V3]
    if version < traits.newest_config_version:
        tables.append(PLUGIN_V2)
    if version <= 1:
        tables.append(PLUGIN_V1)
    return tuple(tables)


def _file_versions(config: ContainerdConfig, traits: ContainerdTraits) -> list[int]:
    if traits.version.at_least(2, 3, 0):
        return [max(f.version, 1) for f in config.files]
    merged = 0
    for f in config.files:  # mergo keeps the last non-zero `version`
        merged = f.version or merged
    return [max(merged, 1)] * len(config.files)


def effective_cdi(config: ContainerdConfig, traits: ContainerdTraits) -> CdiSettings:
    """Walk the files in load order and apply containerd's merge and migration rules."""
    enabled: Any = traits.cdi_on_by_default
    enabled_from = f"default of containerd {traits.version}"
    dirs: Any = DEFAULT_SPEC_DIRS
    dirs_from = "default"
    explicit = False
    notes: list[Note] = []
    whole_table: tuple[str, Mapping[str, Any]] | None = None  # 1.7: last file's CRI table
    for cfg, version in zip(config.files, _file_versions(config, traits)):
        tables = _tables_read(version, traits)
        notes += _misplaced(cfg, version, tables)
        if traits.version.major < 2:
            own = table(cfg.plugins, tables[0])
            if own is None:
                continue
            if whole_table is not None:
                notes += _replaced_table(whole_table, cfg.path, own, tables[0])
                # The table replaces the earlier one: keys it lacks fall back to the defaults.
                enabled, enabled_from = traits.cdi_on_by_default, \
                    f"default of containerd {traits.version} ({cfg.path} replaces the CRI table)"
                dirs, dirs_from, explicit = DEFAULT_SPEC_DIRS, "default", False
            whole_table = (cfg.path, own)
        for key in CDI_KEYS:
            for name in tables:
                values = table(cfg.plugins, name)
                if values is None or key not in values:
                    continue
                where = f"{cfg.path} {_TABLE_SHOWN[name]}"
                if name != tables[0] and traits.version.major >= 2:
                    notes.append(Note(CheckOutcome.PASS, f"{where}: `{key}` is read only by "
                                      f"migrating config version {version}; containerd logs a "
                                      "migration warning (`containerd config migrate`)"))
                if key == "enable_cdi":
                    enabled, enabled_from, explicit = values[key], where, True
                else:
                    dirs, dirs_from = values[key], where
                break
    notes += _type_notes(enabled, enabled_from, dirs, dirs_from)
    if not isinstance(enabled, bool):
        enabled = False
    if not is_dir_list(dirs):
        dirs = ()
    if explicit and traits.enable_cdi_deprecated:
        notes.append(Note(CheckOutcome.PASS, f"{enabled_from}: `enable_cdi` is deprecated "
                          "(containerd RELEASES.md: since 2.2, removal planned for 2.4; 2.3 "
                          "warns when it is false); nothing replaces it: CDI will always be on"))
    return CdiSettings(traits, enabled, enabled_from, explicit, tuple(dirs), dirs_from,
                       tuple(notes))


def _misplaced(cfg: ConfigFile, version: int, tables: Sequence[str]) -> list[Note]:
    notes = []
    for name in (PLUGIN_V1, PLUGIN_V2, PLUGIN_V3):
        values = table(cfg.plugins, name)
        if name in tables or values is None:
            continue
        for key in CDI_KEYS:
            if key in values:
                read = " or ".join(_TABLE_SHOWN[t] for t in tables)
                notes.append(Note(
                    CheckOutcome.WARN,
                    f"{cfg.path}: `{key}` under {_TABLE_SHOWN[name]} does nothing with config "
                    f"version {version or 1}; it is read from {read}",
                    ("misplaced", cfg.path, name, key)))
    for name, parts in _UNQUOTED.items():
        values = table(cfg.plugins, *parts)
        if values is not None and any(k in values for k in CDI_KEYS):
            notes.append(Note(
                CheckOutcome.WARN,
                f"{cfg.path}: the table name is not quoted, so TOML splits it at every dot and "
                f"the CDI keys do nothing; write {_TABLE_SHOWN[name]}",
                ("unquoted", cfg.path, name)))
    for key in CDI_KEYS:
        if key in cfg.data:
            notes.append(Note(CheckOutcome.WARN, f"{cfg.path}: top-level `{key}` does nothing; it "
                              "belongs in the CRI plugin table", ("toplevel", cfg.path, key)))
    return notes


def _replaced_table(previous: tuple[str, Mapping[str, Any]], path: str,
                    own: Mapping[str, Any], name: str) -> list[Note]:
    lost = sorted(k for k in previous[1] if k not in own and k not in CDI_KEYS)
    if not lost:
        return []
    shown = ", ".join(lost[:6]) + (", ..." if len(lost) > 6 else "")
    return [Note(CheckOutcome.WARN,
                 f"{path} replaces the whole {_TABLE_SHOWN[name]} table of {previous[0]} "
                 f"(containerd 1.7 does not merge plugin tables): {shown} from "
                 f"{previous[0]} no longer apply",
                 ("replaced", path, previous[0]))]


def _type_notes(enabled: Any, enabled_from: str, dirs: Any, dirs_from: str) -> list[Note]:
    notes = []
    if not isinstance(enabled, bool):
        notes.append(Note(CheckOutcome.FAIL, f"{enabled_from}: `enable_cdi` must be true or false, "
                          f"found {enabled!r}", ("type", "enable_cdi")))
    if not is_dir_list(dirs):
        notes.append(Note(CheckOutcome.FAIL, f"{dirs_from}: `cdi_spec_dirs` must be a list of "
                          f"paths, found {dirs!r}", ("type", "cdi_spec_dirs")))
    return notes


def assumed_traits(identity: RuntimeIdentity, config: ContainerdConfig
                   ) -> tuple[list[ContainerdTraits], bool]:
    """The containerd releases to judge under, and whether the version is known."""
    if identity.name == CONTAINERD and identity.version is not None:
        return [containerd_traits(identity.version)], True
    root = config.root_version
    fits = _CANDIDATES.get(root, _CANDIDATES[4] if root > 4 else _CANDIDATES[2])
    return [containerd_traits(v) for v in fits], False


def check_containerd(host: Host, identity: RuntimeIdentity, config: ContainerdConfig,
                     subject: str | None) -> tuple[CheckResult, ConfiguredCdi | None]:
    """The result, and the effective settings when the config has one answer."""
    unreadable = [p for p in config.problems if p.unreadable]
    if unreadable:
        return result(NODE003, CheckOutcome.UNAVAILABLE, str(unreadable[0]),
                      unreadable[0].fix or "run gpudra as root on the node, or mount the host "
                      "root readable",
                      subject=subject, details=map(str, config.problems)), None
    if config.problems:
        first = config.problems[0]
        return result(NODE003, CheckOutcome.FAIL,
                      f"containerd will not start with its config: {first}",
                      first.fix or f"fix {first.path}; `containerd config dump` shows what "
                      "containerd reads",
                      subject=subject, details=[*map(str, config.problems), *config.notes]), None
    candidates, known = assumed_traits(identity, config)
    if known and not candidates[0].has_cdi:
        return result(NODE003, CheckOutcome.FAIL,
                      f"containerd {candidates[0].version} has no CDI support; upgrade it "
                      "(NODE002)", "upgrade containerd to 2.x", subject=subject), None
    if known and candidates[0].version.at_least(2, 3, 0) and config.root_version:
        newer = [f for f in config.files[1:] if f.version > config.root_version]
        if newer:
            return result(NODE003, CheckOutcome.FAIL,
                          f"containerd {candidates[0].version} will not start: {newer[0].path} "
                          f"has config version {newer[0].version}, newer than the main file's "
                          f"{config.root_version}",
                          f"lower `version` in {newer[0].path} or migrate the main file "
                          "(`containerd config migrate`)", subject=subject), None
    judged = [_judge(host, effective_cdi(config, t), config, f"containerd {t.version}")
              for t in candidates]
    verdicts = {(j.outcome, j.settings.enabled, j.covers) for j in judged}
    if len(verdicts) > 1:
        return _ambiguous(judged, config, subject), None
    chosen = judged[-1]  # newest assumed release; all agree
    if not known:
        chosen = _judge(host, chosen.settings, config, "containerd")
    details = list(chosen.details)
    if not known:
        versions = ", ".join(str(j.settings.traits.version) for j in judged)
        details.insert(0, f"containerd version unknown ({identity.source}); judged as "
                          f"containerd {versions} (config version {config.root_version or 1})")
    common = _common_notes([j.settings.notes for j in judged])
    details += [n.text for n in common]
    details += config.notes
    warnings = [n.text for n in common if n.outcome is CheckOutcome.WARN]
    outcome, message, fix = chosen.outcome, chosen.message, chosen.remediation
    if outcome is CheckOutcome.PASS and warnings:
        outcome, message = CheckOutcome.WARN, f"{message}; but {warnings[0]}"
        fix = "move or remove the keys named in the details, then restart containerd"
    settings = chosen.settings
    facts = ConfiguredCdi(CONTAINERD, settings.enabled, settings.enabled_from,
                          settings.spec_dirs)
    return result(NODE003, outcome, message, fix, subject=subject, details=details), facts


@dataclass(frozen=True, slots=True)
class _Judged:
    settings: CdiSettings
    outcome: CheckOutcome
    message: str
    remediation: str | None
    covers: bool
    details: tuple[str, ...]


def _judge(host: Host, settings: CdiSettings, config: ContainerdConfig, label: str) -> _Judged:
    traits = settings.traits
    covers = covers_dra_dir(host, settings.spec_dirs)
    dirs = format_dirs(settings.spec_dirs)
    details = (f"enable_cdi: {settings.enabled} ({settings.enabled_from})",
               f"cdi_spec_dirs: {dirs} ({settings.dirs_from})")
    defaults = "" if config.main_exists else f"no {config.main_path}: built-in defaults; "
    failures = [n for n in settings.notes if n.outcome is CheckOutcome.FAIL]
    if failures:
        return _Judged(settings, CheckOutcome.FAIL, failures[0].text,
                       "fix the value; `containerd config dump` shows what containerd reads",
                       covers, details)
    if not settings.enabled:
        if traits.cdi_on_by_default:
            fix = f"remove `enable_cdi = false` ({settings.enabled_from}) and restart containerd"
        else:
            fix = ('set `enable_cdi = true` under [plugins."io.containerd.grpc.v1.cri"] '
                   "(config version 2) and restart containerd")
        why = f"enable_cdi = false in {settings.enabled_from}" \
            if settings.enable_set_explicitly else f"enable_cdi not set: {settings.enabled_from}"
        return _Judged(settings, CheckOutcome.FAIL, f"{defaults}CDI is off in {label} ({why})", fix,
                       covers, details)
    if not covers:
        message, fix = dra_dir_left_out(settings.spec_dirs, settings.dirs_from, "containerd")
        return _Judged(settings, CheckOutcome.FAIL, message, fix, covers, details)
    source = "on by default" if not settings.enable_set_explicitly else \
        f"enable_cdi = true in {settings.enabled_from}"
    return _Judged(settings, CheckOutcome.PASS,
                   f"{defaults}CDI on in {label} ({source}); spec dirs "
                   f"{dirs}", None, covers, details)


def _ambiguous(judged: Sequence[_Judged], config: ContainerdConfig,
               subject: str | None) -> CheckResult:
    parts = [f"{j.settings.traits.version}: {j.outcome.value}" for j in judged]
    worst = max(judged, key=lambda j: j.outcome.rank)
    details = [j.message for j in judged]
    details += [n.text for n in _common_notes([j.settings.notes for j in judged])]
    details += config.notes
    fix = "learn the version with `containerd --version` (or pass the runtime version)"
    if worst.remediation:
        fix += f"; for containerd {worst.settings.traits.version}: {worst.remediation}"
    return result(
        NODE003, CheckOutcome.WARN,
        f"containerd version unknown and the verdict depends on it ({', '.join(parts)})",
        fix, subject=subject, details=details)


def _common_notes(per_release: Iterable[tuple[Note, ...]]) -> list[Note]:
    """Notes every assumed release agrees on (by key; unkeyed notes of the newest release)."""
    groups = list(per_release)
    if not groups:
        return []
    keyed = [{n.key for n in notes if n.key} for notes in groups]
    shared = set.intersection(*keyed) if keyed else set()
    newest = groups[-1]
    return [n for n in newest if (n.key in shared) or (not n.key and len(groups) == 1)]
