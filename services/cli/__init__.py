"""The ``sabot`` command, grouped by what its user does (README.md, "Commands"):

- over gRPC, a caller of a running server: ``table``, ``shoe``, ``coup`` (croupier), ``stake``
  (player), ``round`` (Treinta y Una), ``match`` (Cuarenta), ``account`` (cashier), ``report``
  (back office), ``regulator``, ``health``, ``demo``;
- on a store URL, offline: ``store init|events|balance-sheet|rerun|replay|checkpoint|export|
  proof|reconcile|report …|projections …``;
- the operator's: ``serve``, ``credentials …``, ``keys regulator|checkpoint|chain``;
- the rule books, no server, no store: ``rules …``, ``odds``.

Each module of ``COMMAND_MODULES`` defines ``register(sub)``: ``sub`` (a ``Commands``) is the
top-level sub-commands, with argparse's ``add_parser`` and ``group(name)``, the sub-commands of
a group (``sub.group("rules")``, ``sub.group("store")``; made on first use, so the order of the
modules does not matter). A game adds its commands with a module ``services/cli/<game>.py``
and one line in ``COMMAND_MODULES``; ``sabot demo --game GAME`` takes a game's demo from
``services.cli.server.DEMOS`` (``add_demo(game, play)``). ``OLD_NAMES`` keeps the names of
the previous release working, hidden from ``--help``, for one release.

Every error is one line on stderr and a non-zero exit, never a traceback; the exit code tells
the cause apart (``services/cli/exits.py``, docs/exit-codes.md): 1 a check found a difference,
2 usage (``Parser``, a setting, a file, a value the command checks before any call), 3 refused
by the rules or the server (what the store or the server says no to), 4 not permitted,
5 unreachable or unavailable (retry), 70 anything unforeseen (``SABOT_DEBUG=1`` shows its
traceback). Output to a reader that has gone (``sabot report events | head``) ends quietly and
successfully, as the Python documentation's note on SIGPIPE does it.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from domain.errors import InvalidArgument, RuleViolation
from services.cli.exits import Exit, of_status
from services.version import version

if TYPE_CHECKING:
    from services.settings import Settings

# Modules that define ``register(sub: Commands) -> None``; each sub-parser sets ``func``.
COMMAND_MODULES = (
    "services.cli.client",  # table, shoe, coup, stake, account, report, regulator, health
    "services.cli.server",  # serve, demo
    "services.cli.credentials",  # credentials issue|revoke|list|hash: named principals
    "services.cli.store",  # store init|events|balance-sheet|rerun
    "services.cli.regulator",  # keys …; store replay|checkpoint|export|proof
    "services.cli.projections",  # store projections …|reconcile|report …
    "services.cli.head_office",  # store report head-office: a group's sites, per site and total
    "services.cli.auditor",  # rules shuffle, rules trente-et-quarante deal
    "services.cli.rules",  # rules GAME …: the rule books answer questions
    "services.cli.odds",  # odds (exact and Monte-Carlo), of every game (--game)
    "services.cli.cuarenta",  # demo --game cuarenta; match …
    "services.cli.treinta_y_una",  # demo --game treinta-y-una; round …
    "services.cli.web",  # web: the web console
)

# The order ``sabot --help`` lists the commands in (a game's own come last).
ORDER = ("table", "shoe", "coup", "stake", "round", "match", "account", "report", "regulator",
         "health", "demo", "serve", "web", "credentials", "keys", "store", "rules", "odds")

# The groups' help.
GROUPS: dict[str, str] = {
    "table": "tables (croupier): open, close, get, list, watch",
    "shoe": "shoes (croupier): open, get, cut, close",
    "coup": "coups (croupier): open, get, list, close-betting, deal, settle",
    "stake": "stakes (player): place, raise, withdraw, insure, choose, move, half-withdraw",
    "account": "accounts (cashier): open, get, deposit, withdraw, statement",
    "report": "the back office's reports from the server's read models: day, statement, "
              "shoes, recall, reconcile, lag, balance-sheet, events",
    "regulator": "the regulator's calls: replays, checkpoints, proofs, export",
    "store": "offline, on a store URL: init, events, balance-sheet, rerun, checkpoint, "
             "export, replay, proof, projections, reconcile, report",
    "credentials": "issue, revoke and list the server's credentials (named principals; tokens "
                   "kept hashed)",
    "keys": "key pairs: the regulator's, the notary's checkpoint key, the evidence chain's",
    "rules": "ask a game's rule book (the shuffle, a deal, hands, captures, points)",
}

# The previous release's names (tests/contracts/frozen.py), kept for one release as hidden
# aliases: old name -> the command it now is (the same parser: same flags, same answers).
OLD_NAMES: dict[str, str] = {
    "shuffle": "rules shuffle",
    "deal": "rules trente-et-quarante deal",
    "regulator-keygen": "keys regulator",
    "checkpoint-keygen": "keys checkpoint",
    "chain-keygen": "keys chain",
    "checkpoint": "store checkpoint",
    "export": "store export",
    "replay": "store replay",
    "proof": "store proof",
    "balance-sheet": "report balance-sheet",
    "watch": "table watch",
    "feed": "report events",
    "reports": "report",
    "projections": "store projections",
    "reconcile": "store reconcile",
    "ledger-schema": "store init",
    "ledger-events": "store events",
    "ledger-balances": "store balance-sheet",
    "ledger-replay": "store rerun",
}
# ``sabot report day|statement|shoes --store URL …`` (the previous release's offline reports,
# now ``sabot store report …``): given ``--store``, ``report X`` is ``store report X``.
OFFLINE_REPORTS = ("day", "statement", "shoes")


class CliError(Exception):
    """An error to print as one line, with its exit code (``services.cli.exits``; default: a
    usage error)."""

    def __init__(self, message: str, code: int = Exit.USAGE) -> None:
        super().__init__(message)
        self.code = int(code)


def rpc_failure(exc: Any, prefix: str = "") -> CliError:
    """A failed gRPC call (a ``grpc.RpcError``) as a CliError: its status and details in one
    line, the exit code of its status (refused, not permitted, unavailable...)."""
    name = exc.code().name
    return CliError(f"{prefix}{name}: {exc.details()}", of_status(name))


def settings_of(args: argparse.Namespace) -> Settings:
    """The settings the command's parser records (``services.settings.add_flags``/``reads``),
    each from its flag, else the environment, else the ``.env`` file, else its default; loaded
    once per command. A setting that cannot be used is a CliError naming the variable and the
    flag, never a secret's value."""
    from services.settings import SettingError, Settings

    found = getattr(args, "settings", None)
    if isinstance(found, Settings):
        return found
    try:
        found = Settings.from_args(args)
    except SettingError as exc:
        raise CliError(str(exc)) from None
    args.settings = found
    return found


