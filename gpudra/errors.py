"""The one exception hierarchy. The CLI catches GpudraError once and maps it to an exit code."""

from __future__ import annotations


class GpudraError(Exception):
    """Base of every error gpudra raises on purpose."""


class UsageError(GpudraError):
    """The user asked for something impossible (bad option value, unknown rule id)."""


class ConfigError(UsageError):
    """A .gpudra.yaml file is unreadable or invalid."""


class UnreadableInputError(GpudraError):
    """An input could not be read at all (missing path, permission denied)."""
