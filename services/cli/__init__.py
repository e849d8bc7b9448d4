"""The ``sabot`` command. Each module of this package registers its own subcommands.

Errors the rules raise are printed as one line on stderr with a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sabot", description="Sabot gaming ledger")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        module = importlib.import_module(name)
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except RuleViolation as exc:
        print(f"sabot: error: {exc.field}: {exc.message}", file=sys.stderr)
        return 2
    except CliError as exc:
        print(f"sabot: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
