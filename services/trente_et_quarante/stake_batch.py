"""Trente et Quarante's batch command: a terminal's several stakes of one coup in one command
(``stake_batch``, served as ``BettingService.BatchStakes``; the batch rules common to every
batch are ``services/ledger/batch.py``).

An item is ``{"action": "place", "account_id", "chance", "amount", "stake_id", "choice"}``,
``{"action": "raise", "stake_id", "amount"}`` or ``{"action": "withdraw", "stake_id"}``: the
arguments of ``place_stake``, ``raise_stake`` and ``withdraw_stake``. The items are decided in
order on the coup's layout as the items before left it, each as its unary command (the same
checks, the same events: ``StakePlaced`` / ``StakeRaised`` / ``StakeWithdrawn`` and their
postings), and the balance each needs is checked against what the items before it took (each
player's change kept as the items go: O(1) per item). First every check (the caller's
authority over every item, the coup's betting, each item's step and the funds), then the
events: a refusal stores nothing of the item (of the batch, ``atomic``).

Who may act: a player places from its own account only and raises or withdraws its own stakes
only (PERMISSION_DENIED naming ``items[i].account_id`` / ``items[i].stake_id``: the whole
batch refused, atomic or not). The stake a ``place`` without a client's ``stake_id`` makes has
an id derived from the batch's request and the item's index (``ids.stake_uuid``), so a batch
draws no random id (its re-run, ``sabot store rerun``, needs none) and ids never collide.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from domain.errors import FailedPrecondition, InvalidArgument, RuleViolation
from domain.money import players_net
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.layout import (
    Layout,
    Refait31Choice,
    Stake,
    Step,
    place_stake,
    raise_stake,
    withdraw_stake,
)
from services.ledger import batch
from services.ledger.account import Account
from services.ledger.actor import Actor
from services.ledger.batch import ItemError
from services.ledger.core import Core, check_amount
from services.ledger.errors import AlreadyExists, PermissionDenied
from services.ledger.ids import parse_uuid, request_uuid, stake_id_text
from services.ledger.table import Table
from services.ledger.views import MovementView, StakeView
from services.ledger.writer import UnitOfWork
from services.trente_et_quarante.coup import Coup, Phase
from services.trente_et_quarante.views import StakeResult

PLACE, RAISE, WITHDRAW = "place", "raise", "withdraw"
_KEYS = {  # each action's arguments, as stored
    PLACE: ("account_id", "chance", "amount", "stake_id", "choice"),
    RAISE: ("stake_id", "amount"),
    WITHDRAW: ("stake_id",),
}
ITEMS = "items"


class Game(Protocol):
    """What the batch uses of the game's commands (``commands.TrenteEtQuarante``)."""

    @property
    def core(self) -> Core: ...

    def _coup(self, unit: UnitOfWork, coup_id: str) -> Coup: ...

    def _rules(self, table: Table) -> Any: ...

    def _apply_step(self, unit: UnitOfWork, table: Table, coup: Coup, step: Step,
                    ts: datetime, record_movements: bool = True) -> list[MovementView]: ...


class Words(NamedTuple):
    """The game's readings of an item's words and its view of a stake (``commands.py``)."""

    chance: Callable[[str], Chance]
    choice: Callable[[str], Refait31Choice]
    stake_view: Callable[[Stake], StakeView]


@dataclasses.dataclass(frozen=True, slots=True)
class StakeItemResult:
    """One item's answer: its ``StakeResult`` as the unary command's, or its refusal."""

    result: StakeResult | None = None
    error: ItemError | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class StakeBatchResult:
    """The answer to ``stake_batch``: the coup, one result per item in order, how many were
    accepted."""

    coup_id: str
    items: tuple[StakeItemResult, ...]
    accepted: int


def normalized(items: Any) -> list[dict[str, Any]]:
    """The items as stored: each its action and exactly its action's keys (INVALID_ARGUMENT
    naming ``items[i].<key>`` for a wrong type, ``DUPLICATE_ITEM`` for a stake named twice)."""
    out: list[dict[str, Any]] = []
    for i, item in enumerate(batch.check_items(items, ITEMS)):
        action = batch.text_of(item, "action", ITEMS, i)
        if action not in _KEYS:
            raise batch.at(_unknown_action(), ITEMS, i)
        one: dict[str, Any] = {"action": action}
        for key in _KEYS[action]:
            if key == "amount":
                one[key] = batch.int_of(item, key, ITEMS, i)
            else:
                optional = key in ("choice",) or (key == "stake_id" and action == PLACE)
                one[key] = batch.text_of(item, key, ITEMS, i, optional=optional)
        out.append(one)
    batch.duplicate([_named(one) for one in out], ITEMS, "stake_id")
    return out


def _unknown_action() -> RuleViolation:
    return InvalidArgument("action", "UNKNOWN_ACTION", "must be place, raise or withdraw")


def _named(item: dict[str, Any]) -> object:
    """What an item names, for the duplicate check: a stake (by its id, or a place's client id
    for its account); a place without a client id names a new stake of its own."""
    if item["action"] == PLACE:
        return None if item["stake_id"] is None else (
            "client", item["account_id"], item["stake_id"])
    return ("stake", item["stake_id"])


