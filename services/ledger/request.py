"""The Request aggregate: a command's request id, its arguments (and their digest), its answer.

Its id is derived from the request id and it is saved in the command's transaction, so a
duplicate collides atomically and a retry finds the first answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eventsourcing.domain import Aggregate

from services.ledger.actor import UNRECORDED


class Request(Aggregate):
    TOPIC = "sabot.ledger:Request"

    if TYPE_CHECKING:
        request_id: str
        command: str
        digest: str
        arguments: dict[str, Any]
        result: dict[str, Any]
        actor: dict[str, Any]
        effects: list[list[Any]]

    class Event(Aggregate.Event):
        TOPIC = "sabot.ledger:Request.Event"

    class Recorded(Aggregate.Created):
        TOPIC = "sabot.ledger:Request.Recorded"
        class_version = 2
        request_id: str
        command: str
        digest: str
        arguments: dict[str, Any]
        result: dict[str, Any]
        # version 2: who ran the command (``services.ledger.actor.Actor.to_dict``), and the
        # events it caused besides this one: ``[originator_id, originator_version]`` pairs
        actor: dict[str, Any]
        effects: list[list[Any]]

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """A version 1 request recorded neither its actor nor its effects."""
            state["actor"] = UNRECORDED.to_dict()
            state["effects"] = []

        def apply(self, agg: Request) -> None:
            agg.request_id = self.request_id
            agg.command = self.command
            agg.digest = self.digest
            agg.arguments = dict(self.arguments)
            agg.result = dict(self.result)
            agg.actor = dict(self.actor)
            agg.effects = [list(e) for e in self.effects]
