"""``sabot serve`` (the gRPC server) and ``sabot demo`` (the demo played against a server)."""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from services.api import config as api_config
from services.api import demo, logs
from services.api.roles import Principal, Role
from services.cli import CliError, rpc_failure, settings_of
from services.ledger.table import UNRECORDED_GAME
from services.settings import SettingError, Settings, add_flags
from services.trente_et_quarante import demo as tq_demo

if TYPE_CHECKING:
    from services.api.server import Running, Signals

DEV_KEY_FILE = Path("var/dev-seal.key")
DEV_CHECKPOINT_KEY_FILE = Path("var/dev-checkpoint.key")
DEV_CHAIN_KEY_FILE = Path("var/dev-chain.key")


# What ``sabot serve`` reads (services/settings.py: the flag, else the environment, else the
# .env file, else the default).
SERVE_SETTINGS = (
    "store", "read_store", "listen", "site", "credentials", "tokens", "seal_key", "chain_key",
    "chain_head",
    "checkpoint_key", "regulator_public_key", "tls_cert", "tls_key", "tls_client_ca", "insecure",
    "workers", "projections", "ledger_process", "gaming_day", "shifts", "streams_per_principal",
    "metrics_listen", "store_timeout", "otlp_endpoint", "turn_clock", "pg_pool_size",
    "pg_max_overflow",
)


def register(sub: Any) -> None:
    p = sub.add_parser("serve", help="run the gRPC server (its settings: README.md, Settings; "
                                     "SABOT_* variables or a .env file)")
    add_flags(p, *SERVE_SETTINGS)
    p.add_argument("--dev", action="store_true",
                   help="development: generate and print tokens, keep a seal key, a chain key "
                        "and a checkpoint key in var/")
    p.add_argument("--demo", action="store_true",
                   help="play the demo through the API once started, then keep serving")
    p.add_argument("--preset", default="francaise", help="the demo table's preset")
    p.add_argument("--web", default=None, metavar="HOST:PORT",
                   help="also serve the web console at this address, a client of this server "
                        "(sabot web; make run: 127.0.0.1:8080)")
    p.set_defaults(func=cmd_serve)

    d = sub.add_parser("demo", help="play the demo against a running server (an admin --token "
                                    "plays every part; else SABOT_TOKENS's croupier, cashier "
                                    "and players)")
    from services.cli.client import CALLER_SETTINGS

    add_flags(d, *CALLER_SETTINGS, "tokens")
    d.add_argument("--game", default=None,
                   help=f"the game to play (default {DEFAULT_DEMO}; a game's module adds its "
                        "own: services.cli.server.add_demo)")
    d.add_argument("--preset", default="francaise", help="the demo table's preset")
    d.set_defaults(func=cmd_demo)


def _dev_seal_key(path: Path = DEV_KEY_FILE) -> bytes:
    if path.exists():
        return bytes.fromhex(path.read_text().strip())
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    path.write_text(key.hex() + "\n")
    path.chmod(0o600)
    return key


def _dev_chain_head(store: str) -> str:
    """--dev: the writer's head file beside a SQLite store (so a new store starts afresh), or
    in var/ named after a PostgreSQL store."""
    if store.startswith("sqlite:///"):
        return store.removeprefix("sqlite:///") + ".chain-head"
    import hashlib

    Path("var").mkdir(exist_ok=True)
    return f"var/dev-chain-head-{hashlib.sha256(store.encode()).hexdigest()[:12]}.json"


