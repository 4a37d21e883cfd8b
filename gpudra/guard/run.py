"""`gpudra guard`'s use case: the request (strategy, action) in, the two objects out. Nothing
here prints or writes: the CLI renders them (YAML or JSON) to stdout or --output-dir."""

from __future__ import annotations

from dataclasses import dataclass

from gpudra.results.json_value import JsonObject
from gpudra.guard.policy import GuardRequest, guard_objects
from gpudra.results.model import ExitCode

__all__ = ["GuardRequest", "GuardResult", "run_guard"]


@dataclass(frozen=True)
class GuardResult:
    policy: JsonObject    # the ValidatingAdmissionPolicy
    binding: JsonObject   # its binding, warn or deny

    @property
    def objects(self) -> tuple[JsonObject, JsonObject]:
        """Both, in the order they are applied: the policy before the binding naming it."""
        return self.policy, self.binding

    def exit_code(self) -> ExitCode:
        return ExitCode.OK  # it reads nothing, so nothing can fail or be found


def run_guard(request: GuardRequest) -> GuardResult:
    policy, binding = guard_objects(request)
    return GuardResult(policy, binding)
