"""`.gpudra.yaml`: disable rules, change severities, exclude paths, add pod-spec locations,
waive findings, vouch for controllers.

Found by walking up from the first scanned path (or given with --config). Unknown keys are
errors, so a typo never silently changes nothing.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpudra.errors import ConfigError, UnreadableInputError
from gpudra.results.model import Severity
from gpudra.k8s.objects import noun_for
from gpudra.rules.base import RuleSettings
from gpudra.results.vouches import Vouch, VouchSet, parse_vouches
from gpudra.results.waivers import Waiver, WaiverSet, parse_waivers
from gpudra.k8s.workloads import WorkloadKind, compile_path

CONFIG_NAMES = (".gpudra.yaml", ".gpudra.yml")
_TOP_KEYS = {"rules", "exclude", "workloads", "preflight", "waivers", "strict", "vouch"}
_WORKLOAD_KEYS = {"apiVersion", "group", "kind", "podSpecs", "containers"}
# A settings file: a few KiB in practice. 1 MiB holds ~10,000 waivers, which PyYAML (pure
# Python here) reads in ~4 s of CPU: the most a hostile file can cost every command.
MAX_CONFIG_BYTES = 1 << 20


@dataclass(frozen=True)
class Config:
    path: Path | None = None
    settings: RuleSettings = field(default_factory=RuleSettings)
    exclude: tuple[str, ...] = ()
    workloads: tuple[WorkloadKind, ...] = ()
    preflight_skip: tuple[str, ...] = ()  # check ids `gpudra preflight` always skips
    waivers: tuple[Waiver, ...] = ()
    strict: bool = False  # inline gpudra.io/ignore annotations suppress nothing (--strict)
    # kinds whose controllers the user vouches for (gpudra.results.vouches)
    vouches: tuple[Vouch, ...] = ()

    def waiver_set(self, today: datetime.date) -> WaiverSet:
        """The waivers as judged on `today` (the caller's clock: tests fix it)."""
        return WaiverSet(self.waivers, today, self.path.parent if self.path else None,
                         str(self.path) if self.path else None, self.strict)

    def vouch_set(self, today: datetime.date) -> VouchSet:
        """The vouches as judged on `today` (the caller's clock: tests fix it)."""
        return VouchSet(self.vouches, today)


def find_config(start: Path) -> Path | None:
    """The nearest config file in `start` (or its directory) and its parents."""
    try:
        here = start.resolve()
    except (OSError, RuntimeError):  # a symlink loop: the scan reports the path itself
        here = start.absolute()
    if not here.is_dir():
        here = here.parent
    for directory in (here, *here.parents):
        for name in CONFIG_NAMES:
            candidate = directory / name
            if candidate.is_file():
                return candidate
    return None


def config_for(paths: Sequence[str], explicit: Path | None = None) -> Path | None:
    """The config a run uses: `--config`, else the nearest one above the first scanned path
    (the working directory when reading stdin only)."""
    if explicit is not None:
        return explicit
    first = next((p for p in paths if p != "-"), None)
    return find_config(Path(first) if first else Path.cwd())


def load_config(path: Path | None, known_rules: Mapping[str, Any]) -> Config:
    if path is None:
        return Config()
    raw, root = _read(path)
    if raw is None:
        return Config(path)
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    unknown = set(raw) - _TOP_KEYS
    if unknown:
        raise ConfigError(f"{path}: unknown {noun_for(len(unknown), 'key')} "
                          f"{', '.join(sorted(_shown(key) for key in unknown))}; "
                          f"expected {', '.join(sorted(_TOP_KEYS))}")
    return Config(
        path=path,
        settings=_rules(path, raw.get("rules") or {}, known_rules),
        exclude=_strings(path, "exclude", raw.get("exclude") or []),
        workloads=tuple(_workload(path, i, w) for i, w in enumerate(_list(path, "workloads",
                                                                          raw.get("workloads")))),
        preflight_skip=_preflight(path, raw.get("preflight") or {}),
        waivers=parse_waivers(str(path), raw.get("waivers") or [], known_rules,
                              _waiver_lines(root)) if raw.get("waivers") else (),
        strict=_flag(path, "strict", raw.get("strict", False)),
        vouches=parse_vouches(str(path), raw.get("vouch")),
    )


def _read(path: Path) -> tuple[Any, yaml.Node | None]:
    """The file's data and its composed root node (for the lines of its waivers). Whatever the
    bytes, a ConfigError naming the file: not UTF-8, not YAML, nested too deeply, aliases past
    the budget manifests are held to, values YAML cannot build (`2026-13-45`, a 5,000-digit key)."""
    from gpudra.input_files import read_small  # here: most runs have no config file
    from gpudra.sources.documents import check_alias_budget

    try:
        data = read_small(str(path), MAX_CONFIG_BYTES)
    except UnreadableInputError as exc:
        raise ConfigError(str(exc)) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 (byte 0x{data[exc.start]:02x}); save the "
                          "file as UTF-8") from None
    loader = None
    try:
        loader = yaml.SafeLoader(text)  # refuses characters YAML forbids (NUL) at once
        root = loader.get_single_node()
        check_alias_budget(root)
        return (loader.construct_document(root) if root is not None else None), root
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or exc
        raise ConfigError(f"{path}{where}: not valid YAML ({_shown(problem)})") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid YAML (nested too deeply)") from None
    except (ValueError, TypeError, OverflowError) as exc:  # a scalar YAML resolves but cannot build
        raise ConfigError(f"{path}: not valid YAML ({_shown(exc)})") from None
    finally:
        if loader is not None:
            loader.dispose()