def cmd_serve(args: argparse.Namespace) -> int:
    from services import bootstrap
    from services.api import server
    from services.ledger.evidence import ChainBroken
    from services.ledger.remote import AnyLedger, LedgerProcess

    settings = settings_of(args)
    _check_listen(settings.listen)  # before the ledger process starts: nothing to undo
    metrics_listen, store_timeout = _metrics_listen(args)
    if metrics_listen is not None:
        _check_listen(metrics_listen, "--metrics-listen")
    settings, cfg = _serve_config(args, settings, store_timeout)
    tokens, chain_head = dict(cfg.tokens), cfg.chain_head

    logs.configure(level=logging.INFO)
    _check_read_store(args)  # before the ledger starts: nothing to undo
    otlp_endpoint = settings.otlp_endpoint
    if otlp_endpoint is not None:  # traces: off unless a collector is named
        from services import traces

        traces.configure(otlp_endpoint)
    pool_size = settings.pg_pool_size or min(cfg.workers, 20)
    writer_name = _writer_name(cfg.listen)  # named to the other servers on the store
    ledger: AnyLedger
    ledger_process: LedgerProcess | None = None
    # the read models in a process of their own too, a child of the ledger process (with
    # --single-process, or SABOT_PROJECTIONS=off, none: a thread of this one, or nothing)
    read_models_elsewhere = cfg.ledger_process and cfg.projections
    if cfg.ledger_process:
        try:  # the same API, forwarded to the writer's own process
            ledger_process = bootstrap.open_ledger_process(
                settings, pool_size=pool_size, writer_name=writer_name, on_lost=_ledger_lost,
                read_models=read_models_elsewhere)
        except OSError as exc:
            raise CliError(str(exc)) from None
        ledger = ledger_process
    else:
        try:
            ledger = bootstrap.open_ledger(settings, batching=True, pool_size=pool_size,
                                           writer_name=writer_name,
                                           store_timeout=settings.store_timeout)
        except ChainBroken as exc:
            raise CliError(str(exc)) from None
    if settings.store.startswith(("postgresql:", "postgres:")):
        _log_connections(pool_size, settings.pg_max_overflow, pools=2 if cfg.ledger_process
                         else 1, read_models=_read_models_connections(settings)
                         if read_models_elsewhere else 0)
    try:
        running = server.start(cfg, ledger, metrics_listen=metrics_listen,
                               notary=bootstrap.notary(settings, on_error=server.notary_error),
                               games=bootstrap.SERVED,
                               read_models_elsewhere=read_models_elsewhere)
    except (OSError, api_config.ConfigError) as exc:
        ledger.close()
        raise CliError(str(exc)) from None
    except BaseException:
        ledger.close()  # the ledger process and its folder go too
        raise
    if settings.turn_clock:  # acts on the turns whose time ran out (services/turn_clock.py)
        from services.turn_clock import TurnClock

        running.turn_clock = TurnClock(ledger, games=bootstrap.TURN_GAMES, hub=running.hub,
                                       peer=writer_name).start()
    if chain_head is None:
        logs.get_logger().warning(
            "no SABOT_CHAIN_HEAD: the writer keeps no head file, so a store that lost its last "
            "events would be noticed only by the regulator's checkpoints")
    signals = server.Signals()  # before "listening on" is printed: a SIGTERM then stops cleanly
    _announce(args, running, tokens, cfg.listen, metrics_listen, signals)
    server.serve_until_signal(running, signals)
    if otlp_endpoint is not None:
        from services import traces

        traces.shutdown()  # the spans still buffered are exported
    if ledger_process is not None and ledger_process.lost is not None:
        raise CliError(f"the ledger process ended by itself (exit code {ledger_process.lost}); "
                       "the server stopped: restart it")
    return 0


def _check_read_store(args: argparse.Namespace) -> None:
    """With a read store: refuse one that is not a copy of the store (or cannot be read), and
    log how far behind it is (the health and metrics follow it while the server runs)."""
    if settings_of(args).read_store is None:
        return
    from services.cli.projections import read_lag

    lag = read_lag(args)
    assert lag is not None
    logs.get_logger().info("read store", lag=lag.text(), **lag.as_json())


