"""Ledger views -> sabot.v1 messages, and the enum mappings between them: the core's (tables,
shoes, the stakes and movements of the core's views, accounts, statements, events, money, times,
actors) and the redaction every game's answers go through. A game's own views are converted in
its package (Trente et Quarante's coups, fates, stake results and recalled steps:
``services/trente_et_quarante/convert.py``).

``viewer``: None shows every account id; a player's account id shows that player's own and the
house's accounts, and leaves other players' ids empty (amounts and chances stay: they are public
on a real table's layout).
"""

from __future__ import annotations

import dataclasses
import enum
import json
from datetime import UTC, datetime
from typing import Any, TypeVar
from uuid import UUID

from google.protobuf.timestamp_pb2 import Timestamp

from services.api import names
from services.api.gen.sabot.v1 import (
    cashier_pb2,
    common_pb2,
    events_pb2,
    table_pb2,
)
from services.api.roles import Principal, Role
from services.ledger import views

CHANCES: dict[str, common_pb2.Chance.ValueType] = {
    "noir": common_pb2.CHANCE_NOIR,
    "rouge": common_pb2.CHANCE_ROUGE,
    "couleur": common_pb2.CHANCE_COULEUR,
    "inverse": common_pb2.CHANCE_INVERSE,
}
CHANCE_NAMES = {v: k for k, v in CHANCES.items()}
CHOICES: dict[str, common_pb2.Refait31Choice.ValueType] = {
    "partage": common_pb2.REFAIT31_CHOICE_PARTAGE,
    "prison": common_pb2.REFAIT31_CHOICE_PRISON,
}
CHOICE_NAMES = {v: k for k, v in CHOICES.items()}
V = TypeVar("V")
# Keys of the events' data that name an account or a person (redacted for other players).
IDENTITY_KEYS = frozenset(
    {"account_id", "player", "counter_account", "debit_account", "credit_account", "cut_by"}
)


def visible(account_id: str, viewer: str | None) -> str:
    """The id as ``viewer`` may see it: house accounts (``table:...``, ``cage:...``) and the
    viewer's own stay, another player's becomes ""."""
    if viewer is None or not account_id or account_id == viewer or ":" in account_id:
        return account_id
    return ""


def redact(data: Any, viewer: str | None, names: frozenset[str] = frozenset()) -> Any:
    """Event data with other players' identities ("" in IDENTITY_KEYS) taken out; ``names``:
    a game's own keys that hold players' names, as a text, a list of them or rows of a list
    (a round's ``seats``, ``banker``, ``carried`` ``[player, amount, held]`` ...)."""
    if viewer is None:
        return data
    if isinstance(data, dict):
        return {
            k: visible(v, viewer) if k in IDENTITY_KEYS and isinstance(v, str)
            else _names(v, viewer, names) if k in names
            else redact(v, viewer, names)
            for k, v in data.items()
        }
    if isinstance(data, list | tuple):
        return [redact(v, viewer, names) for v in data]
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        return redact(views.to_dict(data), viewer, names)
    return data


def redacted(view: V, viewer: str | None, names: frozenset[str] = frozenset()) -> V:
    """A view (a frozen dataclass of ``services.ledger.views``' kind) as ``viewer`` may see it:
    :func:`redact` on its data, read back as the same class (None: the view itself)."""
    if viewer is None:
        return view
    return views.from_dict(type(view), redact(views.to_dict(view), viewer, names))


def _names(value: Any, viewer: str, names: frozenset[str]) -> Any:
    if isinstance(value, str):
        return visible(value, viewer)
    if isinstance(value, list | tuple):
        return [_names(v, viewer, names) for v in value]
    return redact(value, viewer, names)


def viewer_of(who: Principal) -> str | None:
    """Whom the answer is for: a player's account id (others' ids hidden), else None (all)."""
    return (who.account or "") if who.role is Role.PLAYER else None


def actor(data: dict[str, Any] | None, viewer: str | None = None) -> common_pb2.Actor | None:
    """The actor of a fact as ``viewer`` may see it: whole for the house (viewer None) and for
    the player's own commands; another player shows only its role; the house's staff show their
    principal and role to a player, not their peer."""
    if not data:
        return None
    account = data.get("account") or ""
    if viewer is not None and not (account and account == viewer):
        if data.get("role") == "player":
            return common_pb2.Actor(role="player")
        return common_pb2.Actor(principal=str(data.get("principal", "")),
                                role=str(data.get("role", "")))
    return common_pb2.Actor(
        principal=str(data.get("principal", "")), role=str(data.get("role", "")),
        peer=str(data.get("peer", "")), account=names.account(account) if account else "")


def account_name(account_id: str, viewer: str | None) -> str:
    """``accounts/{id}`` as ``viewer`` may see it ("": another player's)."""
    shown = visible(account_id, viewer)
    return names.account(shown) if shown else ""


def money(amount: int, currency: str) -> common_pb2.Money:
    return common_pb2.Money(currency_code=currency, amount_minor=amount)


