"""Replay: re-run the commands stored with their request ids into another store.

Every successful command is stored with its arguments, its answer, its time and its actor (the
Request aggregate; the actor scopes the request id and decides ownership, so it is replayed
too). Fed back with the same inputs (the recorded times, the ids it generated, each shoe's
seed), the commands give the same events: a regulator's way to recreate play.

Game-neutral: the ids a game's command drew are its own to say (``LedgerGame.rerun_ids`` of
the source ledger's game: Trente et Quarante's in ``services/trente_et_quarante/game.py``), else
read from the aggregates the command created (``_inputs``); the seeds are those of the shoes
each command shuffled, found from what its request records it created.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from domain.errors import RuleViolation
from services.ledger.account import Account
from services.ledger.actor import UNRECORDED, Actor
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.ledger.evidence import LINKED_TOPIC
from services.ledger.refused import answer_of
from services.ledger.request import Request
from services.ledger.seal import unseal
from services.ledger.shoe import Shoe
from services.ledger.table import Table


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


def _texts(value: Any) -> set[str]:
    """Every text among a command's arguments (nested)."""
    if isinstance(value, dict):
        return set().union(*(_texts(v) for v in value.values()))
    if isinstance(value, list | tuple):
        return set().union(*(_texts(v) for v in value))
    return {str(value)} if isinstance(value, str | UUID) else set()


# The core's aggregates named by uuid5 of their names (never a drawn id).
_NAMED = frozenset({Table.Opened.TOPIC, Account.Opened.TOPIC})


def _created(source: Ledger, command: StoredCommand) -> list[tuple[UUID, str]]:
    """The aggregates ``command`` created, in the order it created them, each with its first
    event's topic: from its request's effects (version 1 events; a request stored before
    effects were records none)."""
    found = []
    for originator, version in command.effects:
        if version == 1:
            oid = UUID(str(originator))
            first = source.app.recorder.select_events(oid, lte=1)
            if first:
                found.append((oid, first[0].topic))
    return found


def _inputs(source: Ledger, command: StoredCommand) -> tuple[list[UUID], list[UUID]]:
    """What ``command`` drew, in order: the ids (``LedgerConfig.new_id``) and the shoes whose
    seeds it drew (``new_seed``).

    The core's ``open_shoe``: its shoe (its id drawn when none was given). A game's command
    whose ``LedgerGame`` declares ``rerun_ids(command, arguments, answer)``: those ids. Any
    other command: the ids of the aggregates it created that are neither named (tables,
    accounts: uuid5 of their names) nor among its arguments, in the order it created them,
    its new aggregates of the game first and then its shoes (a round or a match draws its id
    before it shuffles its shoe); a re-run that the guess does not fit differs from the source
    (``event_log``) or stops with a ``ReplayError``. The shoes: those it created."""
    if command.command == "open_shoe":
        shoe = UUID(command.result["shoe_id"])
        return ([] if command.args.get("shoe_id") is not None else [shoe]), [shoe]
    created = _created(source, command)
    shoes = [oid for oid, topic in created if topic == Shoe.Shuffled.TOPIC]
    game = source.game_of_method(command.command)
    if game is not None and game.rerun_ids is not None:
        declared = game.rerun_ids(command.command, command.args, command.result)
        return [UUID(str(i)) for i in declared], shoes
    given = _texts(command.args)
    drawn = [oid for oid, topic in created if topic != Shoe.Shuffled.TOPIC
             and topic not in _NAMED and str(oid) not in given]
    return drawn + [oid for oid in shoes if str(oid) not in given], shoes


def _seed(source: Ledger, shoe_id: UUID) -> bytes:
    shoe: Shoe = source.app.repository.get(shoe_id)
    return unseal(source.config.seal_key, shoe.sealed_seed, shoe_id)


def replay(source: Ledger, target_url: str, seal_key: bytes | None = None) -> Ledger:
    """A new ledger on ``target_url`` (an empty store) holding the source's commands re-run.
    The seeds come from the source's sealed seeds (so ``seal_key`` must open them); the ids a
    command drew, from its stored answer and what it created (``_inputs``). ReplayError names
    a command that drew an id or a seed the replay cannot give it."""
    key = source.config.seal_key if seal_key is None else seal_key
    inputs = _Inputs()
    target = Ledger(
        LedgerConfig(
            store_url=target_url, seal_key=key, clock=inputs.clock, new_id=inputs.new_id,
            new_seed=inputs.new_seed, regulator_key=source.config.regulator_key,
            chain_key=source.config.chain_key,
        ), games=tuple(source.games.values()),
    )
    try:
        for command in stored_commands(source):
            inputs.now = command.timestamp
            inputs.ids, shoes = _inputs(source, command)
            inputs.seeds = [_seed(source, s) for s in shoes]
            inputs.missing = None
            refused = answer_of(command.result)  # stored as a refusal, with its consequence
            try:
                getattr(target, command.command)(command.request_id, **command.args,
                                                 actor=command.actor)
            except Exception as exc:
                if refused is not None and isinstance(exc, RuleViolation) and (
                        exc.field, exc.reason) == (refused.field, refused.reason):
                    continue  # refused again, its consequence stored again
                if inputs.missing is None:
                    raise
                game = source.game_of_method(command.command)
                hint = ("" if game is None
                        else f" (declare it: {game.name}'s LedgerGame.rerun_ids)")
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
