"""``sabot demo --game treinta-y-una``: rounds of Treinta y Una with up to four players through
the API, in the croupier's words.

The croupier opens a Treinta y Una table and, round after round, the bank (drawn by lot for the
first round, then passed to whoever made 31); each punter stakes, the croupier deals three
cards face down to each, and each player in turn, with its own token, looks at its own hand and
says "carta" or "me planto" (a punter stands at 27, going for 31; the banker at 25); then the
showdown, the payments and where the bank goes. The players need their own tokens (a face-down
card is shown to its holder only): ``sabot serve --dev`` makes them.
"""

from __future__ import annotations

import argparse
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import grpc

from domain.currency import format_minor
from services.api import demo
from services.api.client import Client, _Authed, new_request_id
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2 as pb
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2_grpc
from services.api.gen.sabot.v1 import common_pb2
from services.api.roles import Principal

GAME = "treinta-y-una"
STAKE = 1_000
BANK = 20_000
DEPOSIT = 100_000
PUNTER_STANDS, BANKER_STANDS = 27, 25  # a punter goes for 31 (the bank passes to him)
MAX_ROUNDS = 24
REASONS = {"lot": "drawn by lot", "kept_31": "he made 31 and keeps it",
           "passed_31": "made 31 and takes the bank", "kept": "nobody made 31: he keeps it",
           "passed_to_mano": "nobody made 31: it passes to the mano"}


def cast_of(tokens: Mapping[str, Principal]) -> demo.Cast:
    """The croupier, the cashier (an admin token plays them, never a player) and two to four
    players with their own tokens, as every demo picks them (``services.api.demo.cast_from``)."""
    return demo.cast_from(tokens, players=4, own=2, why=(
        "the Treinta y Una demo needs two to four player tokens (a face-down card is shown "
        "to its holder only): sabot serve --dev makes them"))


def play(target: str, croupier: str, cashier: str, players: Sequence[tuple[str, str]],
         rounds: int = 4, say: Callable[[str], None] = print,
         channel: grpc.Channel | None = None) -> list[pb.Round]:
    """Play ``rounds`` rounds, and on until the bank has changed hands (at most
    ``MAX_ROUNDS``); each round at its end."""
    base = Client(target, channel=channel)
    try:
        return _play(base, croupier, cashier, players, rounds, say)
    finally:
        base.close()
        if channel is not None:
            channel.close()


def _stub(base: Client, token: str) -> Any:
    return _Authed(treinta_y_una_pb2_grpc.TreintaYUnaServiceStub(base.channel), token, 30.0)


def _play(base: Client, croupier: str, cashier: str, players: Sequence[tuple[str, str]],
          rounds: int, say: Callable[[str], None]) -> list[pb.Round]:
    house = _stub(base, croupier)
    own = {account: _stub(base, token) for token, account in players}
    table_id = f"treinta-y-una-{secrets.token_hex(3)}"
    table = house.OpenTable(pb.OpenTableRequest(request_id=new_request_id(),
                                                table_id=table_id))
    currency = table.currency_code

    def money(amount: int) -> str:
        return format_minor(amount, currency)

    desk = base.as_(cashier)
    for _, account in players:
        demo.fund(desk, account, currency, DEPOSIT)
    seats = [account for _, account in players]
    say(f"Treinta y Una at table {table_id} ({table.preset}): {', '.join(seats)}; "
        f"stakes of {money(STAKE)}, the table maximum {money(int(table.options['max_stake']))}")
    ended: list[pb.Round] = []
    while len(ended) < rounds or (
            len(ended) < MAX_ROUNDS and len({r.banker for r in ended}) < 2):
        r = house.OpenRound(pb.OpenRoundRequest(
            request_id=new_request_id(), parent=f"tables/{table_id}",
            seats=[f"accounts/{s}" for s in seats],
            bank=common_pb2.Money(currency_code=currency, amount_minor=BANK)))
        say(f"\nround {r.number}: {r.banker} holds the bank ({REASONS.get(r.banker_reason, '')}"
            f"), {money(r.bank.amount_minor)}; the mano is {r.mano}; shoe commitment "
            f"{r.commitment[:16]}…")
        for s in seats:
            if s != r.banker:
                r = own[s].PlaceStake(pb.PlaceStakeRequest(
                    request_id=new_request_id(), round=r.name, player=f"accounts/{s}",
                    amount=common_pb2.Money(currency_code=currency, amount_minor=STAKE)))
                say(f"  {s} stakes {money(STAKE)}")
        r = house.Deal(pb.DealRequest(request_id=new_request_id(), round=r.name))
        say(f"  the croupier deals three cards face down to each, right to left "
            f"(positions {', '.join(str(c.position) for c in r.hands[0].cards)} to "
            f"{r.hands[0].player.removeprefix('accounts/')}, …)")
        while r.phase == "playing":
            who = r.whose_turn
            hand = own[who].GetMyHand(pb.GetMyHandRequest(round=r.name,
                                                          player=f"accounts/{who}"))
            limit = BANKER_STANDS if who == r.banker else PUNTER_STANDS
            if hand.total < limit:
                r = own[who].Carta(pb.CartaRequest(request_id=new_request_id(), round=r.name,
                                                   player=f"accounts/{who}"))
                mine = next(h for h in r.hands if h.player == f"accounts/{who}")
                line = f"  {who}: \"carta\" — {mine.cards[-1].code}"
                if mine.out:
                    line += f": {mine.total}, over 31, the hand is lost"
                say(line)
            else:
                r = own[who].MePlanto(pb.MePlantoRequest(
                    request_id=new_request_id(), round=r.name, player=f"accounts/{who}"))
                say(f"  {who}: \"me planto\"")
        r = house.SettleRound(pb.SettleRoundRequest(request_id=new_request_id(), round=r.name))
        say("  the showdown:")
        for h in r.hands:
            name = h.player.removeprefix("accounts/")
            role = " (the bank)" if name == r.banker else ""
            words = "treinta y una real" if h.real else ("over 31" if h.bust else str(h.total))
            say(f"    {name}{role}: {' '.join(c.code for c in h.cards)} — {words}")
        for x in r.results:
            if x.outcome == "won":
                say(f"    {x.player} wins {money(x.paid.amount_minor)}"
                    f"{' (double: treinta y una real)' if x.multiple == 2 else ''}")
            elif x.outcome == "lost":
                say(f"    {x.player} pays the bank {money(x.paid.amount_minor)}"
                    f"{' (double: the bank holds treinta y una real)' if x.multiple == 2 else ''}")
            else:
                say(f"    {x.player}: a tie, the stake stays for the next round")
        say(f"  next round the bank is {r.next_banker}'s "
            f"({REASONS.get(r.next_banker_reason, r.next_banker_reason)})")
        ended.append(r)
    return ended


def demo_play(target: str, tokens: dict[str, Principal], args: argparse.Namespace,
              channel: Any) -> object:
    """``sabot demo --game treinta-y-una`` (``services.cli.server.DEMOS``)."""
    cast = cast_of(tokens)
    return play(target, cast.croupier, cast.cashier, cast.players, channel=channel)


def register(sub: Any) -> None:
    """``sabot demo --game treinta-y-una``."""
    from services.cli.server import add_demo

    add_demo(GAME, demo_play)
