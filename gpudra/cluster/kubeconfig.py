"""Which kubeconfig files, which context, or the in-cluster service account: kubectl's rules.

Pure Python (no kubernetes import). The official client's own loader is used afterwards for
credentials (connection.py), but two of its choices differ from kubectl's and are made here:

* `KUBECONFIG=a:b`: the client's merger lets the *last* file's current-context win, kubectl the
  *first* (client-go tools/clientcmd loader_test.go TestConflictingCurrentContext @ 19f5fba);
  so the context is chosen here and passed to the client by name. Missing files in KUBECONFIG
  are skipped (TestToleratingMissingFiles), and empty ones too (the client would raise on them).
* `kubernetes.config.load_config()` checks `os.path.exists(KUBECONFIG)`, which is false for a
  list of paths, and then silently goes in-cluster. gpudra never calls it: in-cluster is only
  chosen when no kubeconfig file is found at all and KUBERNETES_SERVICE_HOST/PORT are set,
  as client-go's deferred loader does.

Clusters, contexts and users merge by name, the first file to define a name winning
(kubectl config view docs; the client's merger does the same).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from gpudra.cluster.errors import ContextNotFoundError, KubeconfigError
from gpudra.cluster.records import redacted
from gpudra.regular_file import NotRegularFileError, open_regular, read_bounded

try:  # the C loader: kubeconfigs of cloud CLIs run to hundreds of KB
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - depends on the PyYAML build
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
_SECTIONS = ("clusters", "contexts", "users")


@dataclass(frozen=True)
class KubeconfigFiles:
    """The kubeconfig files kubectl would read, in merge order (existing, non-empty ones)."""

    files: tuple[Path, ...]
    origin: str  # for messages: "--kubeconfig /x", "KUBECONFIG=/a:/b", "/home/u/.kube/config"
    merged: Mapping[str, Any]  # clusters/contexts/users by name, and current-context


@dataclass(frozen=True)
class ContextChoice:
    """The context to use and what it points at."""

    files: tuple[Path, ...]
    context: str
    cluster: str
    server: str
    user: str | None
    namespace: str | None
    exec_command: str | None  # set when the user authenticates through an exec plugin


def find_kubeconfig(explicit: str | None, environ: Mapping[str, str]) -> KubeconfigFiles | None:
    """kubectl's precedence: --kubeconfig (must exist), else every file of KUBECONFIG, else
    ~/.kube/config. None when no file holds anything."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.exists() or path.is_dir():  # a FIFO or other device: _read refuses it
            problem = "is a directory" if path.is_dir() else "no such file"
            raise KubeconfigError(f"cannot read kubeconfig {path}: {problem}")
        origin = f"--kubeconfig {path}"
        candidates = [path]
    elif environ.get("KUBECONFIG"):
        origin = f"KUBECONFIG={environ['KUBECONFIG']}"
        candidates = [Path(p).expanduser() for p in environ["KUBECONFIG"].split(os.pathsep) if p]
    else:
        home = environ.get("HOME")
        path = (Path(home) if home else Path.home()) / ".kube" / "config"
        origin = str(path)
        candidates = [path]
    files: list[Path] = []
    documents: list[Mapping[str, Any]] = []
    for path in dict.fromkeys(candidates):  # a file listed twice is read once, like kubectl
        if not path.exists() or path.is_dir():
            continue  # KUBECONFIG may name files that do not exist (yet); a FIFO is refused
        # /dev/null reads as an empty kubeconfig, as kubectl reads it (KUBECONFIG=/dev/null is
        # the usual "no kubeconfig"); every other device is refused by _read.
        document = None if _is_null_device(path) else _read(path)
        if document:
            files.append(path)
            documents.append(document)
    if not files:
        if explicit:
            raise KubeconfigError(f"kubeconfig {origin.split(' ', 1)[1]} is empty")
        return None
    return KubeconfigFiles(tuple(files), origin, _merge(documents))


def context_names(explicit: str | None, environ: Mapping[str, str]) -> tuple[str, ...]:
    """Every context of the kubeconfig kubectl would read, in its order (the first file's
    first): `kubectl config get-contexts -o name`, for `audit --all-contexts`."""
    config = find_kubeconfig(explicit, environ)
    if config is None:
        raise KubeconfigError("no contexts to audit: no kubeconfig was found (pass "
                              "--kubeconfig, or set KUBECONFIG)")
    if not config.merged["contexts"]:
        raise KubeconfigError(f"no contexts to audit: {config.origin} defines none")
    return tuple(config.merged["contexts"])


def in_cluster_possible(environ: Mapping[str, str]) -> bool:
    """Running in a pod: the kubelet sets these for every container."""
    return bool(environ.get("KUBERNETES_SERVICE_HOST") and environ.get("KUBERNETES_SERVICE_PORT"))


