"""``sabot web --listen HOST:PORT --target HOST:PORT``: the web console (services/web/), a
client of the gRPC server at ``--target`` with the client TLS settings of every gRPC command
(``--tls-ca``, ``--tls-client-cert``, ``--tls-client-private-key``). It serves HTTPS given
``--cert`` and ``--private-key``; plaintext only on a loopback address unless ``--insecure``."""

from __future__ import annotations

import argparse
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.cli import CliError, commands, settings_of
from services.cli.client import TLS_SETTINGS, channel_of, tls_arguments
from services.settings import add_flags, reads


@dataclass
class RunningConsole:
    """A console served on a thread (``sabot serve --web``, tests): its address; ``stop``."""

    url: str
    server: Any
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start_console(listen: str, target: str, channel: Any, *, cert: Path | None = None,
                  key: Path | None = None, checkpoint_public_key: str = "",
                  insecure: bool = False) -> RunningConsole:
    """The console on ``listen`` (port 0: a free one), calling ``target`` over ``channel``,
    served on a thread of its own until ``stop``."""
    import socket

    import uvicorn

    from services.api.tls import is_loopback
    from services.web import games, search
    from services.web.app import Console, build

    if (cert is None) != (key is None):
        raise CliError("--cert and --private-key: give both (HTTPS) or neither (plaintext on "
                       "loopback)")
    if cert is None and not insecure and not is_loopback(listen):
        raise CliError(f"--listen {listen}: plaintext is served on a loopback address only; "
                       "give --cert and --private-key (HTTPS), or --insecure")
    host, _, port = listen.rpartition(":")
    sock = socket.socket(socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), int(port)))
    except OSError as exc:
        sock.close()
        raise CliError(f"--listen {listen}: cannot listen: {exc.strerror}") from None
    console = Console(target, channel, secure=cert is not None,
                      checkpoint_public_key=checkpoint_public_key)
    app = build(console, (*games.ROUTES, *search.ROUTES),
                {g: games.game_table for g in games.GAMES},
                {g: games.game_live for g in games.GAMES})
    config = uvicorn.Config(app, log_level="warning", access_log=False,
                            ssl_certfile=str(cert) if cert else None,
                            ssl_keyfile=str(key) if key else None, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                              name="sabot-web", daemon=True)
    thread.start()
    scheme = "https" if cert else "http"
    bound = sock.getsockname()[1]
    return RunningConsole(f"{scheme}://{host}:{bound}", server, thread)


def cmd_web(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    listen = args.listen or settings.web_listen
    running = start_console(listen, settings.target, channel_of(args), cert=args.cert,
                            key=args.key, checkpoint_public_key=args.checkpoint_public_key,
                            insecure=args.insecure)
    print(f"Console: {running.url}/ (calls {settings.target}; Ctrl-C stops it)", flush=True)
    try:
        running.thread.join()
    except KeyboardInterrupt:
        running.stop()
    return 0


def register(sub: Any) -> None:
    sub = commands(sub)
    p = sub.add_parser("web", help="the web console: find, replay and check coups, rounds and "
                                   "matches; reports (a client of the gRPC server)",
                       description="The web console, a client of the gRPC server at --target: "
                                   "each browser session acts with its user's own credential.")
    p.add_argument("--listen", default=None, metavar="HOST:PORT",
                   help="the console's address (env SABOT_WEB_LISTEN; default 127.0.0.1:8080)")
    add_flags(p, "target")
    tls_arguments(p)
    reads(p, "web_listen", "target", *TLS_SETTINGS)
    p.add_argument("--cert", type=Path, default=None, help="serve HTTPS with this certificate")
    p.add_argument("--private-key", dest="key", type=Path, default=None,
                   help="... and this private key")
    p.add_argument("--insecure", action="store_true",
                   help="allow plaintext on an address other than loopback")
    p.add_argument("--checkpoint-public-key", default="", metavar="HEX",
                   help="the notary's public key the check pages offer to pin (the user may "
                        "give another)")
    p.set_defaults(func=cmd_web)
