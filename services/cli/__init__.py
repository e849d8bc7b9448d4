"""The ``sabot`` command. Each module of this package registers its own subcommands.

Every error is one line on stderr and a non-zero exit, never a traceback: a usage error (exit 2,
``Parser``), an error of the rules or of a command (exit 2), a call the server refused (its
status, exit 1), a file or a store that cannot be used (exit 1), and anything unforeseen (exit 1;
``SABOT_DEBUG=1`` shows its traceback). Output to a reader that has gone (``sabot feed | head``)
ends quietly, as the Python documentation's note on SIGPIPE does it.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import NoReturn

from domain.errors import RuleViolation

# Modules that define ``register(subparsers) -> None``; each sub-parser sets ``func``.
COMMAND_MODULES = (
    "services.cli.auditor",  # shuffle, deal
    "services.cli.odds",  # odds (exact and Monte-Carlo), of every game (--game)
    "services.cli.rules",  # rules GAME …: the rule books of the other games answer questions
    "services.cli.regulator",  # export, replay, checkpoints, proofs, keys
    "services.cli.server",  # serve, demo
    "services.cli.credentials",  # credentials issue|revoke|list|hash: named principals
    "services.cli.client",  # a command for every RPC
    "services.cli.projections",  # projections rebuild|catch-up|run|lag, reconcile, report
    "services.ledger.cli",  # ledger-schema, ledger-events, ledger-balances, ledger-replay
)


class CliError(Exception):
    """A usage error to print as one line."""


class Parser(argparse.ArgumentParser):
    """A usage error as one line on stderr (argparse prints the usage first), exit code 2. Every
    sub-parser is one too (``add_subparsers`` makes them of the parent's class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"sabot: error: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="sabot", description="Sabot gaming ledger")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        module = importlib.import_module(name)
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a usage error, said in one line: its exit code (--help: exit)
        if exc.code in (0, None):
            raise
        return exc.code if isinstance(exc.code, int) else 2
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        code = func(args)
        sys.stdout.flush()  # a broken pipe shows here, while it can still be handled
        return code
    except BrokenPipeError:
        # The reader has gone (e.g. ``| head``): stop quietly. Python would flush stdout again at
        # exit and complain, so stdout goes to /dev/null (the docs' recipe, "Note on SIGPIPE").
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except RuleViolation as exc:
        return _say(f"{exc.field}: {exc.message}", 2)
    except CliError as exc:
        return _say(str(exc), 2)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # one line whatever went wrong, never a traceback
        code_of = getattr(exc, "code", None)
        if callable(code_of) and callable(getattr(exc, "details", None)):  # a grpc.RpcError
            return _say(f"{code_of().name}: {exc.details()}", 1)  # type: ignore[attr-defined]
        if os.environ.get("SABOT_DEBUG") == "1":
            traceback.print_exc()
        if type(exc).__module__.partition(".")[0] in ("eventsourcing", "psycopg", "sqlite3"):
            return _say(f"--store: cannot use the store: {exc}", 1)
        if isinstance(exc, OSError):
            where = f"{exc.filename}: " if exc.filename else ""
            return _say(f"{where}{exc.strerror or exc}", 1)
        text = " ".join(str(exc).split())[:300] or "no message"
        return _say(f"{type(exc).__name__}: {text} (SABOT_DEBUG=1 shows where)", 1)


def _say(message: str, code: int) -> int:
    """``message`` as the command's one line on stderr; ``code`` back."""
    print(f"sabot: error: {' '.join(message.split())}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