def _announce(args: argparse.Namespace, running: Running, tokens: dict[str, Principal],
              listen: str, metrics_listen: str | None, signals: Signals) -> None:
    """Once the server runs: the demos (``--demo``), then how to connect and the metrics'
    address; on a failure the server is stopped (``CliError``, a demo's one line)."""
    import grpc

    host = listen.rsplit(":", 1)[0]
    target = f"{host}:{running.port}"
    try:
        if args.demo:
            # The demo's narration goes to stdout; the server's per-RPC lines wait till it ends.
            channel = None
            if running.tls:
                from services.cli.client import channel_of_env

                channel = channel_of_env(target)
            with logs.muted():
                _serve_demos(target, tokens, args, channel)
                _summary(target, tokens, channel, args)
        _print_connect(target, tokens, args.dev, running.tls)
        if running.endpoint is not None:
            metrics_host = metrics_listen.rsplit(":", 1)[0] if metrics_listen else host
            print(f"Metrics: http://{metrics_host}:{running.metrics_port}/metrics (health: "
                  f"/health, /health/sabot.writer)")
            sys.stdout.flush()
        if args.web:
            _start_web(args.web, target, running.tls)
    except (grpc.RpcError, CliError) as exc:
        running.stop()
        signals.restore()
        if isinstance(exc, CliError):
            raise
        raise rpc_failure(exc, "demo: ") from None
    except BaseException:
        running.stop()
        signals.restore()
        raise


def _summary(target: str, tokens: dict[str, Principal], channel: Any,
             args: argparse.Namespace) -> None:
    """``serve --demo``'s last words: what was played, per game; the balances; where the store
    and the logs are; what to run next."""
    from datetime import UTC, datetime

    from domain.currency import format_minor
    from services.api.client import Client
    from services.api.gen.sabot.v1 import cashier_pb2, table_pb2

    admin = next((t for t, w in tokens.items() if w.role is Role.ADMIN), None)
    if admin is None:
        return
    client = Client(target, admin, channel=channel) if channel else Client(target, admin)
    try:
        tables = client.tables.ListTables(table_pb2.ListTablesRequest(page_size=1000)).tables
        sheet = client.reports.GetBalanceSheet(cashier_pb2.GetBalanceSheetRequest())
    finally:
        client.close()
    played: dict[str, list[str]] = {}
    for t in tables:
        played.setdefault(t.game or UNRECORDED_GAME, []).append(t.name.split("/")[-1])
    print("\nSummary of the demo")
    for game, names in played.items():
        print(f"  {game}: table(s) {', '.join(names)}")
    players = [b for b in sheet.balances if ":" not in b.account_id]
    for b in players[:8]:
        print(f"  {b.account_id:<24} {format_minor(b.balance_minor, b.currency_code):>16}")
    if len(players) > 8:
        print(f"  ... and {len(players) - 8} more players")
    totals = ", ".join(format_minor(m.amount_minor, m.currency_code) for m in sheet.totals)
    print(f"  every account's balance adds up to {totals or '0'} "
          f"({len(sheet.balances)} accounts; sabot report balance-sheet)")
    print(f"  store: {settings_of(args).store}; logs: this terminal's JSON lines (stderr)")
    day = datetime.now(UTC).date().isoformat()
    print("Next: sabot report day " + day + " (the back office's gaming day, every game); sabot "
          "coup list SHOE / round list TABLE / match list TABLE; sabot regulator export -o "
          "day.jsonl, then sabot-verify day.jsonl with the public keys in var/")
    sys.stdout.flush()


def _start_web(listen: str, target: str, tls: bool) -> None:
    """``serve --web``: the web console on a thread of this process, a client of this server
    (over TLS with the client settings of the environment when the server serves TLS)."""
    from services.api.tls import open_channel
    from services.cli.client import channel_of_env
    from services.cli.web import start_console

    channel = channel_of_env(target) if tls else open_channel(target)
    running = start_console(listen, target, channel)
    print(f"Console: {running.url}/ (sign in with a token above; docs/web.md)", flush=True)


# The store connections beyond the ledger's pools, at most: the read models' pool (3, and its
# overflow of 2), the notary's, the health probe's, the writer lease's and the writer's store
# probe. Measured on PostgreSQL 15 (pg_stat_activity, `sabot serve --dev`): 2 pools of 20 + 5
# open once started (45); with --pg-pool-size 4 --pg-max-overflow 1, 2 x 4 + 5 (13).
OTHER_CONNECTIONS = 9


