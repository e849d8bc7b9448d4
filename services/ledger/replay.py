"""Replay: re-run the commands stored with their request ids into another store.

Every successful command is stored with its arguments, its answer, its time and its actor (the
Request aggregate; the actor scopes the request id and decides ownership, so it is replayed
too). Fed back with the same inputs (the recorded times, the ids it generated, each shoe's
seed), the commands give the same events: a regulator's way to recreate play.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from services.ledger.actor import UNRECORDED, Actor
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.ledger.evidence import LINKED_TOPIC
from services.ledger.request import Request
from services.ledger.seal import unseal
from services.ledger.shoe import Shoe


@dataclass(frozen=True)
class StoredCommand:
    position: int
    request_id: str
    command: str
    args: dict[str, Any]
    result: dict[str, Any]
    timestamp: datetime
    actor: Actor  # who ran it (UNRECORDED for a request stored before actors were)


def stored_commands(ledger: Ledger, batch: int = 1000) -> Iterator[StoredCommand]:
    """The commands of the log, in the order they were saved."""
    position = 0
    while True:
        notes = ledger.app.recorder.select_notifications(
            position, batch, inclusive_of_start=False, topics=(Request.Recorded.TOPIC,)
        )
        if not notes:
            return
        for n in notes:
            state = ledger.app.mapper.transcoder.decode(n.state)
            yield StoredCommand(
                n.id, state["request_id"], state["command"], state["arguments"], state["result"],
                state["timestamp"], Actor.from_dict(state.get("actor") or UNRECORDED.to_dict()),
            )
        position = notes[-1].id


@dataclass
class _Inputs:
    now: datetime = datetime.min
    ids: list[UUID] = field(default_factory=list)
    seeds: list[bytes] = field(default_factory=list)

    def clock(self) -> datetime:
        return self.now

    def new_id(self) -> UUID:
        return self.ids.pop(0)

    def new_seed(self) -> bytes:
        return self.seeds.pop(0)


def _generated_ids(command: StoredCommand) -> list[UUID]:
    r, a = command.result, command.args
    if command.command == "open_shoe" and a.get("shoe_id") is None:
        return [UUID(r["shoe_id"])]
    if command.command == "open_coup" and a.get("coup_id") is None:
        return [UUID(r["coup_id"])]
    if command.command == "place_stake" and a.get("stake_id") is None and r.get("stake"):
        return [UUID(r["stake"]["stake_id"])]
    return []


def replay(source: Ledger, target_url: str, seal_key: bytes | None = None) -> Ledger:
    """A new ledger on ``target_url`` (an empty store) holding the source's commands re-run.
    The seeds come from the source's sealed seeds (so ``seal_key`` must open them)."""
    key = source.config.seal_key if seal_key is None else seal_key
    inputs = _Inputs()
    target = Ledger(
        LedgerConfig(
            store_url=target_url, seal_key=key, clock=inputs.clock, new_id=inputs.new_id,
            new_seed=inputs.new_seed, regulator_key=source.config.regulator_key,
            chain_key=source.config.chain_key,
        )
    )
    for command in stored_commands(source):
        inputs.now = command.timestamp
        inputs.ids = _generated_ids(command)
        if command.command == "open_shoe":
            shoe_id = UUID(command.result["shoe_id"])
            shoe: Shoe = source.app.repository.get(shoe_id)
            inputs.seeds = [unseal(source.config.seal_key, shoe.sealed_seed, shoe_id)]
        getattr(target, command.command)(command.request_id, **command.args,
                                         actor=command.actor)
    return target


def event_log(ledger: Ledger) -> list[tuple[str, str, int, str]]:
    """(topic, originator id, version, state as canonical JSON) of every event, in log order;
    the evidence chain's links are left out (they are signed by each ledger's own key)."""
    out: list[tuple[str, str, int, str]] = []
    position = 0
    while batch := ledger.read_events(position, 1000):
        out += [
            (e.topic, e.originator_id, e.version, json.dumps(e.state, sort_keys=True))
            for e in batch if e.topic != LINKED_TOPIC
        ]
        position = batch[-1].position
    return out
