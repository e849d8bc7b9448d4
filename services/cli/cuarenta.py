"""``sabot demo --game cuarenta``: a whole two-player Cuarenta match through the API, narrated.

The croupier opens a Cuarenta table (a 5 % house commission) and a match between two players,
each staking 50.00; the croupier deals, and each player, with its own token, asks for its own
hand and plays the rule book's simple policy (the capture worth most, else its lowest card left
on the table); the narration says every capture and the score, each hand's cartón, the winner
and what was paid. The players need their own tokens (a hand is shown to its holder only):
``sabot serve --dev`` makes them.
"""

from __future__ import annotations

import argparse
import secrets
from collections.abc import Callable
from typing import Any

import grpc

from domain.currency import format_minor
from services.api import demo
from services.api.client import Client, authed, new_request_id
from services.api.gen.sabot.cuarenta.v1 import cuarenta_pb2 as pb
from services.api.gen.sabot.cuarenta.v1 import cuarenta_pb2_grpc
from services.api.gen.sabot.v1 import common_pb2, table_pb2
from services.api.roles import Principal

GAME = "cuarenta"
STAKE = 5_000  # minor units, each side
DEPOSIT = 100_000
KINDS = {"capture": "", "caida": "caída", "limpia": "limpia", "caida_limpia": "caída y limpia"}


def _stub(base: Client, token: str) -> cuarenta_pb2_grpc.CuarentaServiceStub:
    return cuarenta_pb2_grpc.CuarentaServiceStub(authed(base.channel, token, 30.0))


def play(target: str, cast: demo.Cast, say: Callable[[str], None] = print,
         channel: grpc.Channel | None = None) -> pb.Match:
    """Play one match; the match at its end."""
    base = Client(target, channel=channel)
    try:
        return _play(base, cast, say)
    finally:
        base.close()
        if channel is not None:
            channel.close()


def _play(base: Client, cast: demo.Cast, say: Callable[[str], None]) -> pb.Match:
    croupier, cashier = base.as_(cast.croupier), base.as_(cast.cashier)
    (t0, a0), (t1, a1) = cast.players[:2]
    names = {0: a0, 1: a1}
    games = {a0: _stub(base, t0), a1: _stub(base, t1)}
    house = _stub(base, cast.croupier)
    table_id = f"cuarenta-{secrets.token_hex(3)}"
    table = croupier.tables.OpenTable(table_pb2.OpenTableRequest(
        request_id=new_request_id(), table_id=table_id, game=GAME,
        overrides={"commission_rate": "5%"}))
    currency = table.currency_code

    def money(amount: int) -> str:
        return format_minor(amount, currency)

    for account in (a0, a1):
        demo.fund(cashier, account, currency, DEPOSIT)
    say(f"Cuarenta at table {table_id}: {a0} against {a1}, {money(STAKE)} each, "
        f"house commission {table.options['commission_rate']}")
    step = house.OpenMatch(pb.OpenMatchRequest(
        request_id=new_request_id(), table=f"tables/{table_id}", seats=[f"accounts/{a0}",
                                                                          f"accounts/{a1}"],
        stake=common_pb2.Money(currency_code=currency, amount_minor=STAKE)))
    m = step.match
    _narrate(step.moves, names, money, say)
    while m.phase != "over":
        if m.phase == "awaiting_deal":
            step = house.Deal(pb.DealRequest(request_id=new_request_id(), match=m.name))
        else:
            who = names[m.to_act]
            try:
                hand = games[who].GetHand(pb.GetHandRequest(match=m.name, seat=m.to_act))
            except grpc.RpcError as exc:
                if exc.code() is grpc.StatusCode.PERMISSION_DENIED:
                    raise ValueError("the Cuarenta demo needs two player tokens (a hand is "
                                     "shown to its holder only): sabot serve --dev makes "
                                     "them") from None
                raise
            best = max(hand.legal, key=lambda p: (p.points, len(p.capture)))
            if not best.capture:
                best = min(hand.legal, key=lambda p: (len(p.capture) > 0, p.card))
            step = games[who].PlayCard(pb.PlayCardRequest(
                request_id=new_request_id(), match=m.name, seat=m.to_act, card=best.card,
                capture=list(best.capture), leave_on_table=not best.capture))
        m = step.match
        _narrate(step.moves, names, money, say)
    end: pb.Match = m
    return end


