"""The exit codes of ``sabot``, one per cause, so a script (or a person) can tell a typo from a
refusal, a bad token from a server that is down (docs/exit-codes.md is the table; ``sabot-verify``
uses the same numbers where it has the cause: ops/sabot_verify/__main__.py).

- 0 success;
- 1 a check found a difference (reconcile, replay, rerun, verification): investigate;
- 2 usage: a flag, argument, value, setting or file of the command line cannot be used (found
  before anything is asked of a server or a store);
- 3 refused by the rules or by the server (a bad value, a state that does not allow it);
- 4 not permitted: no credential, a revoked one, or a role without the call;
- 5 unreachable or unavailable: the server, the store or the network; retry (same request id);
- 70 an internal error (``SABOT_DEBUG=1`` shows where): report it.
"""

from __future__ import annotations

from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    DIFFERS = 1
    USAGE = 2
    REFUSED = 3
    NOT_PERMITTED = 4
    UNAVAILABLE = 5
    INTERNAL = 70


# gRPC status names -> exit codes (every status of grpc.StatusCode but OK).
STATUS: dict[str, Exit] = {
    "INVALID_ARGUMENT": Exit.REFUSED,
    "FAILED_PRECONDITION": Exit.REFUSED,
    "NOT_FOUND": Exit.REFUSED,
    "ALREADY_EXISTS": Exit.REFUSED,
    "OUT_OF_RANGE": Exit.REFUSED,
    "UNIMPLEMENTED": Exit.REFUSED,
    "CANCELLED": Exit.REFUSED,
    "UNAUTHENTICATED": Exit.NOT_PERMITTED,
    "PERMISSION_DENIED": Exit.NOT_PERMITTED,
    "UNAVAILABLE": Exit.UNAVAILABLE,
    "DEADLINE_EXCEEDED": Exit.UNAVAILABLE,
    "RESOURCE_EXHAUSTED": Exit.UNAVAILABLE,
    "ABORTED": Exit.UNAVAILABLE,
    "UNKNOWN": Exit.INTERNAL,
    "INTERNAL": Exit.INTERNAL,
    "DATA_LOSS": Exit.INTERNAL,
}


def of_status(name: str) -> Exit:
    """The exit code of a call that ended with the gRPC status ``name``."""
    return STATUS.get(name, Exit.INTERNAL)
