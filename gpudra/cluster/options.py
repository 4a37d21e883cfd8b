"""How to reach the cluster (kubectl's flags) and how hard to try (timeouts, retries)."""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from gpudra.errors import UsageError

# Without --request-timeout a request still never waits forever: these bound the TCP/TLS
# connect and each wait for bytes from the server (not the whole answer).
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_READ_TIMEOUT = 60.0
# ...and the whole of one answer, however its bytes trickle in (--request-timeout sets both).
# A healthy server sends a 500-object page in well under a second; 300 s still lets the
# largest answer read (MAX_ANSWER_BYTES, 256 MiB) arrive over a ~1 MB/s link.
DEFAULT_ANSWER_TIMEOUT = 300.0
PAGE_SIZE = 500  # kubectl's --chunk-size default; bounds memory to one page of objects


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries of one GET, and restarts of one list.

    gpudra turns urllib3's own retries off for every request, so `attempts` is the exact
    number of tries (urllib3 would otherwise add up to 3 tries of its own per try on 429/503
    with Retry-After and on connection errors).
    """

    attempts: int = 5  # tries per request, the first included
    backoff: float = 0.5  # first wait when the server gives no Retry-After; doubles
    max_backoff: float = 8.0
    max_retry_after: float = 30.0  # a longer Retry-After is cut to this
    list_restarts: int = 3  # restarts of a list whose continue token expired (410)
    statuses: frozenset[int] = frozenset({429, 500, 502, 503, 504})

    def delay(self, retry: int, retry_after: float | None, jitter: float) -> float:
        """Seconds to wait before retry number `retry` (1-based). Retry-After wins when the
        server sends it; otherwise exponential backoff scaled by `jitter` in [0.5, 1]."""
        if retry_after is not None:
            return max(0.0, min(retry_after, self.max_retry_after))
        return min(self.max_backoff, self.backoff * 2.0 ** (retry - 1)) * jitter


@dataclass(frozen=True)
class ClusterOptions:
    """kubectl's connection flags. Namespace scope: `all_namespaces` (-A), else `namespace`
    (-n), else the context's namespace, else the pod's (in-cluster), else "default"."""

    kubeconfig: str | None = None  # --kubeconfig: this one file, no merging
    context: str | None = None  # --context
    namespace: str | None = None  # -n/--namespace
    all_namespaces: bool = False  # -A/--all-namespaces
    request_timeout: float | None = None  # --request-timeout in seconds; None/0: the defaults
    page_size: int = PAGE_SIZE
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    def __post_init__(self) -> None:
        if self.page_size < 1:
            raise UsageError(f"page size must be at least 1, got {self.page_size}")
        if self.request_timeout is not None and self.request_timeout < 0:
            raise UsageError(f"request timeout must not be negative, got {self.request_timeout}")


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
                 "h": 3600.0}


def parse_duration(text: str) -> float:
    """kubectl's --request-timeout syntax: an integer is seconds ("30"); otherwise a Go
    duration ("30s", "1m30s", "500ms"). "0" means the defaults (gpudra never waits forever)."""
    value = text.strip()
    if value.isdigit():
        return float(value)
    parts = _DURATION_PART.findall(value)
    if not parts or "".join(number + unit for number, unit in parts) != value:
        raise UsageError(f"invalid duration {text!r}: use an integer number of seconds or a "
                         f"value with units such as 30s, 2m or 1m30s")
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The Retry-After header in seconds (delta-seconds or an HTTP date); None if absent or
    unreadable."""
    value = headers.get("Retry-After") or headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
