"""The examples' command line: the server and one token per role (a player's as ACCOUNT=TOKEN)."""

from __future__ import annotations

import argparse


def parse(description: str, *roles: str, players: int = 0) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--target", default="127.0.0.1:50051", help="the server, HOST:PORT")
    for role in roles:
        p.add_argument(f"--{role.replace('_', '-')}", required=True, metavar="TOKEN",
                       help=f"the {role.replace('_', ' ')}'s token")
    if players:
        p.add_argument("--player", action="append", required=True, metavar="ACCOUNT=TOKEN",
                       help=f"a player's account and its own token ({players} of them)")
    args = p.parse_args()
    if players:
        args.players = dict(item.split("=", 1) for item in args.player)
        if len(args.players) < players:
            p.error(f"give {players} players (--player ACCOUNT=TOKEN)")
    return args