def _narrate(moves: Any, names: dict[int, str], money: Callable[[int], str],
             say: Callable[[str], None]) -> None:
    for mv in moves:
        who = names.get(mv.seat % 2 if mv.seat >= 0 else -1, "")
        if mv.kind == "hand_begun":
            say(f"hand {mv.hand}: a new shoe, commitment {mv.commitment[:16]}…; "
                f"{names[mv.seat % 2]} deals")
        elif mv.kind == "ronda":
            say(f"  {who}: ronda, {mv.points} points ({mv.total})")
        elif mv.kind == "four_of_a_kind":
            say(f"  {who}: four {mv.card}s dealt: the match is won")
        elif mv.kind == "captured":
            kind = KINDS.get(mv.capture_kind, mv.capture_kind)
            points = f" — {kind}, {mv.points} points" if mv.points else ""
            held = f" ({mv.withheld} withheld at 38)" if mv.withheld else ""
            say(f"  {who} plays {mv.card}, takes {' '.join(mv.taken)}{points}{held}; "
                f"score {mv.total}")
        elif mv.kind == "hand_scored":
            say(f"hand {mv.hand} ends: cards won {mv.cards[0]}–{mv.cards[1]}, cartón "
                f"{mv.carton[0]}–{mv.carton[1]}; score {names[0]} {mv.totals[0]}, "
                f"{names[1]} {mv.totals[1]}")
        elif mv.kind == "forfeited":
            say(f"  {who} forfeits ({mv.reason})")
        elif mv.kind == "won":
            say(f"{names[mv.side]} wins the match ({mv.reason}), "
                f"{mv.totals[0]}–{mv.totals[1]}")
        elif mv.kind == "money" and mv.reason != "stake":
            to = mv.credit_account if mv.reason == "payout" else "the house"
            say(f"  {mv.reason}: {money(mv.amount.amount_minor)} to {to}")


NEEDS = ("the Cuarenta demo needs two player tokens with their own accounts (a hand is shown "
         "to its holder only; an admin token plays the croupier and the cashier but cannot see "
         "a player's cards): sabot serve --dev makes them, or sabot credentials issue --role "
         "player --account A")


def demo_play(target: str, tokens: dict[str, Principal], args: argparse.Namespace,
              channel: Any) -> object:
    """``sabot demo --game cuarenta`` (``services.cli.server.DEMOS``): refused before anything
    is opened unless two player tokens with their own accounts are given (an admin token alone
    would open a match, hold the stakes and stop at the first hand it may not see)."""
    cast = demo.cast_from(tokens, secrets.token_hex(2), players=2, own=2, why=NEEDS)
    return play(target, cast, channel=channel)


def cmd_replay(args: argparse.Namespace, fallback: Callable[[argparse.Namespace], int]) -> int:
    """``sabot store replay --match ID``: the regulator's replay of a Cuarenta match (every
    step beside the recorded event; the first difference at its position); exit 0 only when
    identical. ``--coup``/``--shoe``: ``fallback``."""
    if not getattr(args, "match", None):
        return fallback(args)
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    from services import bootstrap
    from services.cli import settings_of
    from services.cuarenta.replay import replay_match
    from services.regulator.replay import verdict
    from services.regulator.source import EventTable

    settings = settings_of(args)  # --store, SABOT_STORE; --regulator-key: hex, a file, a PEM
    reg = None
    if settings.regulator_key is not None:
        reg = X25519PrivateKey.from_private_bytes(settings.regulator_key)
    db = bootstrap.store_database(settings)
    try:
        from services.ledger.ids import parse_uuid

        parse_uuid(args.match, "match")
        shown = []
        for step in replay_match(EventTable(db), args.match, regulator_key=reg):
            if args.all or not step.same:
                mark = "=" if step.same else "≠"
                print(f"{step.position!s:>8} {mark} {step.what}: {step.recorded!r} | "
                      f"{step.replayed!r}")
            shown.append(step)
        v = verdict(shown)
    finally:
        db.close()
    print(f"verdict: {v}")
    return 0 if v.identical else 1


