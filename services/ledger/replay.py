"""Replay: re-run the commands stored with their request ids into another store.

Every successful command is stored with its arguments, its answer, its time and its actor (the
Request aggregate; the actor scopes the request id and decides ownership, so it is replayed
too). Fed back with the same inputs (the recorded times, the ids it generated, each shoe's
seed), the commands give the same events: a regulator's way to recreate play.

Game-neutral: the ids a game's command drew are its registry entry's to say
(``Game.rerun_ids``: Trente et Quarante's in ``services/trente_et_quarante/game.py``); the seeds
are those of the shoes each command shuffled, found from what its request records it created.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from services import games
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
    effects: tuple[tuple[str, int], ...] = ()  # the events it caused (none recorded before v2)


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
                tuple((str(o), int(v)) for o, v in state.get("effects") or ()),
            )
        position = notes[-1].id


class ReplayError(Exception):
    """A stored command that cannot be re-run: it drew an id or a seed the replay cannot give
    it (its game declares no ``Game.rerun_ids``, or the source's shoe cannot be unsealed)."""


class _Undrawn(Exception):
    """Raised inside a command that draws an input the replay does not hold."""


@dataclass
class _Inputs:
    now: datetime = datetime.min
    ids: list[UUID] = field(default_factory=list)
    seeds: list[bytes] = field(default_factory=list)
    missing: str | None = None  # what the running command drew that was not given

    def clock(self) -> datetime:
        return self.now

    def new_id(self) -> UUID:
        if not self.ids:
            self.missing = "an id"
            raise _Undrawn(self.missing)
        return self.ids.pop(0)

    def new_seed(self) -> bytes:
        if not self.seeds:
            self.missing = "a seed"
            raise _Undrawn(self.missing)
        return self.seeds.pop(0)


def _drawn_ids(command: StoredCommand) -> list[UUID]:
    """The ids ``command`` drew (``LedgerConfig.new_id``), in the order it drew them: the core's
    own command ``open_shoe`` draws its shoe's id when none is given; a game's command, what its
    registry entry's ``rerun_ids(command, arguments, answer)`` says (none without one)."""
    if command.command == "open_shoe":
        given = command.args.get("shoe_id") is not None
        return [] if given else [UUID(command.result["shoe_id"])]
    game = games.game_of_method(command.command)
    if game is None or game.rerun_ids is None:
        return []
    return [UUID(str(i)) for i in game.rerun_ids(command.command, command.args, command.result)]


def _shuffled(source: Ledger, command: StoredCommand) -> list[UUID]:
    """The shoes ``command`` shuffled (each drew a seed), in order: ``open_shoe``'s from its
    answer; any other command's from the aggregates its request records it created (its
    effects at version 1; a request stored before effects were records none)."""
    if command.command == "open_shoe":
        return [UUID(command.result["shoe_id"])]
    found = []
    for originator, version in command.effects:
        if version != 1:
            continue
        first = source.app.recorder.select_events(UUID(str(originator)), lte=1)
        if first and first[0].topic == Shoe.Shuffled.TOPIC:
            found.append(UUID(str(originator)))
    return found


def _seed(source: Ledger, shoe_id: UUID) -> bytes:
    shoe: Shoe = source.app.repository.get(shoe_id)
    return unseal(source.config.seal_key, shoe.sealed_seed, shoe_id)


def replay(source: Ledger, target_url: str, seal_key: bytes | None = None) -> Ledger:
    """A new ledger on ``target_url`` (an empty store) holding the source's commands re-run.
    The seeds come from the source's sealed seeds (so ``seal_key`` must open them); the ids a
    command drew, from its stored answer (``_drawn_ids``). ReplayError names a command that
    drew an id or a seed the replay cannot give it."""
    key = source.config.seal_key if seal_key is None else seal_key
    inputs = _Inputs()
    target = Ledger(
        LedgerConfig(
            store_url=target_url, seal_key=key, clock=inputs.clock, new_id=inputs.new_id,
            new_seed=inputs.new_seed, regulator_key=source.config.regulator_key,
            chain_key=source.config.chain_key,
        )
    )
    try:
        for command in stored_commands(source):
            inputs.now = command.timestamp
            inputs.ids = _drawn_ids(command)
            inputs.seeds = [_seed(source, s) for s in _shuffled(source, command)]
            inputs.missing = None
            try:
                getattr(target, command.command)(command.request_id, **command.args,
                                                 actor=command.actor)
            except Exception as exc:
                if inputs.missing is None:
                    raise
                game = games.game_of_method(command.command)
                hint = (f"; {game.name} declares no Game.rerun_ids"
                        if game is not None and game.rerun_ids is None else "")
                raise ReplayError(
                    f"the stored command {command.command} (request {command.request_id}, log "
                    f"position {command.position}) drew {inputs.missing} the replay does not "
                    f"hold{hint}") from exc
    except BaseException:
        target.close()
        raise
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
