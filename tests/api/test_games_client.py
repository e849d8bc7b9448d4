"""Every game for every role from the Python client (issue 22 item 1): ``Client.rounds``
(Treinta y Una) and ``Client.matches`` (Cuarenta), each role with its own token, the request
ids the client makes (a retry with ``last_request_id`` answers the first answer), ListRounds
and ListMatches a page at a time, and the regulator's online replays (identical; refused to
anyone else), on both stores."""

from __future__ import annotations

import grpc
import pytest

from services.api.client import Client

from .support import Api, fresh


def _own(api: Api, account: str) -> Client:
    return api.as_(account)


def test_a_round_with_the_client(api: Api) -> None:
    croupier = api.as_("croupier")
    table = croupier.rounds.open_table(fresh("tyu-client")).name
    seats = ["anne", "bruno", "chiara"]
    r = croupier.rounds.open_round(table, seats, 20_000)
    first = croupier.last_request_id
    assert first and croupier.rounds.open_round(table, seats, 20_000,
                                                request_id=first).name == r.name  # a retry
    for p in seats:
        if p != r.banker:
            r = _own(api, p).rounds.place_stake(r.name, p, 1_000)
    with pytest.raises(grpc.RpcError) as refused:  # a player deals nothing
        _own(api, "anne").rounds.deal(r.name)
    assert refused.value.code() is grpc.StatusCode.PERMISSION_DENIED
    r = croupier.rounds.deal(r.name)
    while r.phase == "playing":
        who = r.whose_turn
        me = _own(api, who).rounds
        hand = me.my_hand(r.name, who)
        assert all(c.code for c in hand.cards)
        r = me.carta(r.name, who) if hand.total < 21 else me.me_planto(r.name, who)
    r = croupier.rounds.settle(r.name)
    assert r.phase == "settled"
    assert croupier.rounds.get(r.name).phase == "settled"
    assert croupier.rounds.latest(table).name == r.name
    second = croupier.rounds.open_round(table, seats, 20_000)
    page = _own(api, "dora").rounds.list(table, page_size=1)
    assert [x.name for x in page.rounds] == [r.name] and page.next_page_token
    rest = _own(api, "dora").rounds.list(table, page_size=1, page_token=page.next_page_token)
    assert [x.name for x in rest.rounds] == [second.name] and not rest.next_page_token
    assert all(s == "" for s in rest.rounds[0].seats)  # dora is not seated: names hidden
    assert len(croupier.rounds.recall(r.name).steps) > 5
    replay = api.as_("regulator").rounds.replay(r.name)
    assert replay.identical and replay.verdict.steps > 10 and replay.steps
    assert all(s.same for s in replay.steps)
    with pytest.raises(grpc.RpcError) as refused:
        croupier.rounds.replay(r.name)
    assert refused.value.code() is grpc.StatusCode.PERMISSION_DENIED
    croupier.rounds.cancel(second.name)


def test_a_match_with_the_client(api: Api) -> None:
    croupier = api.as_("croupier")
    table = croupier.matches.open_table(fresh("cu-client"),
                                        overrides={"commission_rate": "5%"}).name
    accounts = ["chiara", "dora"]
    m = croupier.matches.open(table, accounts, 1_000).match
    assert croupier.matches.open(table, accounts, 1_000, request_id=croupier.last_request_id
                                 ).match.name == m.name  # a retry: the first answer
    while m.phase != "over":
        if m.phase == "awaiting_deal":
            m = croupier.matches.deal(m.name).match
            continue
        me = _own(api, accounts[m.to_act % 2]).matches
        hand = me.hand(m.name, m.to_act)
        best = max(hand.legal, key=lambda p: (p.points, len(p.capture)))
        if not best.capture:
            best = min(hand.legal, key=lambda p: (len(p.capture) > 0, p.card))
        m = me.play(m.name, m.to_act, best.card, best.capture,
                    leave_on_table=not best.capture).match
    assert m.winner in (0, 1) and m.end_reason in ("points", "four_of_a_kind")
    moves = croupier.matches.moves(m.name)
    assert moves[0].kind == "opened" and moves[-1].kind == "money"
    assert [mv.number for mv in croupier.matches.watch(m.name, after=len(moves) - 2)] == [
        moves[-2].number, moves[-1].number]
    assert [x.name for x in _own(api, "anne").matches.list(table).matches] == [m.name]
    assert croupier.matches.get(m.name).phase == "over"
    assert api.as_("back_office").matches.reconciliation(table).balanced
    replay = api.as_("regulator").matches.replay(m.name, differences_only=True)
    assert replay.identical and replay.verdict.steps > 50 and not replay.steps
    with pytest.raises(grpc.RpcError) as unknown:
        api.as_("regulator").matches.replay(f"{table}/matches/00000000-0000-4000-8000-"
                                            "000000000009")
    assert unknown.value.code() is grpc.StatusCode.NOT_FOUND
