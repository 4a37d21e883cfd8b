"""/dev/null as a kubeconfig is an empty one, as kubectl reads it: `KUBECONFIG=/dev/null` means
no kubeconfig (in-cluster, or "no cluster to connect to"), `--kubeconfig /dev/null` an empty
file. Every other device and a FIFO stay refused (they would never end, or block the run)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpudra.cluster import ClusterOptions, connect
from gpudra.cluster.errors import KubeconfigError
from gpudra.cluster.kubeconfig import find_kubeconfig

pytestmark = pytest.mark.skipif(not (os.path.exists(os.devnull) and hasattr(os, "mkfifo")
                                     and os.path.exists("/dev/zero")),
                                reason="no /dev/null, /dev/zero or FIFOs here")

CONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://h:6443"}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""

# (case, --kubeconfig, KUBECONFIG; "{config}"/"{fifo}" name files made in tmp_path,
#  the files read (None: no kubeconfig) or the words of the refusal)
CASES = [
    ("KUBECONFIG=/dev/null", None, "/dev/null", None),
    ("KUBECONFIG=/dev/null:config", None, "/dev/null" + os.pathsep + "{config}", ("{config}",)),
    ("--kubeconfig /dev/null", "/dev/null", None, "kubeconfig /dev/null is empty"),
    ("KUBECONFIG=/dev/zero", None, "/dev/zero", "not a regular file"),
    ("--kubeconfig /dev/zero", "/dev/zero", None, "not a regular file"),
    ("KUBECONFIG=fifo", None, "{fifo}", "not a regular file"),
    ("--kubeconfig fifo", "{fifo}", None, "not a regular file"),
]


@pytest.mark.parametrize(("explicit", "variable", "expected"),
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_dev_null_is_an_empty_kubeconfig_and_other_devices_are_refused(
        tmp_path: Path, explicit: str | None, variable: str | None,
        expected: tuple[str, ...] | str | None) -> None:
    names = {"config": str(tmp_path / "config"), "fifo": str(tmp_path / "fifo")}
    (tmp_path / "config").write_text(CONFIG)
    os.mkfifo(tmp_path / "fifo")  # nobody writes: a reader that opened it would hang
    environ = {"KUBECONFIG": variable.format(**names)} if variable else {}
    explicit = explicit.format(**names) if explicit else None
    if isinstance(expected, str):
        with pytest.raises(KubeconfigError, match=expected):
            find_kubeconfig(explicit, environ)
        return
    found = find_kubeconfig(explicit, environ)
    if expected is None:
        assert found is None
    else:
        assert found is not None
        assert [str(f) for f in found.files] == [name.format(**names) for name in expected]


def test_kubeconfig_dev_null_means_no_cluster_to_connect_to() -> None:
    # Outside a pod: the run says there is nothing to connect to, not that /dev/null is bad.
    with pytest.raises(KubeconfigError, match="^no cluster to connect to: none of the files in "
                                              "KUBECONFIG=/dev/null exists or has content"):
        connect(ClusterOptions(), environ={"KUBECONFIG": "/dev/null"})