def choose_context(config: KubeconfigFiles, context: str | None) -> ContextChoice:
    merged = config.merged
    contexts: dict[str, Any] = merged["contexts"]
    name = context or merged.get("current-context")
    known = ", ".join(sorted(contexts)) or "none"
    if not name:
        raise KubeconfigError(f"no context selected: {config.origin} has no current-context; "
                              f"pass --context (contexts: {known})")
    if name not in contexts:
        raise ContextNotFoundError(f'context "{name}" not found in {config.origin} '
                                   f"(contexts: {known})")
    entry = _mapping(contexts[name], f'context "{name}"', config)
    cluster_name = str(entry.get("cluster") or "")
    cluster = merged["clusters"].get(cluster_name)
    if cluster is None:
        raise KubeconfigError(f'context "{name}" names cluster "{cluster_name}", which is not '
                              f"in {config.origin}")
    cluster = _mapping(cluster, f'cluster "{cluster_name}"', config)
    server = str(cluster.get("server") or "")
    parts = urlsplit(server)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        problem = "has no server" if not server else \
            f"has an invalid server URL {redacted(server)!r}"
        raise KubeconfigError(f'cluster "{cluster_name}" of context "{name}" {problem} '
                              f"(in {config.origin})")
    user_name = entry.get("user")
    user = merged["users"].get(user_name) if user_name else None
    user = _mapping(user, f'user "{user_name}"', config) if user is not None else {}
    return ContextChoice(files=config.files, context=name, cluster=cluster_name,
                         server=server.rstrip("/"), user=str(user_name) if user_name else None,
                         namespace=str(entry.get("namespace") or "") or None,
                         exec_command=_exec_command(user))


# A namespace name is at most 63 characters: the service account's file holds nothing longer.
_MAX_NAMESPACE_FILE = 4096


def in_cluster_namespace(service_account_dir: Path) -> str | None:
    """The pod's namespace from its service account, None when that is unreadable: not there,
    not a regular file, past any namespace's length, or not UTF-8."""
    try:
        fd, _ = open_regular(service_account_dir / "namespace")
        try:
            data = read_bounded(fd, _MAX_NAMESPACE_FILE)
        finally:
            os.close(fd)
        if len(data) > _MAX_NAMESPACE_FILE:
            return None
        return data.decode("utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _exec_command(user: Mapping[str, Any]) -> str | None:
    """The exec plugin's command, when the client will use it: it tries an auth-provider,
    then a token or tokenFile, then exec (kubernetes/config/kube_config.py
    _load_authentication)."""
    if any(key in user for key in ("auth-provider", "token", "tokenFile")):
        return None
    plugin = user.get("exec")
    if not isinstance(plugin, Mapping):
        return None
    return str(plugin.get("command") or "") or "(no command)"


# A kubeconfig with embedded certificates for a thousand clusters is a few MiB; past this cap
# the YAML parse alone would take minutes.
MAX_KUBECONFIG_BYTES = 16 << 20


def _is_null_device(path: Path) -> bool:
    try:
        return os.path.samestat(os.stat(path), os.stat(os.devnull))
    except OSError:
        return False


def _read(path: Path) -> Mapping[str, Any] | None:
    try:
        # A regular file only (a FIFO would block the run, a device never end), up to the cap.
        fd, _ = open_regular(path)
        try:
            data = read_bounded(fd, MAX_KUBECONFIG_BYTES)
        finally:
            os.close(fd)
        if len(data) > MAX_KUBECONFIG_BYTES:
            raise KubeconfigError(f"cannot read kubeconfig {path}: larger than "
                                  f"{MAX_KUBECONFIG_BYTES >> 20} MiB")
        text = data.decode("utf-8")
    except NotRegularFileError as error:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {error}") from None
    except OSError as error:
        raise KubeconfigError(f"cannot read kubeconfig {path}: "
                              f"{(error.strerror or str(error)).lower()}") from None
    except UnicodeDecodeError:
        raise KubeconfigError(f"cannot read kubeconfig {path}: not UTF-8 text") from None
    try:
        document = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise KubeconfigError(f"kubeconfig {path} is not valid YAML{where}") from None
    if document is None:
        return None
    if not isinstance(document, Mapping):
        raise KubeconfigError(f"kubeconfig {path}: expected a mapping at the top level")
    for section in _SECTIONS:
        entries = document.get(section) or []
        if not isinstance(entries, list) or not all(
                isinstance(entry, Mapping) and entry.get("name") for entry in entries):
            raise KubeconfigError(f"kubeconfig {path}: {section} must be a list of entries "
                                  f"with a name")
    return document


def _merge(documents: list[Mapping[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {section: {} for section in _SECTIONS}
    for document in documents:
        for section in _SECTIONS:
            for entry in document.get(section) or []:
                merged[section].setdefault(str(entry["name"]), entry.get(section[:-1]) or {})
        if document.get("current-context") and not merged.get("current-context"):
            merged["current-context"] = str(document["current-context"])
    return merged


def _mapping(value: Any, what: str, config: KubeconfigFiles) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise KubeconfigError(f"{what} in {config.origin} is not a mapping")
    return value
