"""What the ledger answers: plain frozen dataclasses of text, integers and tuples.

Mutating commands answer one of these; the answer is stored with the request id (as
``to_dict``) and a retry returns it again (``from_dict``). Fields added later have defaults, so
answers stored before them still load. Times are ISO 8601 text, taken from the events.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from datetime import datetime
from typing import Any, TypeVar, Union

from services.ledger.table import UNRECORDED_GAME

T = TypeVar("T")

# A field's ``metadata`` for a field added to a stored answer whose default is what an answer
# stored before it meant: ``to_dict`` leaves the field out while it holds its default, so the
# stored form of such an answer stays what it was.
IMPLIED: typing.Mapping[str, bool] = types.MappingProxyType({"implied_by_default": True})


@dataclasses.dataclass(frozen=True, slots=True)
class StakeView:
    """A stake on a table's layout."""

    stake_id: str
    account_id: str  # the player's account
    chance: str  # noir | rouge | couleur | inverse
    amount: int  # minor units
    status: str  # free | prison | second_prison
    insured: bool
    choice: str | None  # partage | prison | None
    awaiting_choice: bool


@dataclasses.dataclass(frozen=True, slots=True)
class TableView:
    table_id: str
    preset: str
    options: dict[str, str]  # HouseRules.options(), as recorded when the table opened
    currency: str
    shoe_id: str | None  # the open shoe, if any
    coup_id: str | None  # the table's latest coup (open or finished), if any
    coups: int  # coups opened at this table
    shoes: int  # shoes opened at this table
    layout: tuple[StakeView, ...]  # stakes on the layout now
    bank_account: str
    layout_account: str
    create_time: str | None = None  # when the table opened
    coup_shoe_id: str | None = None  # the shoe of the latest coup, if any
    closed: bool = False  # closed for good (``close_table``): it opens no more shoes
    close_time: str | None = None
    # The game it plays (``Table.Opened.game``). Stored only when it is not ``UNRECORDED_GAME``
    # (``IMPLIED``): an answer stored before the field was (a Trente et Quarante table's, the
    # only game then) reads back as the default, and a Trente et Quarante table's answer is
    # stored as it always was, byte for byte.
    game: str = dataclasses.field(default=UNRECORDED_GAME, metadata=IMPLIED)


@dataclasses.dataclass(frozen=True, slots=True)
class ShoeView:
    shoe_id: str
    table_id: str
    algorithm: str  # SABOT-SHUFFLE-1
    deck_kind: str  # FRENCH-52 ...
    decks: int
    size: int
    commitment: str  # SHA-256 hex, published before the cut
    cut_position: int | None
    cut_by: str | None
    position: int  # sabot position of the next card
    coups: int  # coups dealt from this shoe
    cut_card_reached: bool  # no further coup may open; the shoe must be closed
    closed: bool
    seed: str | None  # hex, only once the shoe is closed
    order_digest: str | None  # SHA-256 of the cut sabot, only once the shoe is closed
    create_time: str | None = None  # shuffled (opened)
    cut_time: str | None = None
    close_time: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class MovementView:
    """One double-entry movement: ``amount`` leaves ``debit_account`` for ``credit_account``."""

    seq: int  # order within the coup's settlement (1-based)
    kind: str  # domain.trente_et_quarante.layout.MovementKind value
    stake_id: str
    account_id: str  # the stake's player
    chance: str
    amount: int
    debit_account: str
    credit_account: str


@dataclasses.dataclass(frozen=True, slots=True)
class StepView:
    """One recorded event of a coup, in order (for recall: the last game plus nine)."""

    version: int  # the event's version in the coup's stream
    topic: str
    timestamp: str  # ISO 8601
    state: dict[str, Any]
    position: int = 0  # in the log
    actor: dict[str, Any] | None = None  # who ran the command that caused it (Actor.to_dict)


@dataclasses.dataclass(frozen=True, slots=True)
class ShoeOpened:
    shoe_id: str
    table_id: str
    commitment: str
    algorithm: str
    deck_kind: str
    decks: int


@dataclasses.dataclass(frozen=True, slots=True)
class ShoeClosed:
    shoe_id: str
    seed: str  # hex
    commitment: str
    cut_position: int | None
    order_digest: str | None
    returned: tuple[MovementView, ...]  # free stakes returned to their players


@dataclasses.dataclass(frozen=True, slots=True)
class TableClosed:
    """What ``close_table`` answers: the stakes it settled, as movements in the order of the
    rules (free stakes returned; prisoners per ``prisoners_at_close``)."""

    table_id: str
    coup_id: str | None  # the latest coup, where the settlement is recorded (None: no coup)
    prisoners_at_close: str  # half_returned | returned
    settled: tuple[MovementView, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class AccountView:
    account_id: str
    kind: str  # player | bank | layout | house_insurance | house_partage | house_prison | cage
    currency: str
    balance: int  # minor units; credits minus debits
    entries: int  # number of entries posted


@dataclasses.dataclass(frozen=True, slots=True)
class Entry:
    """One line of a statement: positive amounts come in, negative go out."""

    number: int  # 1-based in the account
    amount: int
    balance: int  # after the entry
    counter_account: str
    kind: str  # cash_in | cash_out | a MovementKind value (stake, premium, payment, ...)
    cause: str  # e.g. the coup id or the request id
    stake_id: str | None
    timestamp: str
    actor: dict[str, Any] | None = None  # who ran the command that posted it (Actor.to_dict)


@dataclasses.dataclass(frozen=True, slots=True)
class Statement:
    account: AccountView
    entries: tuple[Entry, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class TurnView:
    """The turn a game's match or round waits on, for the turn clock (``services/turn_clock.py``):
    whose it is, since when (the ledger's clock) and the table's turn time. ``turn``: the
    turn's number (the aggregate's version when the turn began), named by a claim so that it
    is refused once the game moved on; None: no turn is running (not dealt, over)."""

    game: str  # the game's registered name: cuarenta, treinta-y-una
    id: str  # the match's or the round's id
    table_id: str
    turn: int | None
    seat: int | None  # Cuarenta: the seat to play
    player: str | None  # the account whose turn it is
    since: str | None  # ISO 8601, the ledger's clock
    seconds: int  # the table's turn time (0: none)


@dataclasses.dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event of the application's log (``position`` is its notification id, gaps allowed)."""

    position: int
    originator_id: str
    version: int
    topic: str
    timestamp: datetime | None
    state: dict[str, Any]


def to_dict(value: Any) -> Any:
    """A view as JSON-ready data (dicts, lists, text, numbers); a field marked ``IMPLIED``
    is left out while it holds its default."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_dict(getattr(value, f.name)) for f in dataclasses.fields(value)
                if not (f.metadata.get("implied_by_default")
                        and getattr(value, f.name) == f.default)}
    if isinstance(value, tuple | list):
        return [to_dict(v) for v in value]
    if isinstance(value, dict):
        return {k: to_dict(v) for k, v in value.items()}
    return value


def from_dict(cls: type[T], data: Any) -> T:
    """The inverse of ``to_dict`` for the view class ``cls``."""
    return typing.cast(T, _convert(cls, data))


def _convert(tp: Any, data: Any) -> Any:
    if data is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _convert(args[0], data)
    if origin is tuple:
        (item, _) = typing.get_args(tp)
        return tuple(_convert(item, v) for v in data)
    if origin is dict:
        return dict(data)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return tp(**{
            f.name: _convert(hints[f.name], data[f.name])
            for f in dataclasses.fields(tp)
            if f.name in data or f.default is dataclasses.MISSING
        })
    return data