def timestamp(value: datetime | str | None) -> Timestamp | None:
    if value is None or value == "":
        return None
    when = datetime.fromisoformat(value) if isinstance(value, str) else value
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    stamp = Timestamp()
    stamp.FromDatetime(when)
    return stamp


def stake(
    table_id: str, view: views.StakeView, currency: str, viewer: str | None = None
) -> common_pb2.Stake:
    return common_pb2.Stake(
        name=names.stake(table_id, view.stake_id),
        account=account_name(view.account_id, viewer),
        chance=CHANCES.get(view.chance, common_pb2.CHANCE_UNSPECIFIED),
        amount=money(view.amount, currency),
        status=view.status,
        insured=view.insured,
        refait31_choice=CHOICES.get(view.choice or "", common_pb2.REFAIT31_CHOICE_UNSPECIFIED),
        awaiting_choice=view.awaiting_choice,
    )


def movement(
    table_id: str, view: views.MovementView, currency: str, viewer: str | None = None
) -> common_pb2.Movement:
    return common_pb2.Movement(
        seq=view.seq,
        kind=view.kind,
        stake=names.stake(table_id, view.stake_id) if view.stake_id else "",
        account=account_name(view.account_id, viewer) if view.account_id else "",
        chance=CHANCES.get(view.chance, common_pb2.CHANCE_UNSPECIFIED),
        amount=money(view.amount, currency),
        debit_account=visible(view.debit_account, viewer),
        credit_account=visible(view.credit_account, viewer),
    )


def table(view: views.TableView, viewer: str | None = None) -> table_pb2.Table:
    current_coup = ""
    if view.coup_id and view.coup_shoe_id:
        current_coup = names.coup(view.table_id, view.coup_shoe_id, view.coup_id)
    return table_pb2.Table(
        name=names.table(view.table_id),
        preset=view.preset,
        options=view.options,
        currency_code=view.currency,
        current_shoe=names.shoe(view.table_id, view.shoe_id) if view.shoe_id else "",
        current_coup=current_coup,
        shoes=view.shoes,
        coups=view.coups,
        layout=[stake(view.table_id, s, view.currency, viewer) for s in view.layout],
        bank_account=view.bank_account,
        layout_account=view.layout_account,
        create_time=timestamp(view.create_time),
        closed=view.closed,
        close_time=timestamp(view.close_time),
        game=view.game,
    )


def shoe(view: views.ShoeView, viewer: str | None = None) -> table_pb2.Shoe:
    return table_pb2.Shoe(
        name=names.shoe(view.table_id, view.shoe_id),
        algorithm=view.algorithm,
        deck_kind=view.deck_kind,
        decks=view.decks,
        size=view.size,
        commitment=view.commitment,
        cut_position=view.cut_position or 0,
        cut_by=visible(view.cut_by or "", viewer),
        position=view.position,
        coups=view.coups,
        cut_card_reached=view.cut_card_reached,
        closed=view.closed,
        seed=view.seed or "",
        order_digest=view.order_digest or "",
        create_time=timestamp(view.create_time),
        cut_time=timestamp(view.cut_time),
        close_time=timestamp(view.close_time),
    )


def account(view: views.AccountView) -> cashier_pb2.Account:
    return cashier_pb2.Account(
        name=names.account(view.account_id),
        kind=view.kind,
        balance=money(view.balance, view.currency),
        entries=view.entries,
    )


def entry(view: views.Entry, currency: str, viewer: str | None = None
          ) -> cashier_pb2.StatementEntry:
    return cashier_pb2.StatementEntry(
        number=view.number,
        amount=money(view.amount, currency),
        balance_after=money(view.balance, currency),
        counter_account=view.counter_account,
        kind=view.kind,
        cause=view.cause,
        stake_id=view.stake_id or "",
        time=timestamp(view.timestamp),
        actor=actor(view.actor, viewer),
    )


def _json_default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return views.to_dict(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, UUID | datetime):
        return str(value)
    if isinstance(value, set | frozenset | tuple):
        return sorted(value) if isinstance(value, set | frozenset) else list(value)
    return str(value)


def data_json(state: dict[str, Any]) -> str:
    return json.dumps(state, default=_json_default, sort_keys=True, separators=(",", ":"))


def event(
    stored: views.StoredEvent,
    table_id: str = "",
    shoe_id: str = "",
    coup_id: str = "",
    viewer: str | None = None,
    by: dict[str, Any] | None = None,
) -> events_pb2.Event:
    """``by``: the actor of the command that caused it, if known."""
    state = stored.state
    table_id = table_id or str(state.get("table_id") or "")
    shoe_id = shoe_id or str(state.get("shoe_id") or "")
    return events_pb2.Event(
        position=stored.position,
        type=stored.topic,
        aggregate_id=str(stored.originator_id),
        aggregate_version=stored.version,
        time=timestamp(stored.timestamp),
        table=names.table(table_id) if table_id else "",
        shoe=names.shoe(table_id, shoe_id) if table_id and shoe_id else "",
        coup=names.coup(table_id, shoe_id, coup_id) if table_id and shoe_id and coup_id else "",
        data_json=data_json(redact(state, viewer)),
        actor=actor(by, viewer),
    )
