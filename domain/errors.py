"""Errors the rule book raises: each names the field at fault and a stable reason code."""

from __future__ import annotations


class RuleViolation(Exception):
    """A command the rules refuse: ``field`` names the input at fault, ``reason`` a stable code."""

    def __init__(self, field: str, reason: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = reason
        self.message = message

    def __reduce__(self) -> tuple[object, tuple[type[RuleViolation], str, str, str]]:
        """Pickled as its class and three fields (subclasses differ in their constructors)."""
        return (_restore, (type(self), self.field, self.reason, self.message))


def _restore(cls: type[RuleViolation], field: str, reason: str, message: str) -> RuleViolation:
    error = cls.__new__(cls)
    RuleViolation.__init__(error, field, reason, message)
    return error


class InvalidArgument(RuleViolation):
    """The input itself is malformed or out of range, whatever the state (INVALID_ARGUMENT)."""


class FailedPrecondition(RuleViolation):
    """The input is well formed but the current state forbids it (FAILED_PRECONDITION)."""


class NotFound(RuleViolation):
    """The input names something that does not exist (NOT_FOUND)."""
