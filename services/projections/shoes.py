"""Shoe state: per shoe the cards dealt and left by value and colour, the position, the distance
to the cut card, the coups played, and the commitment and seed status.

Seed status: ``sealed`` until the shoe closes; then ``verified`` when SHA-256 of the revealed seed
matches the published commitment (SABOT-SHUFFLE-1), else ``mismatch``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

from domain.cards import DeckKind, canonical_shoe, card_from_code
from domain.errors import RuleViolation
from domain.shuffle import commitment
from services import topics as T
from services.projections.store import Tx
from services.projections.view import Envelope, Table, View

SHOE = Table(
    "rm_shoe",
    (
        ("shoe_id", "TEXT"),
        ("table_id", "TEXT"),
        ("algorithm", "TEXT"),
        ("deck_kind", "TEXT"),
        ("decks", "BIGINT"),
        ("size", "BIGINT"),
        ("commitment", "TEXT"),
        ("cut_position", "BIGINT"),
        ("cut_by", "TEXT"),
        ("position", "BIGINT"),
        ("cut_card_at", "BIGINT"),
        ("to_cut_card", "BIGINT"),
        ("cards_dealt", "BIGINT"),
        ("coups", "BIGINT"),
        ("cut_card_reached", "BIGINT"),
        ("status", "TEXT"),
        ("seed_status", "TEXT"),
        ("seed", "TEXT"),
        ("order_digest", "TEXT"),
        ("opened_at", "TEXT"),
        ("closed_at", "TEXT"),
    ),
    ("shoe_id",),
    indexes=(("table_id",),),
)
SHOE_CARDS = Table(
    "rm_shoe_cards",
    (
        ("shoe_id", "TEXT"),
        ("value", "BIGINT"),
        ("colour", "TEXT"),
        ("total", "BIGINT"),
        ("dealt", "BIGINT"),
        ("remaining", "BIGINT"),
    ),
    ("shoe_id", "value", "colour"),
)
SHOE_COUP = Table("rm_shoe_coup", (("coup_id", "TEXT"), ("shoe_id", "TEXT")), ("coup_id",))

_COLS = SHOE.column_names
_I = {name: i for i, name in enumerate(_COLS)}


class ShoeStateView(View):
    name = "shoes"
    tables = (SHOE, SHOE_CARDS, SHOE_COUP)
    topics = frozenset(
        {T.SHOE_SHUFFLED, T.SHOE_CUT, T.SHOE_COUP_DEALT, T.SHOE_CLOSED, T.COUP_OPENED,
         T.COUP_CARD_DEALT}
    )

    def __init__(self, cards_behind_cut: int = 0) -> None:
        """``cards_behind_cut``: the cut card lies before the last so many cards of a shoe (the
        game's rule book: ``ReadGame.cards_behind_cut``)."""
        self.cards_behind_cut = cards_behind_cut

    def apply(self, tx: Tx, batch: Sequence[Envelope]) -> None:
        shoes = _ShoeBatch(tx, batch, self.cards_behind_cut)
        handlers = shoes.handlers
        for e in batch:
            handler = handlers.get(e.topic)
            if handler is not None:
                handler(e)
        shoes.write()
        handlers.clear()  # bound methods: a cycle; its rows are freed now, not by the collector


class _ShoeBatch:
    """One batch's shoes, cards and coups (read once, then kept), the facts of its events
    applied to them one handler per event kind, then written back."""

    def __init__(self, tx: Tx, batch: Sequence[Envelope], cards_behind_cut: int) -> None:
        self.tx = tx
        self.cards_behind_cut = cards_behind_cut
        self.coup_shoe: dict[str, str] = {
            str(r[0]): str(r[1])
            for r in tx.query_in("SELECT coup_id, shoe_id FROM {s}rm_shoe_coup WHERE coup_id",
                                 {e.oid for e in batch if e.topic == T.COUP_CARD_DEALT})
        }
        known = {e.oid for e in batch if e.topic in T.SHOE_EVENTS}
        known |= set(self.coup_shoe.values())
        self.shoes: dict[str, list[Any]] = {
            r[0]: list(r)
            for r in tx.query_in(f"SELECT {', '.join(_COLS)} FROM {{s}}rm_shoe WHERE shoe_id",
                                 known)
        }
        self.cards: dict[tuple[str, int, str], list[Any]] = {
            (r[0], int(r[1]), r[2]): list(r)
            for r in tx.query_in(
                "SELECT shoe_id, value, colour, total, dealt, remaining FROM {s}rm_shoe_cards "
                "WHERE shoe_id",
                set(self.coup_shoe.values()),
            )
        }
        self.new_coups: list[tuple[str, str]] = []
        self.handlers: dict[str, Callable[[Envelope], None]] = {
            T.SHOE_SHUFFLED: self.shuffled,
            T.SHOE_CUT: self.cut,
            T.SHOE_COUP_DEALT: self.coup_dealt,
            T.SHOE_CLOSED: self.closed,
            T.COUP_OPENED: self.coup_opened,
            T.COUP_CARD_DEALT: self.card_dealt,
        }

    def shoe(self, shoe_id: str) -> list[Any]:
        row = self.shoes.get(shoe_id)
        if row is None:
            found = self.tx.one(f"SELECT {', '.join(_COLS)} FROM {{s}}rm_shoe WHERE shoe_id = ?",
                                (shoe_id,))
            if found is None:
                raise LookupError(f"unknown shoe {shoe_id}")
            row = self.shoes[shoe_id] = list(found)
        return row

    def shoe_of(self, coup_id: str) -> str:
        sid = self.coup_shoe.get(coup_id)
        if sid is None:
            found = self.tx.one("SELECT shoe_id FROM {s}rm_shoe_coup WHERE coup_id = ?",
                                (coup_id,))
            if found is None:
                raise LookupError(f"unknown coup {coup_id}")
            sid = self.coup_shoe[coup_id] = str(found[0])
        return sid

    def shuffled(self, e: Envelope) -> None:
        """A new shoe: its row, and every card of its canonical order by value and colour."""
        ev, oid = e.event, e.oid
        size = int(ev.size)
        cut_at = size - self.cards_behind_cut
        self.shoes[oid] = [
            oid, ev.table_id, ev.algorithm, ev.deck_kind, int(ev.decks), size,
            ev.commitment, None, None, 0, cut_at, cut_at, 0, 0, 0, "shuffled", "sealed",
            None, None, e.at, None,
        ]
        kind = DeckKind(ev.deck_kind)
        counts = Counter((c.value, c.colour.value) for c in canonical_shoe(kind, ev.decks))
        for (value, colour), n in counts.items():
            self.cards[(oid, value, colour)] = [oid, value, colour, n, 0, n]

    def cut(self, e: Envelope) -> None:
        row = self.shoe(e.oid)
        row[_I["cut_position"]] = int(e.event.position)
        row[_I["cut_by"]] = e.event.cut_by
        row[_I["status"]] = "cut"

    def coup_dealt(self, e: Envelope) -> None:
        """A coup's cards taken from the shoe: its position, the distance to the cut card."""
        ev = e.event
        row = self.shoe(e.oid)
        row[_I["position"]] = int(ev.next_position)
        row[_I["to_cut_card"]] = row[_I["cut_card_at"]] - int(ev.next_position)
        row[_I["coups"]] = int(row[_I["coups"]]) + 1
        if ev.cut_card_reached:
            row[_I["cut_card_reached"]] = 1
        row[_I["status"]] = "dealing"

    def closed(self, e: Envelope) -> None:
        """The shoe closed: its seed revealed and checked against the commitment."""
        ev, oid = e.event, e.oid
        row = self.shoe(oid)
        row[_I["status"]] = "closed"
        row[_I["seed"]] = ev.seed
        row[_I["order_digest"]] = ev.order_digest
        row[_I["closed_at"]] = e.at
        row[_I["seed_status"]] = _seed_status(ev.seed, oid, row[_I["commitment"]])

    def coup_opened(self, e: Envelope) -> None:
        self.coup_shoe[e.oid] = e.event.shoe_id
        self.new_coups.append((e.oid, e.event.shoe_id))

    def card_dealt(self, e: Envelope) -> None:
        """A card of a coup: one more dealt and one fewer left of its value and colour."""
        ev = e.event
        sid = self.shoe_of(e.oid)
        row = self.shoe(sid)
        card = card_from_code(ev.code, DeckKind(row[_I["deck_kind"]]))
        key = (sid, card.value, card.colour.value)
        crow = self.cards.get(key)
        if crow is None:
            found = self.tx.one(
                "SELECT shoe_id, value, colour, total, dealt, remaining FROM "
                "{s}rm_shoe_cards WHERE shoe_id = ? AND value = ? AND colour = ?", key
            )
            if found is None:
                raise LookupError(f"card {ev.code} not in shoe {sid}")
            crow = self.cards[key] = list(found)
        crow[4] = int(crow[4]) + 1
        crow[5] = int(crow[5]) - 1
        row[_I["cards_dealt"]] = int(row[_I["cards_dealt"]]) + 1

    def write(self) -> None:
        tx = self.tx
        tx.executemany(
            f"INSERT INTO {{s}}rm_shoe ({', '.join(_COLS)}) VALUES ({', '.join('?' * len(_COLS))}) "
            "ON CONFLICT (shoe_id) DO UPDATE SET "
            + ", ".join(f"{c} = excluded.{c}" for c in _COLS[1:]),
            list(self.shoes.values()),
        )
        tx.executemany(
            "INSERT INTO {s}rm_shoe_cards (shoe_id, value, colour, total, dealt, remaining) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (shoe_id, value, colour) DO UPDATE SET "
            "dealt = excluded.dealt, remaining = excluded.remaining",
            list(self.cards.values()),
        )
        tx.executemany(
            "INSERT INTO {s}rm_shoe_coup (coup_id, shoe_id) VALUES (?, ?)", self.new_coups
        )


def _seed_status(seed_hex: str, shoe_id: str, published: str) -> str:
    try:
        ok = commitment(bytes.fromhex(seed_hex), UUID(shoe_id)) == published
    except (ValueError, TypeError, RuleViolation):  # not hex, not a UUID, wrong length
        return "mismatch"
    return "verified" if ok else "mismatch"
