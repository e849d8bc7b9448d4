"""The Request aggregate: a command's request id, its arguments, its answer, its actor and the
events it caused.

Its id is derived from the request id and it is saved in the command's transaction, so a
duplicate collides atomically and a retry finds the first answer.

Version 3 stores no digest of the arguments: the arguments are stored beside it, so the digest
(:func:`digest_of`, as versions 1 and 2 stored it) is computed from them when a retry is
compared with the stored request (``Request.matches``), never per command. A version 2 event
reads as version 3 (its digest dropped: it was computed from the same arguments).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, ClassVar

from eventsourcing.domain import Aggregate

from services.ledger.actor import UNRECORDED


def digest_of(command: str, args: dict[str, Any]) -> str:
    """The digest of a command's name and arguments (JSON data), as version 2 stored it."""
    text = json.dumps({"command": command, "args": args}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Request(Aggregate):
    TOPIC = "sabot.ledger:Request"

    if TYPE_CHECKING:
        request_id: str
        command: str
        arguments: dict[str, Any]
        result: dict[str, Any]
        actor: dict[str, Any]
        effects: list[list[Any]]

    @property
    def digest(self) -> str:
        """The digest of its command and arguments (:func:`digest_of`)."""
        return digest_of(self.command, self.arguments)

    def matches(self, command: str, args: dict[str, Any]) -> bool:
        """Whether ``command`` with ``args`` is this request again (a retry): the same command
        and the same arguments, compared as their digests (JSON text: a list and a tuple, as
        stored, are the same)."""
        return command == self.command and digest_of(command, args) == self.digest

    class Event(Aggregate.Event):
        TOPIC = "sabot.ledger:Request.Event"

    class Recorded(Aggregate.Created):
        TOPIC = "sabot.ledger:Request.Recorded"
        class_version = 3
        request_id: str
        command: str
        arguments: dict[str, Any]
        result: dict[str, Any]
        # version 2: who ran the command (``services.ledger.actor.Actor.to_dict``), and the
        # events it caused besides this one: ``[originator_id, originator_version]`` pairs
        actor: dict[str, Any]
        effects: list[list[Any]]
        # version 3: no ``digest`` (``Request.digest`` computes it from the arguments)
        # the upcasters read and write JSON values only: a reader of the stored JSON (the read
        # models' fast decoder, ``services.projections.decode``) may apply them itself
        plain_upcasts: ClassVar[bool] = True

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """A version 1 request recorded neither its actor nor its effects."""
            state["actor"] = UNRECORDED.to_dict()
            state["effects"] = []

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            """Versions 1 and 2 stored the digest of the arguments stored beside it."""
            state.pop("digest", None)

        def apply(self, agg: Request) -> None:
            agg.request_id = self.request_id
            agg.command = self.command
            agg.arguments = dict(self.arguments)
            agg.result = dict(self.result)
            agg.actor = dict(self.actor)
            agg.effects = [list(e) for e in self.effects]
