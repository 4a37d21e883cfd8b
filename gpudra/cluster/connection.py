"""From options to a Transport: kubeconfig or in-cluster, credentials, the connection pool.

The only module that imports the official `kubernetes` client, and only when called: `gpudra
--version` and file audits never pay for it (0.4-0.8 s, ~35 MB). Its loaders do the
credential work (token, tokenFile, client certificates, auth-provider oidc/gcp, exec plugins,
the pod's service account with token re-reads); gpudra only chooses what they load
(kubeconfig.py) and never lets them write to a kubeconfig (persist_config=False).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpudra import __version__
from gpudra.cluster.errors import ContextNotFoundError, ExecPluginError, KubeconfigError
from gpudra.cluster.kubeconfig import (
    SERVICE_ACCOUNT_DIR,
    ContextChoice,
    choose_context,
    find_kubeconfig,
    in_cluster_namespace,
    in_cluster_possible,
)
from gpudra.cluster.options import (
    DEFAULT_ANSWER_TIMEOUT,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_READ_TIMEOUT,
    ClusterOptions,
)
from gpudra.cluster.records import ClusterTarget

if TYPE_CHECKING:  # urllib3 loads with the transport, when a connection opens
    from gpudra.cluster.transport import Transport


@dataclass(frozen=True)
class Connection:
    target: ClusterTarget
    transport: Transport
    close: Callable[[], None]


def open_connection(options: ClusterOptions, *, environ: Mapping[str, str] | None = None,
                    service_account_dir: Path = SERVICE_ACCOUNT_DIR,
                    sleep: Callable[[float], None] = time.sleep) -> Connection:
    from kubernetes import __version__ as client_version
    from kubernetes import client

    from gpudra.cluster.transport import Transport

    environ = os.environ if environ is None else environ
    files = find_kubeconfig(options.kubeconfig, environ)
    configuration = client.Configuration()
    if files is None:
        if not in_cluster_possible(environ):
            raise KubeconfigError(_nothing_found(environ))
        if options.context:
            raise ContextNotFoundError(f'context "{options.context}" not found: there is no '
                                       f"kubeconfig (only the in-cluster service account)")
        _load_in_cluster(configuration, environ, service_account_dir)
        target = ClusterTarget(
            server=configuration.host.rstrip("/"), context=None,
            namespace=options.namespace or in_cluster_namespace(service_account_dir)
            or "default", all_namespaces=options.all_namespaces)
        exec_command = None
    else:
        choice = choose_context(files, options.context)
        _load_kubeconfig(configuration, choice)
        target = ClusterTarget(
            server=choice.server, context=choice.context,
            namespace=options.namespace or choice.namespace or "default",
            all_namespaces=options.all_namespaces,
            kubeconfig=tuple(str(path) for path in choice.files))
        exec_command = choice.exec_command
    api_client = client.ApiClient(configuration)
    limit = options.request_timeout
    transport = Transport(
        api_client.rest_client.pool_manager, target,
        _auth_headers(configuration, target, exec_command),
        connect_timeout=min(limit, DEFAULT_CONNECT_TIMEOUT) if limit else DEFAULT_CONNECT_TIMEOUT,
        read_timeout=limit or DEFAULT_READ_TIMEOUT, policy=options.retry,
        answer_timeout=limit or DEFAULT_ANSWER_TIMEOUT,
        verify_tls=bool(configuration.verify_ssl),
        user_agent=f"gpudra/{__version__} (read-only; kubernetes-client/python {client_version})",
        sleep=sleep)
    return Connection(target, transport, api_client.close)


def _load_kubeconfig(configuration: Any, choice: ContextChoice) -> None:
    from kubernetes import config

    # The client's merger splits on os.pathsep and resolves relative certificate paths
    # against the file that defines them; the context is already kubectl's choice.
    with _client_errors() as logged:
        try:
            config.load_kube_config(config_file=os.pathsep.join(map(str, choice.files)),
                                    context=choice.context, client_configuration=configuration,
                                    persist_config=False)
        except Exception as error:  # noqa: BLE001 - ConfigException, bad base64, IO, ...
            if choice.exec_command and logged:
                raise _exec_failed(choice, logged) from None
            raise KubeconfigError(f'cannot load context "{choice.context}" from '
                                  f"{_files(choice)}: {_one_line(error)}") from None
    if choice.exec_command and (logged or not _has_credentials(configuration)):
        raise _exec_failed(choice, logged)


def _load_in_cluster(configuration: Any, environ: Mapping[str, str],
                     service_account_dir: Path) -> None:
    from kubernetes.config.incluster_config import InClusterConfigLoader

    loader = InClusterConfigLoader(token_filename=str(service_account_dir / "token"),
                                   cert_filename=str(service_account_dir / "ca.crt"),
                                   environ=environ)
    try:
        loader.load_and_set(configuration)
    except Exception as error:  # noqa: BLE001 - ConfigException: no token or CA file
        raise KubeconfigError(f"cannot use the in-cluster service account "
                              f"({service_account_dir}): {_one_line(error)}") from None


def _auth_headers(configuration: Any, target: ClusterTarget,
                  exec_command: str | None) -> Callable[[], dict[str, str]]:
    """Per request: the client's auth settings, whose refresh hook re-runs an exec plugin or
    re-reads the pod's token when it expires."""

    def headers() -> dict[str, str]:
        if configuration.refresh_api_key_hook is None:
            settings = configuration.auth_settings()
        else:
            with _client_errors() as logged:
                settings = configuration.auth_settings()
            if logged and exec_command:
                raise ExecPluginError(f'the credential plugin "{exec_command}" of context '
                                      f'"{target.context}" failed to renew the token: '
                                      f"{_exec_text(logged)}")
        return {str(entry["key"]): _header_value(str(entry["value"]), target)
                for entry in settings.values()
                if entry.get("in") == "header" and entry.get("value")}

    return headers


