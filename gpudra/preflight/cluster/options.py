"""Options of the cluster tier, and the release the version-dependent checks judge against."""

from __future__ import annotations

from dataclasses import dataclass

from gpudra.dra.versions import MAX_MINOR, MIN_MINOR, TargetVersion
from gpudra.preflight.cluster.snapshot import ClusterSnapshot


@dataclass(frozen=True, slots=True)
class ClusterOptions:
    """`target_version` (`--target-version`) plans an upgrade: the checks that depend on the
    Kubernetes release (CLUSTER001, CLUSTER002, CLUSTER009, CLUSTER010, CLUSTER011, CLUSTER012)
    judge the cluster as it would be with its control plane at that release."""

    target_version: TargetVersion | None = None


@dataclass(frozen=True, slots=True)
class JudgedRelease:
    """The minor release a check judges, and how to name it in messages."""

    minor: int
    planned: bool  # True when it is --target-version, not the running server

    @property
    def name(self) -> str:
        return f"target 1.{self.minor}" if self.planned else f"Kubernetes 1.{self.minor}"

    @property
    def features(self) -> TargetVersion | None:
        """A TargetVersion to ask about feature gates: releases newer than the newest checked
        one are judged as that one (features only get more stable); None before 1.32."""
        if self.minor < MIN_MINOR:
            return None
        return TargetVersion(min(self.minor, MAX_MINOR))


def judged_release(snapshot: ClusterSnapshot, options: ClusterOptions) -> JudgedRelease | None:
    """The target when one is given, else the server's minor; None when neither is known."""
    if options.target_version is not None:
        return JudgedRelease(options.target_version.minor, True)
    version = snapshot.version
    if version is None or version.major != 1:
        return None
    return JudgedRelease(version.minor, False)


NO_OPTIONS = ClusterOptions()
"""The defaults: judge the running release."""