def _read_models_connections(settings: Settings) -> int:
    """The most connections the read models' process opens: its pool on the store, and one
    on the read store when there is one (``services.projections.follower``)."""
    from services.projections.follower import MAX_OVERFLOW, POOL_SIZE

    return (POOL_SIZE + MAX_OVERFLOW) * (2 if settings.read_store else 1)


def _log_connections(pool_size: int, max_overflow: int, pools: int,
                     read_models: int = 0) -> None:
    """One line at start: the most connections this server opens to PostgreSQL (the writer's
    pool and, with a ledger process, that process's reads: ``pools``; each ``pool_size`` +
    ``max_overflow``; and ``read_models``, the read models' process's, when it runs), so
    that ``max_connections`` can be sized against the servers."""
    logs.get_logger().info(
        "store connections",
        at_most=pools * (pool_size + max_overflow) + OTHER_CONNECTIONS + read_models,
        pools=pools, pool_size=pool_size, max_overflow=max_overflow, others=OTHER_CONNECTIONS,
        read_models=read_models,
        settings="SABOT_PG_POOL_SIZE / --pg-pool-size, SABOT_PG_MAX_OVERFLOW / "
                 "--pg-max-overflow")


def _serve_config(args: argparse.Namespace, settings: Settings, store_timeout: float | None
                  ) -> tuple[Settings, api_config.Config]:
    """What ``sabot serve`` runs with: the settings with what ``--dev`` made standing in for
    the keys not given (the composition root builds from them), and the server's ``Config``;
    ``CliError`` for what is missing."""
    try:
        tokens, hashed = settings.tokens.for_server()
    except SettingError as exc:
        raise CliError(str(exc)) from None
    suffix = secrets.token_hex(2)
    configured = bool(tokens or hashed or settings.credentials)
    if args.dev and not configured:
        tokens = api_config.demo_tokens(tuple(f"{n}-{suffix}"
                                              for n in ("anne", "bruno", "chiara", "dora")))
    if not (tokens or hashed or settings.credentials):
        raise CliError("no credentials: nobody could call the server (SABOT_CREDENTIALS, "
                       "SABOT_TOKENS, or --dev)")
    if settings.credentials is not None:  # before the ledger starts: nothing to undo
        from services.api.credentials import CredentialError, check_present

        try:
            check_present(settings.credentials)
        except CredentialError as exc:
            where = settings.sources.get("credentials", "--credentials")
            raise CliError(f"{where}: {exc}") from None
    if settings.tls_cert is not None and settings.tls_key is not None:
        from services.api.tls import ServerFiles, TlsError

        try:  # a pair gRPC can serve, whose files nobody else wrote: before the ledger starts
            ServerFiles(settings.tls_cert, settings.tls_key, settings.tls_client_ca).load()
        except TlsError as exc:
            raise CliError(str(exc)) from None
    seal_key = settings.seal_key
    if seal_key is None and args.dev:
        seal_key = _dev_seal_key()
    if seal_key is None:
        raise CliError("SABOT_SEAL_KEY / --seal-key: 64 hex digits (32 bytes), or a file holding "
                       "them, required (or use --dev)")
    chain_key, chain_head = settings.chain_key, settings.chain_head
    if chain_key is None and args.dev:
        chain_key = _dev_seal_key(DEV_CHAIN_KEY_FILE)
    if chain_key is None:
        raise CliError("SABOT_CHAIN_KEY / --chain-private-key: the ledger's evidence key is "
                       "required: 64 hex digits or its key file (NAME.key of `sabot keys chain`), "
                       "or use --dev")
    if chain_head is None and args.dev:
        chain_head = _dev_chain_head(settings.store)
    if settings.store.startswith("sqlite:///"):
        path = Path(settings.store.removeprefix("sqlite:///"))
        path.parent.mkdir(parents=True, exist_ok=True)
    checkpoint_key = settings.checkpoint_key
    if checkpoint_key is None and args.dev:
        checkpoint_key = _dev_seal_key(DEV_CHECKPOINT_KEY_FILE)
    regulator_key = settings.regulator_public_key
    # what --dev made stands in for what was not given: the composition root builds from these
    settings = settings.replace(seal_key=seal_key, chain_key=chain_key, chain_head=chain_head,
                                checkpoint_key=checkpoint_key, store_timeout=store_timeout)
    cfg = api_config.Config(
        listen=settings.listen, store=settings.store, tokens=tokens, credentials=hashed,
        credentials_file=settings.credentials, tls_cert=settings.tls_cert,
        tls_key=settings.tls_key, tls_client_ca=settings.tls_client_ca,
        insecure=settings.insecure, streams_per_principal=settings.streams_per_principal,
        seal_key=seal_key, workers=settings.workers, checkpoint_key=checkpoint_key,
        regulator_key=regulator_key, chain_key=chain_key, chain_head=chain_head,
        projections=settings.projections, ledger_process=settings.ledger_process,
        gaming_day=settings.gaming_day, read_store=settings.read_store,
    )
    return settings, cfg


