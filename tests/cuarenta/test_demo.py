"""``sabot demo --game cuarenta`` against a real server: a whole match, narrated."""

from __future__ import annotations

from api.support import Api

from services.api.demo import Cast
from services.cli import build_parser
from services.cli.cuarenta import play


def test_the_demo_plays_a_whole_match(api: Api) -> None:
    lines: list[str] = []
    cast = Cast(api.tokens["croupier"], api.tokens["cashier"],
                ((api.player_tokens["chiara"], "chiara"), (api.player_tokens["dora"], "dora")))
    end = play(api.target, cast, say=lines.append)
    assert end.phase == "over"
    text = "\n".join(lines)
    assert "hand 1: a new shoe, commitment" in text and " takes " in text
    assert "wins the match" in text and "commission: 5.00 EUR" in text
    assert "payout: 95.00 EUR to " in text


def test_demo_takes_a_game() -> None:
    args = build_parser().parse_args(["demo", "--game", "cuarenta", "--token", "x"])
    assert args.game == "cuarenta" and callable(args.func)

