"""A throw-away CA and serving certificate for 127.0.0.1, made with the openssl CLI.

TLS is not decoration here: kubectl (client-go clientcmd) sends a kubeconfig user's token only
over TLS, so over plain http every kubectl request is anonymous and token tests are impossible.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path

_CONFIG = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = fakeapi
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[leaf]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""
_EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


@dataclass(frozen=True)
class Certificates:
    ca: Path  # PEM of the CA that signed `cert`; goes into the kubeconfig
    cert: Path
    key: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, self.key)
        return context


def tls_available() -> bool:
    return shutil.which("openssl") is not None


def make_certificates(directory: Path) -> Certificates:
    """A CA and a leaf for IP 127.0.0.1 / localhost, valid for 30 days, in `directory`."""
    config = directory / "openssl.cnf"
    config.write_text(_CONFIG)
    ca, ca_key = directory / "ca.crt", directory / "ca.key"
    cert, key, csr = directory / "tls.crt", directory / "tls.key", directory / "tls.csr"
    _openssl("req", "-x509", "-config", config, "-extensions", "ca", *_EC_KEY, "-keyout", ca_key,
             "-out", ca, "-days", "30", "-subj", "/CN=fakeapi-ca")
    _openssl("req", "-new", "-config", config, *_EC_KEY, "-keyout", key, "-out", csr,
             "-subj", "/CN=127.0.0.1")
    _openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-set_serial", "2",
             "-days", "30", "-extfile", config, "-extensions", "leaf", "-out", cert)
    return Certificates(ca, cert, key)


def _openssl(*args: str | Path) -> None:
    result = subprocess.run(["openssl", *map(str, args)], capture_output=True, text=True,
                            check=False)
    if result.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {result.stderr.strip()}")
