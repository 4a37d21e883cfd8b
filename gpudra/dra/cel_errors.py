"""The errors of compiling and evaluating DRA selectors (re-exported by :mod:`gpudra.dra.cel`)."""

from __future__ import annotations

from gpudra.errors import GpudraError, UsageError


class CelError(UsageError):
    """A selector that does not compile. `line` and `column` are 1-based."""

    def __init__(self, message: str, line: int, column: int, detail: str | None = None,
                 hint: str | None = None) -> None:
        super().__init__(f"{line}:{column}: {message}")
        self.message = message
        self.line = line
        self.column = column
        self.detail = detail or message  # every error the engine reported, with carets
        self.hint = hint  # what would make it compile (a release, a feature gate), if known


class CelEvaluationError(GpudraError):
    """A selector that compiled but failed on a device (e.g. ``no such key``): neither true nor
    false. Kubernetes aborts the allocation attempt on such an error."""


class UnsupportedError(GpudraError):
    """Evaluation needs cel-expr-python, which is not installed (no wheel for the platform)."""


class CannotEvaluate(UnsupportedError):
    """A selector Kubernetes accepts that gpudra cannot check or evaluate: it uses a function
    or macro of the release's DRA environment that gpudra's CEL engine does not implement
    (gpudra.dra.cel_env). Neither valid nor invalid as far as gpudra can tell."""