def _wrap(parser: argparse.ArgumentParser, command: Callable[..., int]) -> None:
    fallback = parser.get_default("func")
    parser.set_defaults(func=lambda args: command(args, fallback))


MATCHES_HELP = ("Cuarenta matches: open, deal (croupier); hand, play (player, its own seat and "
                "token); forfeit (a player for its own seat, the croupier on turn time); get, "
                "list, moves, watch; replay (regulator)")


def register_matches(sub: Any) -> None:
    """``sabot match open|deal|play|forfeit|get|list|moves|watch|hand|replay``: CuarentaService
    over gRPC, one call each, as the caller's token (a table: ``sabot table open T --game
    cuarenta``). A match is named ``tables/{table}/matches/{match}``; a table or a player by
    its id. Mutating calls make a request id when ``--request-id`` is not given (named in the
    error line when the outcome is unknown, to retry with)."""
    from services.cli import commands
    from services.cli.treinta_y_una import _replay_alias

    group = commands(sub).group("match", MATCHES_HELP)
    _match_commands(group)
    _match_reads(group)
    _replay_alias(sub, group, "replay-match", "the regulator's replay of the match beside its "
                  "recorded events (exit 1 unless identical)")


def _seat_type(text: str) -> int:
    from services.cli.client import whole

    return whole(0, 3, "a seat")(text)


def _on_match(extra: Callable[[argparse.ArgumentParser], None] | None = None
              ) -> Callable[[argparse.ArgumentParser], None]:
    """A subcommand's arguments: the match's name, then ``extra``'s."""
    def setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("match", help="tables/{table}/matches/{match}")
        if extra:
            extra(p)
    return setup


def _seat_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seat", type=_seat_type, required=True, help="the seat (0 to 3)")


