"""The Table aggregate: the game it plays, its recorded ruleset, its open shoe, and its close;
game-neutral.

A table's rounds are its game's: each game records a round it opens at the table with an event
of the table declared in the game's package (a ``Table.Event`` under a ``sabot.ledger:Table.…``
topic, registered with ``eventsourcing.utils.register_topic``), whose ``apply`` keeps the round
ids with ``round_started(key, round_id)``; ``rounds(key)`` reads them back.

- Trente et Quarante's is ``CoupStarted`` (``sabot.ledger:Table.CoupStarted``, key
  ``coup_ids``, in ``services/trente_et_quarante/coup.py``). ``Table`` itself declared it
  before issue 13 moved it: its topic, its one field ``coup_id`` and every stored event are
  unchanged.
- Treinta y Una's is ``RoundStarted`` (``sabot.ledger:Table.RoundStarted``, key ``round_ids``,
  in ``services/treinta_y_una/round.py``): its topic, its one field ``round_id`` and every
  stored event are unchanged.
- Cuarenta records none: its matches are not the table's (each ``CuarentaMatch.Opened`` names
  its table; the game's read model lists them).

What a table view shows of its rounds (the latest, how many) is its game's (``table_rounds``,
in ``services.ledger.api``; ``latest_round(key)`` reads it); a table of a game that records
none shows none.

A table keeps only its latest ``ROUNDS_KEPT`` round ids per key, with how many rounds opened
(``round_count``): a table plays for years, and a list of every round it ever opened would grow
without end in every process that holds it (the writer's cache). A listing of all its rounds
reads the table's stored events (``services.ledger.core.Core.all_rounds``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eventsourcing.domain import Aggregate

# The game of a table whose ``Table.Opened`` recorded none (stored before version 3: Trente et
# Quarante, the only game then). Part of the stored format, as a topic is: a table opened to
# play it stores no ``game`` in its command's arguments, and its view's answer no ``game``.
UNRECORDED_GAME = "trente-et-quarante"
# a table's latest round ids kept on it, per game key (~90 bytes each: a UUID's text and its
# slot, so ~12 KB a table): more than the last 100 coups a recall lists (``last_coups``), the
# last round a command reads; the older ones are in the table's stored events
ROUNDS_KEPT = 128


class Table(Aggregate):
    TOPIC = "sabot.ledger:Table"

    if TYPE_CHECKING:
        table_id: str
        game: str
        preset: str
        options: dict[str, str]
        shoe_id: str | None
        shoes: int
        closed: bool

    class Event(Aggregate.Event):
        TOPIC = "sabot.ledger:Table.Event"

    class Opened(Aggregate.Created):
        """The table opened to play ``game`` (a game's name, ``LedgerGame.name``) under its full
        ruleset (its rule book's ``OptionTable.text``). Version 2: the options include
        ``prisoners_at_close``; version 3: ``game`` (an older event reads
        ``trente-et-quarante``, the only game before)."""

        TOPIC = "sabot.ledger:Table.Opened"
        class_version = 3
        table_id: str
        preset: str
        options: dict[str, str]
        game: str

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """A table opened before the option ``prisoners_at_close`` reads its default (the
            same under every preset), so its recorded options stay complete."""
            state["options"] = {"prisoners_at_close": "half_returned", **state["options"]}

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            """A table opened before games were recorded plays Trente et Quarante."""
            state["game"] = UNRECORDED_GAME

        def apply(self, agg: Table) -> None:
            agg.table_id = self.table_id
            agg.game = self.game
            agg.preset = self.preset
            agg.options = dict(self.options)
            agg.shoe_id = None
            agg.shoes = 0
            agg.closed = False

    class ShoeStarted(Event):
        TOPIC = "sabot.ledger:Table.ShoeStarted"
        class_version = 1
        shoe_id: str

        def apply(self, agg: Table) -> None:
            agg.shoe_id = self.shoe_id
            agg.shoes += 1

    class ShoeEnded(Event):
        TOPIC = "sabot.ledger:Table.ShoeEnded"
        class_version = 1
        shoe_id: str

        def apply(self, agg: Table) -> None:
            agg.shoe_id = None

    class Closed(Event):
        """The table closed for good (no shoe open); it opens no more shoes. What its game
        settled at the close was recorded on its latest round ``coup_id`` (None: none; the name
        is Trente et Quarante's, the only game when the event was first stored): there, the
        stakes left on the layout, free stakes returned and prisoners per
        ``prisoners_at_close`` (recorded here as applied), ``stakes`` of them."""

        TOPIC = "sabot.ledger:Table.Closed"
        class_version = 1
        coup_id: str | None
        prisoners_at_close: str
        stakes: int  # how many stakes the close settled

        def apply(self, agg: Table) -> None:
            agg.closed = True

    def round_started(self, key: str, round_id: str) -> None:
        """A game's round opened at the table (its round event's ``apply``): ``round_id`` is
        added to the ids kept under ``key``, the game's own (the oldest forgotten past
        ``ROUNDS_KEPT``), and counted."""
        kept = self.__dict__.setdefault(key, [])
        kept.append(round_id)
        if len(kept) > ROUNDS_KEPT:
            del kept[0]
        counts: dict[str, int] = self.__dict__.setdefault("round_counts", {})
        counts[key] = counts.get(key, 0) + 1

    def rounds(self, key: str) -> list[str]:
        """The ids of the latest rounds kept under ``key`` (at most ``ROUNDS_KEPT``; every
        one when ``round_count(key)`` is no more), in the order they opened (not to be
        changed; empty when none)."""
        found: list[str] = self.__dict__.get(key, [])
        return found

    def round_count(self, key: str) -> int:
        """How many rounds opened under ``key``."""
        counts: dict[str, int] = self.__dict__.get("round_counts", {})
        return counts.get(key, 0)

    def latest_round(self, key: str) -> tuple[str | None, int]:
        """What a table view shows of the rounds kept under ``key`` (a game's ``table_rounds``):
        the latest (None: none) and how many."""
        found = self.rounds(key)
        return (found[-1] if found else None), self.round_count(key)