def _header_value(value: str, target: ClusterTarget) -> str:
    """A credential as a header value: without the blanks around it (client-go trims a
    tokenFile's content, and an editor ends a file with a newline), and refused, without
    showing it, when a control character is left inside it (HTTP cannot carry one)."""
    scheme, blank, credential = value.strip().partition(" ")
    value = f"{scheme} {credential.strip()}" if blank else scheme
    if any(char < " " or char == "\x7f" for char in value):
        where = "the in-cluster service account" if target.in_cluster else \
            f'context "{target.context}"'
        raise KubeconfigError(f"the credentials of {where} hold a control character (a line "
                              "break inside a token or tokenFile?); not sent")
    return value


def _has_credentials(configuration: Any) -> bool:
    return bool(configuration.cert_file or any(
        entry.get("value") for entry in configuration.auth_settings().values()))


@contextmanager
def _client_errors() -> Iterator[list[str]]:
    """Collect what the client's kubeconfig loader logs instead of raising (an exec plugin's
    failure is only `logging.error`-ed, kubernetes/config/kube_config.py
    _load_from_exec_plugin). A handler on the root logger also keeps `logging.error` from
    installing a default stderr handler (logging.basicConfig) as a side effect.

    The root logger is the process's: with `audit --all-contexts` other threads load other
    contexts meanwhile, so only what this thread logs (the client runs the plugin in the
    thread that loads it) is this context's."""
    messages: list[str] = []
    thread = threading.get_ident()

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.ERROR and record.thread == thread:
                messages.append(record.getMessage())

    handler = Collect()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield messages
    finally:
        root.removeHandler(handler)


def _exec_failed(choice: ContextChoice, logged: list[str]) -> ExecPluginError:
    detail = _exec_text(logged) if logged else "it gave no token and no client certificate"
    return ExecPluginError(f'the credential plugin "{choice.exec_command}" of context '
                           f'"{choice.context}" failed: {detail}')


def _exec_text(logged: list[str]) -> str:
    text = _one_line(logged[-1])
    return text.removeprefix("exec: ")


def _one_line(error: object) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def _files(choice: ContextChoice) -> str:
    return os.pathsep.join(map(str, choice.files))


def _nothing_found(environ: Mapping[str, str]) -> str:
    if environ.get("KUBECONFIG"):
        where = f"none of the files in KUBECONFIG={environ['KUBECONFIG']} exists or has content"
    else:
        home = environ.get("HOME") or str(Path.home())
        where = f"KUBECONFIG is not set and {Path(home) / '.kube' / 'config'} does not exist"
    return (f"no cluster to connect to: {where}, and gpudra is not running in a pod "
            f"(pass --kubeconfig, or set KUBECONFIG)")
