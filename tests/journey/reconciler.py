"""A stand-in controller's loop: `sync()` every `period` seconds on a thread of its own until
stop(), a failed pass kept in `errors` and tried again on the next (as a controller requeues)."""

from __future__ import annotations

import threading

from tests.controlplane.cluster import APIError


class Reconciler:
    def __init__(self, name: str, period: float) -> None:
        self._name = name
        self._period = period
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors: list[str] = []

    def sync(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.wait(self._period):
            try:
                self.sync()
            except (OSError, APIError) as error:  # the next pass tries again
                self.errors.append(str(error))