def _match_commands(group: Any) -> None:
    """The match's commands: open, deal, play, forfeit."""
    from services.cli import CliError
    from services.cli.client import _add, _name, _rid, amount_flags, amount_of

    svc, seat_type = "cuarenta", _seat_type

    def open_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("table")
        p.add_argument("--seat", action="append", required=True, metavar="ACCOUNT",
                       help="a seat's player (repeat: two, or four: seats 0 and 2 against 1 "
                            "and 3)")
        amount_flags(p, "stake", what="each side's stake")
        p.add_argument("--preset", default="", help="seed (default), seed_literal, pagat")
        p.add_argument("--option", action="append", default=[], metavar="OPTION=VALUE",
                       help="override an option (repeatable), e.g. commission_rate=5%%")
        p.add_argument("--dealer", type=seat_type, default=None,
                       help="the first hand's dealer (default: the last seat)")
        p.add_argument("--match-id", default="", help="a UUID (default: the server's)")

    def open_build(a: argparse.Namespace) -> tuple[str, str, Any]:
        options = {}
        for item in a.option:
            key, eq, value = item.partition("=")
            if not eq:
                raise CliError(f"--option: expected OPTION=VALUE, got {item!r}")
            options[key] = value
        request = pb.OpenMatchRequest(
            request_id=_rid(a), table=_name("tables", a.table), match_id=a.match_id,
            seats=[_name("accounts", s) for s in a.seat], stake=amount_of(a, "stake"),
            preset=a.preset, options=options)
        if a.dealer is not None:
            request.dealer = a.dealer
        return svc, "OpenMatch", request

    _add(group, "open", "open a match: seats, each side's stake held on the table (croupier)",
         open_build, mutating=True, setup=open_setup)
    _add(group, "deal", "five cards to each seat from the hand's shoe (croupier)",
         lambda a: (svc, "Deal", pb.DealRequest(request_id=_rid(a), match=a.match)),
         mutating=True, setup=_on_match())

    def play_setup(p: argparse.ArgumentParser) -> None:
        _seat_arg(p)
        p.add_argument("--card", required=True, help="a card of the seat's hand, e.g. 5H")
        p.add_argument("--capture", action="append", default=[], metavar="CARD",
                       help="a table card it takes (repeat: the base, then the run); none: "
                            "what it takes when there is no choice")
        p.add_argument("--leave", action="store_true", help="leave the card on the table")

    _add(group, "play", "play a card of the caller's seat with its capture (player, in turn)",
         lambda a: (svc, "PlayCard", pb.PlayCardRequest(
             request_id=_rid(a), match=a.match, seat=a.seat, card=a.card,
             capture=a.capture, leave_on_table=a.leave)), mutating=True,
         setup=_on_match(play_setup))

    def forfeit_setup(p: argparse.ArgumentParser) -> None:
        _seat_arg(p)
        p.add_argument("--reason", choices=("abandoned", "turn_time"), default="abandoned")

    _add(group, "forfeit", "forfeit for a side: abandoned (a player, its own seat) or "
         "turn_time (the croupier or an opponent, once it has passed)",
         lambda a: (svc, "Forfeit", pb.ForfeitRequest(
             request_id=_rid(a), match=a.match, seat=a.seat, reason=a.reason)),
         mutating=True, setup=_on_match(forfeit_setup))


def _match_reads(group: Any) -> None:
    """The match's reads: get, list, moves, watch, hand."""
    from services.cli.client import INT32_MAX, PAGE_SIZE, _add, _name, whole

    svc = "cuarenta"
    _add(group, "get", "show a match", lambda a: (svc, "GetMatch", pb.GetMatchRequest(
        name=a.match)), setup=_on_match())

    def list_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("table")
        p.add_argument("--page-size", type=PAGE_SIZE, default=0, help="default 50")
        p.add_argument("--page-token", default="")

    _add(group, "list", "a table's matches in the order they opened (one page)",
         lambda a: (svc, "ListMatches", pb.ListMatchesRequest(
             parent=_name("tables", a.table), page_size=a.page_size,
             page_token=a.page_token)), setup=list_setup)

    def after_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument("--after", type=whole(0, INT32_MAX), default=0,
                       help="moves after this number (0: from the start)")

    _add(group, "moves", "the match move by move", lambda a: (svc, "ListMoves",
         pb.ListMovesRequest(match=a.match, after=a.after)), setup=_on_match(after_arg))
    _add(group, "watch", "the match's moves as they happen, until it is over",
         lambda a: (svc, "WatchMatch", pb.WatchMatchRequest(match=a.match, after=a.after)),
         setup=_on_match(after_arg))
    _add(group, "hand", "the seat's own cards and its legal plays (player, its own seat)",
         lambda a: (svc, "GetHand", pb.GetHandRequest(match=a.match, seat=a.seat)),
         setup=_on_match(_seat_arg))


def register(sub: Any) -> None:
    """``sabot demo --game cuarenta``, ``sabot match …`` and ``--match`` on ``sabot store
    replay`` (until the replays have their registry)."""
    from services.cli.server import add_demo

    add_demo(GAME, demo_play)
    register_matches(sub)
    try:
        replay = sub.find("store replay")
    except KeyError:
        return
    groups = replay._mutually_exclusive_groups
    if groups and not any("--match" in a.option_strings for a in replay._actions):
        groups[0].add_argument("--match", help="a Cuarenta match's id")
        _wrap(replay, cmd_replay)
