"""The Table aggregate: its recorded ruleset, its open shoe and its coups."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventsourcing.domain import Aggregate

from domain.rules import HouseRules


class Table(Aggregate):
    TOPIC = "sabot.ledger:Table"

    if TYPE_CHECKING:
        table_id: str
        preset: str
        options: dict[str, str]
        shoe_id: str | None
        coup_ids: list[str]
        shoes: int

    class Event(Aggregate.Event):
        TOPIC = "sabot.ledger:Table.Event"

    class Opened(Aggregate.Created):
        """The table opened under its full ruleset (``HouseRules.options()``)."""

        TOPIC = "sabot.ledger:Table.Opened"
        class_version = 1
        table_id: str
        preset: str
        options: dict[str, str]

        def apply(self, agg: Table) -> None:
            agg.table_id = self.table_id
            agg.preset = self.preset
            agg.options = dict(self.options)
            agg.shoe_id = None
            agg.coup_ids = []
            agg.shoes = 0

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

    @property
    def rules(self) -> HouseRules:
        return HouseRules.from_options(self.options)

    @property
    def last_coup_id(self) -> str | None:
        return self.coup_ids[-1] if self.coup_ids else None
