"""The Request aggregate: a command's request id, its arguments (and their digest), its answer.

Its id is derived from the request id and it is saved in the command's transaction, so a
duplicate collides atomically and a retry finds the first answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eventsourcing.domain import Aggregate


class Request(Aggregate):
    TOPIC = "sabot.ledger:Request"

    if TYPE_CHECKING:
        request_id: str
        command: str
        digest: str
        arguments: dict[str, Any]
        result: dict[str, Any]

    class Event(Aggregate.Event):
        TOPIC = "sabot.ledger:Request.Event"

    class Recorded(Aggregate.Created):
        TOPIC = "sabot.ledger:Request.Recorded"
        class_version = 1
        request_id: str
        command: str
        digest: str
        arguments: dict[str, Any]
        result: dict[str, Any]

        def apply(self, agg: Request) -> None:
            agg.request_id = self.request_id
            agg.command = self.command
            agg.digest = self.digest
            agg.arguments = dict(self.arguments)
            agg.result = dict(self.result)
