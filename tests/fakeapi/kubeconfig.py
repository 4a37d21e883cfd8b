"""A kubeconfig for the fake server: a token user, plus contexts for failure tests."""

from __future__ import annotations

import base64
import os
import socket
from pathlib import Path

import yaml

_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's, when PyYAML has it
CONTEXT = "fake"  # the current context: the server, the state's token
EXPIRED_CONTEXT = "fake-expired"  # same server, a token it rejects (401)
UNREACHABLE_CONTEXT = "fake-unreachable"  # a local port nothing listens on


def dead_port() -> int:
    """A port that was free a moment ago; nothing listens on it once the socket is closed."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def kubeconfig_document(url: str, token: str, unreachable_url: str, ca_pem: bytes | None = None,
                        namespace: str = "default") -> dict:
    cluster: dict = {"server": url}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()

    def context(name: str, cluster: str, user: str) -> dict:
        return {"name": name, "context": {"cluster": cluster, "user": user,
                                          "namespace": namespace}}

    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": CONTEXT, "cluster": cluster},
                     {"name": UNREACHABLE_CONTEXT,
                      "cluster": {**cluster, "server": unreachable_url}}],
        "users": [{"name": "fake-user", "user": {"token": token}},
                  {"name": "fake-expired-user", "user": {"token": f"expired-{token}"}}],
        "contexts": [context(CONTEXT, CONTEXT, "fake-user"),
                     context(EXPIRED_CONTEXT, CONTEXT, "fake-expired-user"),
                     context(UNREACHABLE_CONTEXT, UNREACHABLE_CONTEXT, "fake-user")],
        "current-context": CONTEXT,
    }


def write_kubeconfig(path: Path, url: str, token: str, ca_pem: bytes | None = None) -> Path:
    scheme = url.partition(":")[0]
    document = kubeconfig_document(url, token, f"{scheme}://127.0.0.1:{dead_port()}", ca_pem)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.dump(document, Dumper=_DUMPER, sort_keys=False))
    os.chmod(path, 0o600)  # it holds a (fake) token
    return path