class Parser(argparse.ArgumentParser):
    """A usage error as one line on stderr (argparse prints the usage first), exit code 2. Every
    sub-parser is one too (``add_subparsers`` makes them of the parent's class), and their
    sub-commands are ``Commands``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", Commands)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"sabot: error: {self.prog}: {message} (see {self.prog} --help)\n")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if isinstance(action, Commands) and value not in action.choices:
            shown = ", ".join(repr(n) for n in action.visible())
            raise argparse.ArgumentError(action, f"invalid choice: {value!r} (choose from "
                                                 f"{shown})")
        super()._check_value(action, value)


class Commands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """A command's sub-commands: argparse's, plus ``group`` (a group's sub-commands, made on
    first use), ``alias`` (an old name, hidden from --help) and ``when`` (a sub-command that
    is another parser when its arguments say so)."""

    def group(self, name: str, help: str | None = None) -> Commands:
        """The sub-commands of the group ``name``, made if new with ``help`` (default: its
        line in ``GROUPS``)."""
        parser: argparse.ArgumentParser | None = self.choices.get(name)
        if parser is None:
            text = help or GROUPS.get(name) or name
            parser = self.add_parser(name, help=text, description=text)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                return commands(action)
        return commands(parser.add_subparsers(dest=f"{name.replace('-', '_')}_command",
                                              required=True, metavar="COMMAND"))

    def find(self, path: str) -> argparse.ArgumentParser:
        """The parser of ``path`` ("store export"), below this one."""
        first, _, rest = path.partition(" ")
        parser: argparse.ArgumentParser = self.choices[first]
        if not rest:
            return parser
        return _commands_of(parser).find(rest)

    def alias(self, name: str, parser: argparse.ArgumentParser) -> None:
        """``name`` also runs ``parser``, not shown in --help."""
        if name in self.choices:
            raise ValueError(f"sabot {name}: already a command")
        self._name_parser_map[name] = parser

    def when(self, name: str, test: Callable[[Sequence[str]], bool],
             parser: argparse.ArgumentParser) -> None:
        """``name`` runs ``parser`` instead when ``test`` holds for its arguments."""
        self.__dict__.setdefault("_when", {})[name] = (test, parser)

    def visible(self) -> list[str]:
        """The names --help shows (those added with a help text)."""
        return [a.dest for a in self._choices_actions]

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        name, rest = values[0], values[1:]
        test, other = self.__dict__.get("_when", {}).get(name, (None, None))
        if test is None or not test(rest):
            super().__call__(parser, namespace, values, option_string)
            return
        saved = self._name_parser_map[name]
        self._name_parser_map[name] = other
        try:
            super().__call__(parser, namespace, values, option_string)
        finally:
            self._name_parser_map[name] = saved


def commands(sub: Any) -> Commands:
    """``sub`` (the sub-commands a module's ``register`` is given) as ``Commands``: a plain
    argparse one, as a test may make, becomes one."""
    if not isinstance(sub, Commands):
        sub.__class__ = Commands
    return sub  # type: ignore[no-any-return]


def keep_old_names(sub: Any) -> None:
    """The old names (``OLD_NAMES``) of the commands ``sub`` holds, as hidden aliases (each
    module calls it, so a parser of one module's commands knows their old names too)."""
    sub = commands(sub)
    for old, new in OLD_NAMES.items():
        if old in sub.choices:
            continue
        try:
            sub.alias(old, sub.find(new))
        except KeyError:
            continue


def _commands_of(parser: argparse.ArgumentParser) -> Commands:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return commands(action)
    raise KeyError(parser.prog)


def _show_visible(parser: argparse.ArgumentParser, seen: set[int] | None = None) -> None:
    """Every sub-command list's usage names only what --help shows (not the old names)."""
    seen = set() if seen is None else seen
    if id(parser) in seen:
        return
    seen.add(id(parser))
    for action in parser._actions:
        if isinstance(action, Commands):
            action.metavar = "{" + ",".join(action.visible()) + "}"
            for child in action.choices.values():
                _show_visible(child, seen)


def has_store(argv: Sequence[str]) -> bool:
    """Whether a command line gives ``--store`` (or ``--read-store``)."""
    return any(a in ("--store", "--read-store") or a.startswith(("--store=", "--read-store="))
               for a in argv)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="sabot", description="Sabot gaming ledger: the casino's commands, "
                    "grouped by what you do (README.md, Commands). SABOT_* settings: flag, "
                    "else environment, else .env, else default (README.md, Settings).")
    parser.add_argument("--version", action="version", version=f"sabot {version()}")
    sub: Commands = parser.add_subparsers(dest="command", required=True,  # type: ignore[assignment]
                                          metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(name)
        module.register(sub)
    keep_old_names(sub)
    sub._choices_actions.sort(key=lambda a: ORDER.index(a.dest) if a.dest in ORDER
                              else len(ORDER))
    _show_visible(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a usage error, said in one line: its exit code (--help: exit)
        if exc.code in (0, None):
            raise
        return exc.code if isinstance(exc.code, int) else Exit.USAGE
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        _resolve_caller(args)
        code = func(args)
        sys.stdout.flush()  # a broken pipe shows here, while it can still be handled
        return code
    except BrokenPipeError:
        # The reader has gone (e.g. ``| head``): it took what it wanted, so the command ends
        # quietly and successfully. Python would flush stdout again at exit and complain, so
        # stdout goes to /dev/null (the docs' recipe, "Note on SIGPIPE").
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return Exit.OK
    except InvalidArgument as exc:  # a value of the command line, checked before any call
        return _say(f"{exc.field}: {exc.message}", Exit.USAGE)
    except RuleViolation as exc:  # the rules or the store refused (no such coup, a state)
        return _say(f"{exc.field}: {exc.message}", Exit.REFUSED)
    except CliError as exc:
        return _say(str(exc), exc.code)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # one line whatever went wrong, never a traceback
        return _unforeseen(exc)


def _unforeseen(exc: Exception) -> int:
    """An exception no command caught, as one line and the exit code of its cause."""
    code_of = getattr(exc, "code", None)
    if callable(code_of) and callable(getattr(exc, "details", None)):  # a grpc.RpcError
        failure = rpc_failure(exc)
        return _say(str(failure), failure.code)
    if type(exc).__name__ == "SettingError":  # services.settings: a setting not usable
        return _say(str(exc), Exit.USAGE)
    if os.environ.get("SABOT_DEBUG") == "1":
        traceback.print_exc()
    if type(exc).__module__.partition(".")[0] in ("eventsourcing", "psycopg", "sqlite3"):
        # a store that does not answer is unavailable (retry); one that answers wrongly, usage
        down = type(exc).__name__ in ("OperationalError", "ConnectionTimeout", "PoolTimeout")
        return _say(f"--store: cannot use the store: {exc}",
                    Exit.UNAVAILABLE if down else Exit.USAGE)
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return _say(f"{where}{exc.strerror or exc}", Exit.USAGE)
    text = " ".join(str(exc).split())[:300] or "no message"
    return _say(f"{type(exc).__name__}: {text} (SABOT_DEBUG=1 shows where)", Exit.INTERNAL)


def _resolve_caller(args: argparse.Namespace) -> None:
    """A command that reads the caller's settings (``--target``, ``--token``) has them in
    ``args`` resolved (flag, environment, .env, default), for modules that read ``args.target``
    and ``args.token`` themselves."""
    from services.settings import READS

    names = getattr(args, READS, None) or ()
    if "target" in names or "token" in names:
        settings = settings_of(args)
        args.target, args.token = settings.target, settings.token


def _say(message: str, code: int) -> int:
    """``message`` as the command's one line on stderr; ``code`` back."""
    print(f"sabot: error: {' '.join(message.split())}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