def _shown(value: Any) -> str:
    """A value of the file in a one-line message: on one line, and short."""
    text = " ".join(str(value).split())
    return text if len(text) <= 80 else f"{text[:77]}..."


def _list(path: Path, key: str, raw: Any) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ConfigError(f"{path}: '{key}' must be a list")
    return raw


def _flag(path: Path, key: str, raw: Any) -> bool:
    if not isinstance(raw, bool):
        raise ConfigError(f"{path}: '{key}' must be true or false")
    return raw


def _waiver_lines(root: yaml.Node | None) -> list[int | None]:
    """The 1-based line of each `waivers:` entry, for GPU902 to point at."""
    for key, value in root.value if isinstance(root, yaml.MappingNode) else ():
        if key.value == "waivers" and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return []


def _rules(path: Path, raw: Any, known: Mapping[str, Any]) -> RuleSettings:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: 'rules' must map rule ids to settings")
    disabled: set[str] = set()
    severities: dict[str, Severity] = {}
    for rule_id, setting in raw.items():
        key = str(rule_id).upper()
        if key not in known:
            raise ConfigError(f"{path}: unknown rule {_shown(repr(rule_id))} (see `gpudra rules`)")
        if setting in ("disable", "disabled", False, "off"):
            disabled.add(key)
        elif isinstance(setting, str) and setting in {s.value for s in Severity}:
            severities[key] = Severity(setting)
        elif isinstance(setting, Mapping) and set(setting) <= {"severity", "enabled"}:
            if setting.get("enabled") is False:
                disabled.add(key)
            if "severity" in setting:
                try:
                    severities[key] = Severity(setting["severity"])
                except ValueError:
                    raise ConfigError(f"{path}: {key}: severity must be error, warning or info") from None
        else:
            raise ConfigError(f"{path}: {key}: expected 'disable', a severity "
                              "(error|warning|info) or {severity: ..., enabled: ...}")
    return RuleSettings(frozenset(disabled), severities)


def _preflight(path: Path, raw: Any) -> tuple[str, ...]:
    """`preflight: {skip: [NODE005, ...]}`; the ids are checked against the catalogue when
    preflight runs (an unknown one is a usage error there)."""
    if not isinstance(raw, Mapping) or set(raw) - {"skip"}:
        raise ConfigError(f"{path}: 'preflight' must be a mapping with the key 'skip'")
    return _strings(path, "preflight.skip", raw.get("skip") or [])


def _strings(path: Path, key: str, raw: Any) -> tuple[str, ...]:
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise ConfigError(f"{path}: '{key}' must be a list of strings")
    return tuple(raw)


def _workload(path: Path, index: int, raw: Any) -> WorkloadKind:
    where = f"{path}: workloads[{index}]"
    if not isinstance(raw, Mapping) or not isinstance(raw.get("kind"), str):
        raise ConfigError(f"{where}: needs at least 'kind' and 'podSpecs'")
    unknown = set(raw) - _WORKLOAD_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown {noun_for(len(unknown), 'key')} "
                          f"{', '.join(sorted(map(str, unknown)))}")
    group = raw.get("group")
    if group is None and isinstance(raw.get("apiVersion"), str):
        group = raw["apiVersion"].rpartition("/")[0]
    pod_specs = _strings(path, f"workloads[{index}].podSpecs", raw.get("podSpecs") or [])
    containers = _strings(path, f"workloads[{index}].containers", raw.get("containers") or [])
    if not pod_specs:
        raise ConfigError(f"{where}: 'podSpecs' must list at least one JSONPath")
    for text in (*pod_specs,):
        try:
            compile_path(text)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return WorkloadKind(group if isinstance(group, str) else "*", raw["kind"], pod_specs, containers)