def _serve_demos(target: str, tokens: dict[str, Principal], args: argparse.Namespace,
                 channel: Any) -> None:
    """``serve --demo``: the demo of every game that has one (``DEMOS``), in the composition
    root's order (``services.bootstrap.GAMES``); a game whose demo cannot be cast from the
    tokens (Treinta y Una's and Cuarenta's need two player tokens: a hand is its holder's only)
    is skipped with a line saying why."""
    from services import bootstrap

    first = True
    for name in (game.name for game in bootstrap.GAMES):
        play = DEMOS.get(name)
        if play is None:
            continue
        if not first:
            print()
        first = False
        try:
            play(target, tokens, args, channel)
        except ValueError as exc:
            print(f"(no {name} demo: {exc})")


def _writer_name(listen: str) -> str:
    """How this server names itself while it writes the store: the address it listens at (a
    wildcard host replaced by this host's name), or its pid and host for a port chosen at
    start."""
    from services.ledger.lease import default_name

    host, _, port = listen.rpartition(":")
    if port in ("", "0"):
        return default_name()
    if host in ("", "0.0.0.0", "[::]", "::"):
        import socket

        host = socket.gethostname()
    return f"{host}:{port}"


def _metrics_listen(args: argparse.Namespace) -> tuple[str | None, float]:
    """``--metrics-listen`` (else ``SABOT_METRICS_LISTEN``, from the environment, then the env
    file; None: no metrics endpoint) and ``--store-timeout`` (``SABOT_STORE_TIMEOUT``)."""
    from services.settings import SettingError, Settings

    try:  # these two only (a test reads them from .env.example, whose keys are placeholders)
        settings = Settings.load({"metrics_listen": args.metrics_listen,
                                  "store_timeout": getattr(args, "store_timeout", None),
                                  "env_file": getattr(args, "env_file", None)},
                                 only=("metrics_listen", "store_timeout"))
    except SettingError as exc:
        raise CliError(str(exc)) from None
    if settings.metrics_listen is None:
        return None, settings.store_timeout
    from services.metrics import split_address

    try:
        split_address(settings.metrics_listen)
    except ValueError as exc:
        raise CliError(f"{settings.sources.get('metrics_listen', '--metrics-listen')}: "
                       f"{exc}") from None
    return settings.metrics_listen, settings.store_timeout


