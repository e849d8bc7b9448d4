"""The Shoe aggregate: the commitment and sealed seed, the cut, the dealing position, the reveal."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eventsourcing.domain import Aggregate


class Shoe(Aggregate):
    TOPIC = "sabot.ledger:Shoe"

    if TYPE_CHECKING:
        table_id: str
        algorithm: str
        deck_kind: str
        decks: int
        size: int
        commitment: str
        sealed_seed: str
        escrowed_seed: str
        cut_position: int | None
        cut_by: str | None
        position: int
        coups: int
        cut_card_reached: bool
        closed: bool
        seed: str | None
        order_digest: str | None

    class Event(Aggregate.Event):
        TOPIC = "sabot.ledger:Shoe.Event"

    class Shuffled(Aggregate.Created):
        """The shoe shuffled: the commitment is public, the seed sealed (AES-GCM, AAD = id) and,
        from version 2, escrowed to the regulator (SABOT-ESCROW-1 hex; "" when no regulator
        key is configured, or the event is a version 1)."""

        TOPIC = "sabot.ledger:Shoe.Shuffled"
        class_version = 2
        table_id: str
        algorithm: str
        deck_kind: str
        decks: int
        size: int
        commitment: str
        sealed_seed: str
        escrowed_seed: str

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """A version 1 event had no escrow."""
            state["escrowed_seed"] = ""

        def apply(self, agg: Shoe) -> None:
            agg.table_id = self.table_id
            agg.algorithm = self.algorithm
            agg.deck_kind = self.deck_kind
            agg.decks = self.decks
            agg.size = self.size
            agg.commitment = self.commitment
            agg.sealed_seed = self.sealed_seed
            agg.escrowed_seed = self.escrowed_seed
            agg.cut_position = None
            agg.cut_by = None
            agg.position = 0
            agg.coups = 0
            agg.cut_card_reached = False
            agg.closed = False
            agg.seed = None
            agg.order_digest = None

    class Cut(Event):
        TOPIC = "sabot.ledger:Shoe.Cut"
        class_version = 1
        position: int
        cut_by: str

        def apply(self, agg: Shoe) -> None:
            agg.cut_position = self.position
            agg.cut_by = self.cut_by

    class CoupDealt(Event):
        TOPIC = "sabot.ledger:Shoe.CoupDealt"
        class_version = 1
        coup_id: str
        next_position: int
        cut_card_reached: bool

        def apply(self, agg: Shoe) -> None:
            agg.position = self.next_position
            agg.coups += 1
            agg.cut_card_reached = agg.cut_card_reached or self.cut_card_reached

    class Closed(Event):
        """The shoe closed: the seed in clear, so anyone can check the commitment and replay."""

        TOPIC = "sabot.ledger:Shoe.Closed"
        class_version = 1
        seed: str
        order_digest: str | None

        def apply(self, agg: Shoe) -> None:
            agg.closed = True
            agg.seed = self.seed
            agg.order_digest = self.order_digest
