"""``sabot demo --game treinta-y-una`` against a real server: four players, the bank changing
hands, in the croupier's words."""

from __future__ import annotations

import itertools

from services.cli import build_parser
from services.cli.treinta_y_una import play
from tests.api.support import PLAYERS, Api


def test_the_demo_plays_rounds_with_four_players(api: Api) -> None:
    lines: list[str] = []
    players = [(api.player_tokens[p], p) for p in PLAYERS]
    rounds = play(api.target, api.tokens["croupier"], api.tokens["cashier"], players,
                  rounds=6, say=lines.append)
    assert len(rounds) >= 6 and all(r.phase == "settled" for r in rounds)
    assert len({r.banker for r in rounds}) >= 2  # the bank changed hands
    text = "\n".join(lines)
    assert '"carta"' in text and '"me planto"' in text and "the showdown" in text
    assert "drawn by lot" in text and "next round the bank is" in text
    for before, after in itertools.pairwise(rounds):
        assert after.banker == before.next_banker


def test_demo_takes_the_game() -> None:
    args = build_parser().parse_args(["demo", "--game", "treinta-y-una", "--token", "x"])
    assert args.game == "treinta-y-una" and callable(args.func)
