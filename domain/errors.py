"""Errors the rule book raises: each names the field at fault and a stable reason code."""

from __future__ import annotations


class RuleViolation(Exception):
    """A command the rules refuse: ``field`` names the input at fault, ``reason`` a stable code."""

    def __init__(self, field: str, reason: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = reason
        self.message = message


class InvalidArgument(RuleViolation):
    """The input itself is malformed or out of range, whatever the state (INVALID_ARGUMENT)."""


class FailedPrecondition(RuleViolation):
    """The input is well formed but the current state forbids it (FAILED_PRECONDITION)."""


class NotFound(RuleViolation):
    """The input names something that does not exist (NOT_FOUND)."""