def run(game: Game, words: Words, request_id: str, coup_id: str, items: Any, atomic: bool,
        actor: Actor) -> StakeBatchResult:
    """The command (``TrenteEtQuarante.stake_batch``)."""
    checked = normalized(items)

    def decide(unit: UnitOfWork) -> StakeBatchResult:
        rid = str(request_uuid(request_id, actor.scope))
        for i, item in enumerate(checked):  # authority first, as the unary commands
            if item["action"] == PLACE and not actor.acts_for(item["account_id"]):
                raise PermissionDenied(f"{ITEMS}[{i}].account_id", "NOT_YOUR_ACCOUNT",
                                       "a player stakes from its own account only")
        coup = game._coup(unit, coup_id)
        cid = str(coup.id)
        if actor.is_player:
            for i, item in enumerate(checked):
                if item["action"] != PLACE:
                    owner = coup.owner(item["stake_id"])
                    if owner is not None and not actor.acts_for(owner):
                        raise PermissionDenied(f"{ITEMS}[{i}].stake_id", "NOT_YOUR_STAKE",
                                               "the stake is another player's")
        if coup.phase != Phase.BETTING:
            raise FailedPrecondition("coup_id", "BETTING_CLOSED",
                                     f"betting is closed for coup {coup_id}")
        table = game.core.table(unit, coup.table_id)
        rules = game._rules(table)
        layout = coup.domain_layout()
        taken: dict[str, int] = {}  # each player's balance change by the items accepted so far
        players: dict[str, Account] = {}  # the players' accounts checked so far (``player_of``)
        plan: list[tuple[int, str, Step]] = []
        refused: dict[int, RuleViolation] = {}
        for i, item in enumerate(checked):
            try:
                sid = _stake_id(cid, rid, i, item)
                step = _step(game, words, unit, coup, rules, layout, sid, item, players)
                change = {p: taken.get(p, 0) + c for p, c in players_net(step.movements).items()}
                game.core.check_balances(unit, change, rules.currency, players=players)
            except RuleViolation as exc:
                if atomic:
                    raise batch.at(exc, ITEMS, i) from None
                refused[i] = exc
                continue
            taken.update(change)
            layout = step.layout
            plan.append((i, sid, step))
        ts = unit.now
        results: list[StakeItemResult | None] = [None] * len(checked)
        for i, refusal in refused.items():
            results[i] = StakeItemResult(error=batch.item_error(refusal))
        for i, sid, step in plan:  # every check passed: the events, item by item
            fate_player = next((f.player for f in step.fates if f.stake_id == sid), None)
            before = coup.stake(sid) if fate_player is None else None
            moved = game._apply_step(unit, table, coup, step, ts, record_movements=False)
            stake = coup.stake(sid)
            player = (stake.player if stake is not None
                      else fate_player or (before.player if before else ""))
            account = players.get(player) if player else None
            if account is None and player:
                account = game.core.account(unit, player)
            balance = account.balance if account is not None else 0
            results[i] = StakeItemResult(StakeResult(
                cid, words.stake_view(stake) if stake else None, tuple(moved), balance))
        return StakeBatchResult(cid, tuple(r or StakeItemResult() for r in results), len(plan))

    args = {"coup_id": coup_id, ITEMS: checked, "atomic": bool(atomic)}
    return game.core.run("stake_batch", request_id, args, decide, StakeBatchResult, actor)


def _stake_id(coup_id: str, rid: str, index: int, item: dict[str, Any]) -> str:
    """The item's stake id (``rid``: the batch's request's id, as text)."""
    if item["action"] != PLACE:
        return str(parse_uuid(item["stake_id"], "stake_id"))
    client = item["stake_id"]
    if client is not None:
        return stake_id_text(coup_id, item["account_id"], str(parse_uuid(client, "stake_id")))
    return stake_id_text(coup_id, item["account_id"], f"batch:{rid}:{index}")


def _step(game: Game, words: Words, unit: UnitOfWork, coup: Coup, rules: Any, layout: Layout,
          sid: str, item: dict[str, Any], players: dict[str, Account]) -> Step:
    """The item's domain step on ``layout`` (the coup's, with the batch's items before it;
    ``players``: the accounts checked so far, ``Core.player_of``)."""
    action = item["action"]
    if action == PLACE:
        game.core.player_of(unit, item["account_id"], rules.currency, players)
        chance = words.chance(item["chance"])
        amount = check_amount(item["amount"])
        choice = words.choice(item["choice"]) if item["choice"] is not None else None
        if item["stake_id"] is not None and coup.owner(sid) is not None:
            raise AlreadyExists("stake_id", "STAKE_EXISTS",
                                f"stake {item['stake_id']} was placed on the coup already")
        return place_stake(rules, layout, sid, item["account_id"], chance, amount, choice)
    if action == RAISE:
        return raise_stake(rules, layout, sid, check_amount(item["amount"]))
    return withdraw_stake(rules, layout, sid)
