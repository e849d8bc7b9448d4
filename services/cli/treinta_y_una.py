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
from services.api.client import Client, authed, new_request_id
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


def _stub(base: Client, token: str) -> treinta_y_una_pb2_grpc.TreintaYUnaServiceStub:
    return treinta_y_una_pb2_grpc.TreintaYUnaServiceStub(authed(base.channel, token, 30.0))


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
    """``sabot demo --game treinta-y-una`` and ``sabot round …``."""
    from services.cli.server import add_demo

    add_demo(GAME, demo_play)
    register_rounds(sub)


ROUNDS_HELP = ("Treinta y Una rounds: open, deal, settle, cancel, stand-for-absent (croupier); "
               "stake, carta, planto, hand (player, its own token); get, latest, list, watch, "
               "recall; replay (regulator)")


def register_rounds(sub: Any) -> None:
    """``sabot round open|stake|deal|carta|planto|stand-for-absent|settle|cancel|get|latest|list|
    watch|hand|recall|replay``: TreintaYUnaService over gRPC, one call each, as the caller's
    token (a table: ``sabot table open T --game treinta-y-una``). A round is named
    ``tables/{table}/rounds/{round}``; a table or a player by its id. Mutating calls make a
    request id when ``--request-id`` is not given (named in the error line when the outcome is
    unknown, to retry with)."""
    from services.cli import commands

    group = commands(sub).group("round", ROUNDS_HELP)
    _round_commands(group)
    _round_reads(group)
    _replay_alias(sub, group, "replay-round", "the regulator's replay of the round beside its "
                  "recorded events (exit 1 unless identical)")


_SVC = "treinta_y_una"


def _on_round(extra: Callable[[argparse.ArgumentParser], None] | None = None
              ) -> Callable[[argparse.ArgumentParser], None]:
    """A subcommand's arguments: the round's name, then ``extra``'s."""
    def setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("round", help="tables/{table}/rounds/{round}")
        if extra:
            extra(p)
    return setup


def _player_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--player", required=True, help="the player's account (a player token: "
                                                    "its own)")


def _round_commands(group: Any) -> None:
    """The round's commands: open, stake, deal, settle, cancel, carta, planto,
    stand-for-absent."""
    from services.cli.client import _add, _name, _rid, amount_flags, amount_of

    svc = _SVC

    def open_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("table")
        p.add_argument("--seat", action="append", required=True, metavar="ACCOUNT",
                       help="a seat, counter-clockwise (repeat: 2 to 13)")
        amount_flags(p, "bank", what="what the banker puts up")
        p.add_argument("--round-id", default="", help="a UUID (default: the server's)")

    _add(group, "open", "open the table's next round: seats, banker, bank (croupier)",
         lambda a: (svc, "OpenRound", pb.OpenRoundRequest(
             request_id=_rid(a), parent=_name("tables", a.table),
             seats=[_name("accounts", s) for s in a.seat], bank=amount_of(a, "bank"),
             round_id=a.round_id)), mutating=True, setup=open_setup)

    def stake_setup(p: argparse.ArgumentParser) -> None:
        _player_arg(p)
        amount_flags(p, what="the stake")

    _add(group, "stake", "a punter's stake before the deal (player)",
         lambda a: (svc, "PlaceStake", pb.PlaceStakeRequest(
             request_id=_rid(a), round=a.round, player=_name("accounts", a.player),
             amount=amount_of(a))), mutating=True, setup=_on_round(stake_setup))
    for name, method, request, text in (
            ("deal", "Deal", pb.DealRequest, "three cards face down to each hand (croupier)"),
            ("settle", "SettleRound", pb.SettleRoundRequest,
             "the showdown: the bank collects and pays (croupier)"),
            ("cancel", "CancelRound", pb.CancelRoundRequest,
             "call the round off before the deal: stakes and bank back (croupier)")):
        _add(group, name, text, _round_call(svc, method, request, _rid, player=False),
             mutating=True, setup=_on_round())
    for name, method, with_player, text in (
            ("carta", "Carta", pb.CartaRequest, "\"carta\": one card face up (player, in turn)"),
            ("planto", "MePlanto", pb.MePlantoRequest, "\"me planto\": stand (player, in turn)"),
            ("stand-for-absent", "StandForAbsent", pb.StandForAbsentRequest,
             "stand for an absent player once the turn time has passed (croupier)")):
        _add(group, name, text, _round_call(svc, method, with_player, _rid, player=True),
             mutating=True, setup=_on_round(_player_arg))


def _round_reads(group: Any) -> None:
    """The round's reads: get, latest, list, watch, hand, recall."""
    from services.cli.client import PAGE_SIZE, POSITION, _add, _name

    svc = _SVC
    _add(group, "get", "show a round (a player: the others' names hidden)",
         lambda a: (svc, "GetRound", pb.GetRoundRequest(name=a.round)), setup=_on_round())
    _add(group, "latest", "a table's latest round",
         lambda a: (svc, "GetLatestRound", pb.GetLatestRoundRequest(
             parent=_name("tables", a.table))),
         setup=lambda p: p.add_argument("table"))

    def list_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("table")
        p.add_argument("--page-size", type=PAGE_SIZE, default=0, help="default 50")
        p.add_argument("--page-token", default="")

    _add(group, "list", "a table's rounds in the order they opened (one page)",
         lambda a: (svc, "ListRounds", pb.ListRoundsRequest(
             parent=_name("tables", a.table), page_size=a.page_size,
             page_token=a.page_token)), setup=list_setup)

    def after_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument("--after", type=POSITION, default=0,
                       help="log position (0: the round's start)")

    _add(group, "watch", "every step of a round as it happens, until it ends",
         lambda a: (svc, "WatchRound", pb.WatchRoundRequest(round=a.round,
                                                              after_position=a.after)),
         setup=_on_round(after_arg))
    _add(group, "hand", "the player's own hand, faces shown (its own token)",
         lambda a: (svc, "GetMyHand", pb.GetMyHandRequest(
             round=a.round, player=_name("accounts", a.player))), setup=_on_round(_player_arg))
    _add(group, "recall", "the round and every recorded step, in order",
         lambda a: (svc, "RecallRound", pb.RecallRoundRequest(name=a.round)),
         setup=_on_round())


def _round_call(service: str, method: str, request: Any, rid: Callable[[Any], str], *,
                player: bool) -> Callable[[argparse.Namespace], tuple[str, str, Any]]:
    def build(a: argparse.Namespace) -> tuple[str, str, Any]:
        fields: dict[str, Any] = {"request_id": rid(a), "round": a.round}
        if player:
            fields["player"] = a.player if "/" in a.player else f"accounts/{a.player}"
        return service, method, request(**fields)

    return build


def _replay_alias(sub: Any, group: Any, regulator: str, text: str) -> None:
    """``sabot round|match replay NAME``: ``sabot regulator replay-round|replay-match``'s
    command, in the game's group."""
    from services.cli import commands

    try:
        found = commands(sub).find(f"regulator {regulator}")
    except KeyError:
        return
    p = group.add_parser("replay", help=text, parents=[found], add_help=False,
                         conflict_handler="resolve")
    p.set_defaults(func=found.get_default("func"))
