"""After played shoes, every read model equals what the domain engine alone computes."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any
from uuid import UUID

from services.bootstrap import READ_GAMES
from services.projections import default_views, gamingday
from services.projections.projector import Projector
from services.projections.recall import recall
from services.projections.reports import prison_outstanding
from services.projections.store import ReadStore

from .game import Game


def _projector(game: Game) -> Projector:
    # The default gaming day, given explicitly: other tests build these views on the same
    # store under other settings, and a projector given none adopts the stored one.
    return Projector(game.ledger.app, default_views(gamingday.DEFAULT, games=READ_GAMES))


def test_bankrolls_equal_the_domain(game: Game) -> None:
    p = _projector(game)
    p.catch_up(batch_size=500)
    store: ReadStore = p.store
    with store.read() as tx:
        balances = {
            r[0]: int(r[1]) for r in tx.query("SELECT account_id, balance FROM {s}rm_account")
        }
        lines: dict[str, list[tuple[int, str]]] = {}
        for r in tx.query("SELECT account_id, seq, amount, kind FROM {s}rm_statement"):
            lines.setdefault(r[0], []).append((int(r[1]), int(r[2]), r[3]))  # type: ignore[arg-type]
    assert balances == dict(game.exp.balances)
    assert sum(balances.values()) == 0
    for account, expected in game.exp.statements.items():
        got = [(a, k) for _, a, k in sorted(lines[account])]  # type: ignore[misc]
        assert got == expected, account
    assert balances == game.ledger.balances()


def test_shoe_state_equals_the_domain(game: Game) -> None:
    p = _projector(game)
    p.catch_up()
    with p.store.read() as tx:
        shoes = {
            r[0]: r[1:]
            for r in tx.query(
                "SELECT shoe_id, table_id, size, position, coups, cut_card_reached, to_cut_card, "
                "status, seed_status, cut_position, cards_dealt FROM {s}rm_shoe"
            )
        }
        cards = tx.query("SELECT shoe_id, value, colour, total, dealt, remaining FROM "
                         "{s}rm_shoe_cards")
    assert set(shoes) == set(game.exp.shoes)
    for shoe_id, e in game.exp.shoes.items():
        got = shoes[shoe_id]
        assert got == (
            e["table_id"], e["size"], e["position"], e["coups"], int(e["cut_card_reached"]),
            e["to_cut_card"], "closed", "verified", e["cut_position"],
            sum(game.exp.shoe_cards[shoe_id].values()),
        )
    for shoe_id, value, colour, total, dealt, remaining in cards:
        assert dealt == game.exp.shoe_cards[shoe_id][(value, colour)]
        assert remaining == total - dealt
    per_shoe = Counter(r[0] for r in cards)
    assert all(n in (10, 20) for n in per_shoe.values())


def test_recall_equals_the_domain(game: Game) -> None:
    p = _projector(game)
    p.catch_up()
    coups = recall(p.store, limit=10_000)
    assert {c.coup_id for c in coups} == set(game.exp.coups)
    for c in coups:
        e = game.exp.coups[c.coup_id]
        assert (c.table_id, c.shoe_id, c.result, c.noir_total, c.rouge_total, c.announcement) == (
            e["table_id"], e["shoe_id"], e["result"], e["noir_total"], e["rouge_total"],
            e["announcement"],
        )
        assert [s.detail["code"] for s in c.steps if s.kind == "Coup.CardDealt"] == e["cards"]
        assert [s.step for s in c.steps] == list(range(1, len(c.steps) + 1))
        settled = [s for s in c.steps if s.kind == "Coup.MoneyMoved"]
        assert [(s.detail["kind"], s.stake_id, s.amount) for s in settled][
            : len(e["movements"])
        ] == e["movements"]
    # Queries by table, shoe, player and time range.
    fr = recall(p.store, table_id="t-fr", limit=10_000)
    assert {c.coup_id for c in fr} == {
        k for k, v in game.exp.coups.items() if v["table_id"] == "t-fr"
    }
    one = next(iter(game.exp.coups))
    assert [c.coup_id for c in recall(p.store, coup_id=one)] == [one]
    ana = recall(p.store, player="ana", limit=10_000)
    assert ana and all(any(s.account_id == "ana" for s in c.steps) for c in ana)
    first = min(c.opened_at for c in coups)
    window = recall(p.store, since=first, until=first[:11] + "23:59:59+00:00", limit=10_000)
    assert window and all(first <= c.opened_at for c in window)
    last10 = recall(p.store, table_id="t-fr", limit=10)
    assert [c.number for c in last10] == sorted((c.number for c in fr), reverse=True)[:10]


def test_reconciliation_equals_the_domain(game: Game) -> None:
    p = _projector(game)
    p.catch_up(batch_size=333)
    with p.store.read() as tx:
        rows = tx.query("SELECT table_id, gaming_day, shift, metric, chance, amount "
                        "FROM {s}rm_recon WHERE metric <> 'prison_outstanding'")
    got = {tuple(r[:5]): int(r[5]) for r in rows if int(r[5]) != 0}
    expected = {k: v for k, v in game.exp.recon.items() if v != 0}
    assert got == expected
    days = {k[1] for k in expected}
    assert len(days) >= 2  # the clock crossed a gaming day
    assert {k[3] for k in expected} >= {"partage", "prison_loss", "premiums", "cash_in",
                                         "cash_out", "void_coups", "handle"}
    for (table, day, shift), amount in game.exp.prison.items():
        assert prison_outstanding(p.store, table, day, shift) == amount, (table, day, shift)


def test_rebuild_digests_are_identical(game: Game) -> None:
    p = _projector(game)
    p.catch_up(batch_size=250)
    before = p.digests()
    p.rebuild(batch_size=1000)
    assert p.digests() == before
    assert [lag.events_behind for lag in p.lag()] == [0] * len(before)


def test_fast_decoder_reads_what_the_mapper_reads(game: Game) -> None:
    """The projections' JSON reader gives every field the application's mapper gives."""
    from services.projections.decode import decoder

    app = game.ledger.app
    decode = decoder(app)

    def plain(value: object) -> object:
        if value is None or isinstance(value, (bool, int, datetime)):
            return value
        if isinstance(value, (str, UUID)):
            return str(value)  # a StrEnum as its text
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if hasattr(value, "__dict__") or hasattr(value, "__slots__"):
            names = getattr(value, "__slots__", None) or vars(value)
            return {k: plain(getattr(value, k)) for k in names}
        raise AssertionError(f"unexpected {type(value)}")

    seen = set()
    for n in app.recorder.select_notifications(1, 5000):
        fast = decode(n)
        slow: Any = app.mapper.to_domain_event(n)
        assert fast.position == n.id and fast.oid == str(n.originator_id)
        assert fast.time == slow.timestamp and fast.at == slow.timestamp.isoformat()
        assert plain(vars(fast.event)) == plain(vars(slow)), n.topic
        seen.add(n.topic)
    assert len(seen) > 20


def test_row_reader_reads_what_the_recorder_reads(game: Game) -> None:
    """The rebuild's plain-row reader gives the recorder's notifications, the originator id as
    its text, and decoding a row equals decoding the notification."""
    from services.projections.decode import decoders
    from services.projections.projector import _row_reader

    app = game.ledger.app
    select = _row_reader(app)
    assert select is not None
    decode, decode_row = decoders(app)
    assert decode_row is not None
    notifications = app.recorder.select_notifications(1, 100_000)
    rows = select(0, 100_000)
    assert [(n.id, str(n.originator_id), n.originator_version, n.topic, bytes(n.state))
            for n in notifications] == [(*r[:4], bytes(r[4])) for r in rows]
    # the types the decoders take (PostgreSQL's binary format gives them too)
    assert all(type(r[0]) is int and type(r[1]) is str and type(r[2]) is int
               and type(r[3]) is str and type(r[4]) is bytes for r in rows)
    middle = notifications[len(notifications) // 2].id
    assert [r[0] for r in select(middle, 5)] == list(range(middle + 1, middle + 6))
    for n, r in zip(notifications, rows, strict=True):
        a, b = decode(n), decode_row(r)
        assert a[:2] == b[:2] and a.time == b.time and a.at == b.at and a.oid == b.oid
        assert repr(vars(a.event)) == repr(vars(b.event))  # nested values: StoredEvent
