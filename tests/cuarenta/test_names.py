"""Who reads the players' names of a Cuarenta match, on the bytes (both stores and the ledger
process): the players seated at it (opponents, partners: they play face to face) and the house
read every seat's name; a player not seated at it reads no other player's name (the seats and
the money's accounts ""; the house's accounts as they are), as a player reads a Treinta y Una
round or a Trente et Quarante table."""

from __future__ import annotations

from api.support import Api

from services.api.client import new_request_id
from services.api.gen.sabot.cuarenta.v1 import cuarenta_pb2 as pb

from .test_api import cuarenta_table, game, one_step, open_match

HOUSE = ("croupier", "back_office", "regulator")


def _reads(api: Api, who: str, m: pb.Match) -> tuple[pb.Match, list[pb.Move], list[pb.Move]]:
    """GetMatch, ListMoves and WatchMatch (of a match over: every move, then the end)."""
    got = game(api, who).GetMatch(pb.GetMatchRequest(name=m.name))
    listed = list(game(api, who).ListMoves(pb.ListMovesRequest(match=m.name)).moves)
    watched = [mv for r in game(api, who).WatchMatch(pb.WatchMatchRequest(match=m.name))
               for mv in r.moves]
    return got, listed, watched


def test_a_player_not_at_the_match_reads_no_name_the_seated_read_all(api: Api) -> None:
    table_id = cuarenta_table(api)
    seated, outsider = ("anne", "bruno"), "chiara"
    m = open_match(api, table_id, seated, 100).match
    for _ in range(3):
        m = one_step(api, m).match
    m = game(api, "croupier").Forfeit(pb.ForfeitRequest(
        request_id=new_request_id(), match=m.name, seat=0, reason="abandoned")).match
    assert m.phase == "over"
    full, moves, _ = _reads(api, "back_office", m)
    assert list(full.seats) == [f"accounts/{p}" for p in seated]
    paid = [(mv.debit_account, mv.credit_account) for mv in moves if mv.kind == "money"]
    named = {a for pair in paid for a in pair if ":" not in a}
    assert named == set(seated)  # the stakes from each player, the winner's payout
    for who in (*HOUSE, *seated):  # every name
        assert _reads(api, who, m) == (full, moves, moves), who
    got, listed, watched = _reads(api, outsider, m)
    assert listed == watched
    seen = got.SerializeToString() + b"".join(mv.SerializeToString() for mv in listed)
    assert not [p for p in seated if p.encode() in seen]
    assert list(got.seats) == ["", ""]
    assert [(mv.debit_account, mv.credit_account) for mv in listed if mv.kind == "money"] == [
        tuple("" if ":" not in a else a for a in pair) for pair in paid]
    assert any(":" in a for pair in paid for a in pair)  # the house's accounts kept
    # the rest as the house reads it: cards, points, amounts are public
    assert (got.points, got.table_cards, got.winner) == (full.points, full.table_cards,
                                                         full.winner)
    assert [(mv.kind, mv.card, mv.amount, mv.seat) for mv in listed] == [
        (mv.kind, mv.card, mv.amount, mv.seat) for mv in moves]
