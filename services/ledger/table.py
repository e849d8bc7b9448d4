"""The Table aggregate: the game it plays, its recorded ruleset, its open shoe, its rounds (coups),
and its close."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eventsourcing.domain import Aggregate


class Table(Aggregate):
    TOPIC = "sabot.ledger:Table"

    if TYPE_CHECKING:
        table_id: str
        game: str
        preset: str
        options: dict[str, str]
        shoe_id: str | None
        coup_ids: list[str]
        shoes: int
        closed: bool

    class Event(Aggregate.Event):
        TOPIC = "sabot.ledger:Table.Event"

    class Opened(Aggregate.Created):
        """The table opened to play ``game`` (a name of ``services.games``) under its full
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
            state["game"] = "trente-et-quarante"

        def apply(self, agg: Table) -> None:
            agg.table_id = self.table_id
            agg.game = self.game
            agg.preset = self.preset
            agg.options = dict(self.options)
            agg.shoe_id = None
            agg.coup_ids = []
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

    class CoupStarted(Event):
        TOPIC = "sabot.ledger:Table.CoupStarted"
        class_version = 1
        coup_id: str

        def apply(self, agg: Table) -> None:
            agg.coup_ids.append(self.coup_id)

    class Closed(Event):
        """The table closed for good (no shoe open): the stakes left on its layout were settled
        on its latest coup ``coup_id`` (None: it had none), free stakes returned and prisoners
        per ``prisoners_at_close`` (recorded here as applied); it opens no more shoes."""

        TOPIC = "sabot.ledger:Table.Closed"
        class_version = 1
        coup_id: str | None
        prisoners_at_close: str
        stakes: int  # how many stakes the close settled

        def apply(self, agg: Table) -> None:
            agg.closed = True

    @property
    def last_coup_id(self) -> str | None:
        return self.coup_ids[-1] if self.coup_ids else None