def _check_listen(listen: str, flag: str = "--listen") -> None:
    """CliError if ``listen`` (HOST:PORT) cannot be bound now: a port in use is said in one
    line, before anything starts (gRPC would add a log line of its own)."""
    host, _, port = listen.rpartition(":")
    if not port.isdigit() or int(port) == 0:
        return  # port 0 (any free port), or a form gRPC reads itself
    try:
        found = socket.getaddrinfo(host.strip("[]") or None, int(port), type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        raise CliError(f"{flag} {listen}: {exc}") from None
    for family, kind, proto, _, address in found[:1]:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC binds
            try:
                probe.bind(address)
            except OSError as exc:
                raise CliError(f"{flag} {listen}: cannot listen: {exc.strerror}") from None


def _ledger_lost(code: int) -> None:
    """The ledger process ended while the server ran: log it and stop gracefully (SIGTERM to
    ourselves); ``sabot serve`` then exits with an error, for its supervisor to restart it."""
    logs.get_logger().error("the ledger process ended; stopping the server", exit_code=code)
    os.kill(os.getpid(), signal.SIGTERM)


def _print_connect(target: str, tokens: dict[str, Principal], dev: bool,
                   tls: bool = False) -> None:
    print(f"\nThe server is listening on {target} (Ctrl-C or SIGTERM stops it gracefully).")
    if tls:
        print("It serves TLS: give the commands below --tls-ca FILE (and --tls-client-cert FILE "
              "--tls-client-private-key FILE on an mTLS listener).")
    if dev:
        print("Development tokens (this run only):")
        for token, who in tokens.items():
            bound = f" bound to accounts/{who.account}" if who.account else ""
            print(f"  {who.role.value:<12} {token}{bound}")
    role_token = {w.role: t for t, w in tokens.items()}
    show = dev
    admin = role_token.get(Role.ADMIN, "<token>") if show else "<admin token>"
    back = role_token.get(Role.BACK_OFFICE, "<token>") if show else "<back office token>"
    print("Try:")
    print(f"  export SABOT_TARGET={target}")
    print("  .venv/bin/sabot health")
    print(f"  .venv/bin/sabot report balance-sheet --token {back}")
    print(f"  .venv/bin/sabot report events --token {back} --batch-size 100")
    print(f"  .venv/bin/sabot table open my-table --preset italiana --token {admin}")
    print(f"  .venv/bin/sabot demo --token {admin}")
    sys.stdout.flush()


# ``sabot demo --game GAME``: each game's demo, ``play(target, tokens, args, channel)``, where
# ``tokens`` are the caller's clear tokens (SABOT_TOKENS, and --token as admin) and ``args``
# the parsed command (``--preset``). A game adds its own with ``add_demo`` from its
# ``services/cli/<game>.py``.
DemoPlay = Callable[[str, dict[str, Principal], argparse.Namespace, Any], object]
DEFAULT_DEMO = UNRECORDED_GAME  # the game of a table that names none
DEMOS: dict[str, DemoPlay] = {}


def add_demo(game: str, play: DemoPlay) -> None:
    """``sabot demo --game GAME`` plays ``play``."""
    DEMOS[game] = play


def _play_trente_et_quarante(target: str, tokens: dict[str, Principal],
                             args: argparse.Namespace, channel: Any) -> None:
    admin = {t: w for t, w in tokens.items() if w.role is Role.ADMIN}
    cast = demo.cast_from(admin or tokens, secrets.token_hex(2))  # an admin plays every part
    tq_demo.play(target, cast, preset=args.preset, channel=channel)


add_demo(DEFAULT_DEMO, _play_trente_et_quarante)


def cmd_demo(args: argparse.Namespace) -> int:
    import grpc

    settings = settings_of(args)
    tokens = dict(settings.tokens.clear)
    if settings.token:
        tokens[settings.token] = Principal(Role.ADMIN, None, "admin")
    game = getattr(args, "game", None) or DEFAULT_DEMO
    play = DEMOS.get(game)
    if play is None:
        from services import bootstrap

        known = [game.name for game in bootstrap.GAMES if game.name in DEMOS]
        raise CliError(f"--game: no demo of {game[:64]!r} (there are: {', '.join(known)})")
    from services.cli.client import channel_of

    try:
        play(settings.target, tokens, args, channel_of(args))
    except ValueError as exc:
        raise CliError(str(exc)) from None
    except grpc.RpcError as exc:
        raise rpc_failure(exc) from None
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m services.cli.server serve|demo ...``: the same commands without the ``sabot``
    entry point (``make run`` uses it)."""
    import services.cli as cli
    from services.cli import main as cli_main

    if "services.cli.server" not in cli.COMMAND_MODULES:
        cli.COMMAND_MODULES = (*cli.COMMAND_MODULES, "services.cli.server")  # type: ignore[assignment]
    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
