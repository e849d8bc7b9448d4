"""The games' own read models: what each game contributes (``ReadGame.views``: the read side's
port of a game, handed in by the composition root), game-neutral here, the game's part in its
own package.

A game's units (Treinta y Una's rounds, Cuarenta's matches: one aggregate each) are kept in two
``rm_`` tables named after the game's prefix:

- ``rm_<prefix>_unit``: one row per unit: its table, where and when it opened and ended, how
  many steps it has, and ``facts``: what the game's reconciliation folds from its events (JSON,
  the game's ``fold``: stakes, the money moved, when it ended ...);
- ``rm_<prefix>_step``: its steps in order as the PUBLIC may see them (the game's ``steps``:
  a card dealt face down by its position and commitment only, a face once it is shown or
  played; never a card in a hand). The read model holds nothing the log's public events do not.

The same ``fold`` runs over the ledger's stored events (:func:`fold_log`, the ledger's
reconciliation query) and over the log under the projector or the projection runner (this
view), so the rebuilt read model answers what the query answers.
"""

from __future__ import annotations

import dataclasses
import json
from abc import abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from typing import Any, ClassVar

from eventsourcing.utils import resolve_topic

from services.projections.decode import StoredEvent
from services.projections.export import Report
from services.projections.gamingday import DEFAULT, GamingDay
from services.projections.store import ReadStore, Tx
from services.projections.view import Envelope, Table, View

# (table options, chance, the stake's state) -> (mean, variance) per unit staked of the house's
# result of one coup (None: the rule book cannot say)
CoupLaw = Callable[[Mapping[str, str], str, str], "tuple[Fraction, Fraction] | None"]


@dataclass(frozen=True)
class ReadGame:
    """What the read side needs of a game: its name and its own read models (``views()``, each
    a ``View``: e.g. a ``UnitsView``; None: none of its own). The read models
    (``services.projections.default_views``) add them after the core's, so ``sabot store
    projections rebuild|catch-up|run|lag``, the server's projection thread and the projection
    runner keep them from the log like the others.

    A game whose rounds the core's shoe, recall and reconciliation views keep (Trente et
    Quarante's coups) gives them its rule book's facts: ``cards_behind_cut``, where its shoes'
    cut card lies (before the last N cards: ``ShoeStateView``), and ``coup_law``, the law of one
    of its coups (the gaming-day report's theoretical win: ``ReconciliationView.coup_law``)."""

    name: str
    views: Callable[[], Sequence[View]] | None = None
    cards_behind_cut: int | None = None
    coup_law: CoupLaw | None = None


# The fields of a stored event that are not its data.
META = frozenset({"originator_id", "originator_version", "timestamp", "originator_topic"})

Facts = dict[str, Any]  # a unit's facts: JSON-ready (the game's fold reads and writes them)


def unit_tables(prefix: str) -> tuple[Table, Table]:
    """The two tables of a game's units (``rm_<prefix>_unit``, ``rm_<prefix>_step``)."""
    return (
        Table(f"rm_{prefix}_unit", (
            ("unit_id", "TEXT"), ("table_id", "TEXT"), ("position", "BIGINT"),
            ("opened_at", "TEXT"), ("ended_at", "TEXT"), ("steps", "BIGINT"), ("facts", "TEXT"),
        ), ("unit_id",), indexes=(("table_id", "position"),)),
        Table(f"rm_{prefix}_step", (
            ("unit_id", "TEXT"), ("n", "BIGINT"), ("position", "BIGINT"), ("version", "BIGINT"),
            ("at", "TEXT"), ("kind", "TEXT"), ("data", "TEXT"),
        ), ("unit_id", "n"), lookups=(("position",),)),  # unit_at: the search by position
    )


@dataclass(frozen=True, slots=True)
class Unit:
    unit_id: str
    table_id: str
    position: int  # of its opening event in the log
    opened_at: str
    ended_at: str | None
    steps: int
    facts: Facts


@dataclass(frozen=True, slots=True)
class FloorFacts:
    """What one ended unit gives the floor's gaming-day report (``services.projections.floor``):
    when it counts (``at``, ISO time: its end), the ``handle`` (the stakes put at risk in it),
    the house's win (its commission) and what that commission is ``levied`` on (the
    theoretical win is the table's rate times it). Integer minor units."""

    at: str
    handle: int
    house_win: int
    levied: int


@dataclass(frozen=True, slots=True)
class Step:
    unit_id: str
    n: int  # 1, 2, ... in the unit
    position: int  # of its event in the log
    version: int  # its event's version in the unit's aggregate
    at: str
    kind: str
    data: dict[str, Any]


def fields_of(event: Any) -> dict[str, Any]:
    """An event's data: a stored event's state, a decoded or domain event's attributes."""
    state = getattr(event, "state", None)
    found = state if isinstance(state, dict) else event.__dict__
    return {k: v for k, v in found.items() if k not in META}


def as_event(topic: str, event: Any) -> Any:
    """The domain event of a decoded stored event (:class:`decode.StoredEvent`): an instance of
    its topic's class holding the same attributes (``isinstance`` and its properties work), not
    constructed (nothing validated or recomputed). A domain event is returned as it is."""
    if not isinstance(event, StoredEvent):
        return event
    out = object.__new__(resolve_topic(topic))
    object.__setattr__(out, "__dict__", dict(event.__dict__))
    return out


class UnitsView(View):
    """One game's units and their public steps (see the module). A game subclasses it, naming
    in its class statement its ``game``, the view's ``name``, the tables' ``prefix``
    (:func:`unit_tables`), the ``topics`` of its aggregate, the one ``opened`` that creates a
    unit (its data has ``table_id``) and those that ``end`` one; and defines :meth:`fold`,
    :meth:`steps`, :meth:`reconcile`."""

    game: ClassVar[str]
    opened: ClassVar[str]
    ends: ClassVar[frozenset[str]]
    day: ClassVar[type]  # a row of its reconciliation (a dataclass with ``gaming_day``)
    # The floor's report: what a unit is called (rounds, matches) and the table option holding
    # the house's commission rate ("" for none: the house has no edge).
    unit_name: ClassVar[str] = "units"
    commission_option: ClassVar[str] = ""
    # The account roles of each of the game's tables (``table:<id>:<role>``): the floor's and
    # the gaming day's reports tell its tables by them (``reports.table_games``).
    table_accounts: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, *, game: str, name: str, prefix: str, topics: frozenset[str],
                          opened: str, end: Iterable[str], day: type, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.game, cls.name, cls.tables, cls.topics = game, name, unit_tables(prefix), topics
        cls.opened, cls.ends, cls.day = opened, frozenset(end), day

    @staticmethod
    @abstractmethod
    def fold(facts: Facts, topic: str, data: Mapping[str, Any], at: datetime) -> None:
        """Fold one event of the unit into its facts (the ledger's query runs the same)."""

    @abstractmethod
    def steps(self, event: Any) -> list[tuple[str, dict[str, Any]]]:
        """The public steps of one event of a unit (its domain event): (kind, data) each."""

    @abstractmethod
    def reconcile(self, store: ReadStore, table_id: str, setting: GamingDay) -> Any:
        """The game's reconciliation of ``table_id`` from the read models."""

    @staticmethod
    def floor(facts: Facts) -> FloorFacts | None:
        """A unit's figures for the floor's report (None: not ended, it does not count yet);
        a game without them counts none."""
        return None

    @property
    def unit_table(self) -> str:
        return self.tables[0].name

    @property
    def step_table(self) -> str:
        return self.tables[1].name

    def apply(self, tx: Tx, batch: Sequence[Envelope]) -> None:
        units: dict[str, list[Any]] = {
            str(r[0]): [r[0], r[1], int(r[2]), r[3], r[4], int(r[5]), json.loads(r[6])]
            for r in tx.query_in(
                f"SELECT unit_id, table_id, position, opened_at, ended_at, steps, facts "
                f"FROM {{s}}{self.unit_table} WHERE unit_id",
                {e.oid for e in batch if e.topic != self.opened})
        }
        changed: set[str] = set()
        steps: list[tuple[Any, ...]] = []
        for e in batch:
            data = fields_of(e.event)
            if e.topic == self.opened:
                units[e.oid] = [e.oid, str(data["table_id"]), e.position, e.at, None, 0, {}]
            unit = units.get(e.oid)
            if unit is None:  # an event of a unit opened before the log's start: none such
                continue
            changed.add(e.oid)
            self.fold(unit[6], e.topic, data, e.time)
            if e.topic in self.ends:
                unit[4] = e.at
            version = int(getattr(e.event, "originator_version", 0) or 0)
            for kind, step in self.steps(as_event(e.topic, e.event)):
                unit[5] += 1
                steps.append((e.oid, unit[5], e.position, version, e.at, kind,
                              json.dumps(step, sort_keys=True, default=str)))
        tx.executemany(
            f"INSERT INTO {{s}}{self.unit_table} AS u (unit_id, table_id, position, opened_at, "
            "ended_at, steps, facts) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (unit_id) DO "
            "UPDATE SET ended_at = excluded.ended_at, steps = excluded.steps, "
            "facts = excluded.facts",
            [(*units[u][:6], json.dumps(units[u][6], sort_keys=True)) for u in sorted(changed)])
        tx.executemany(
            f"INSERT INTO {{s}}{self.step_table} (unit_id, n, position, version, at, kind, data) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)", steps)

    def report(self, table_id: str, answer: Any, gaming_day: str | None = None
               ) -> tuple[Report, bool]:
        """A reconciliation (:meth:`reconcile`'s answer: its days, or an object with ``days``
        and the table's own figures) as a report, its days' rows (of ``gaming_day`` only, if
        given) and the table's figures as facts (amounts in minor units); and whether it
        balances."""
        days = answer if isinstance(answer, list) else list(answer.days)
        days = [d for d in days if gaming_day is None or d.gaming_day == gaming_day]
        columns = tuple(f.name for f in dataclasses.fields(self.day) if f.name != "table_id")
        facts: dict[str, Any] = {"game": self.game, "table_id": table_id}
        if isinstance(answer, list):
            balanced = all(d.balanced for d in days)
        else:
            facts |= {f.name: getattr(answer, f.name) for f in dataclasses.fields(answer)
                      if f.name not in ("days", "table_id", "balanced")}
            balanced = bool(answer.balanced)
        facts["result"] = "balanced" if balanced else "NOT BALANCED"
        rows = tuple(tuple(getattr(d, c) for c in columns) for d in days)
        return Report(f"{self.game} reconciliation of {table_id} (minor units)", columns, rows,
                      facts), balanced

    # --- queries ------------------------------------------------------------------------------

    def units(self, store: ReadStore, table_id: str | None = None) -> list[Unit]:
        """The units of ``table_id`` (None: every table), in the order they opened."""
        sql = (f"SELECT unit_id, table_id, position, opened_at, ended_at, steps, facts "
               f"FROM {{s}}{self.unit_table}")
        with store.read() as tx:
            rows = (tx.query(sql + " WHERE table_id = ? ORDER BY position", (table_id,))
                    if table_id is not None else tx.query(sql + " ORDER BY position"))
        return [Unit(str(r[0]), str(r[1]), int(r[2]), str(r[3]), r[4], int(r[5]),
                     json.loads(r[6])) for r in rows]

    def unit(self, store: ReadStore, unit_id: str) -> Unit | None:
        with store.read() as tx:
            r = tx.one(f"SELECT unit_id, table_id, position, opened_at, ended_at, steps, facts "
                       f"FROM {{s}}{self.unit_table} WHERE unit_id = ?", (unit_id,))
        return None if r is None else Unit(str(r[0]), str(r[1]), int(r[2]), str(r[3]), r[4],
                                           int(r[5]), json.loads(r[6]))

    def unit_at(self, store: ReadStore, position: int) -> str | None:
        """The unit with a step recorded by the event at log ``position`` (None: none)."""
        with store.read() as tx:
            r = tx.one(f"SELECT unit_id FROM {{s}}{self.step_table} WHERE position = ?",
                       (position,))
        return None if r is None else str(r[0])

    def units_of(self, store: ReadStore, account: str) -> set[str]:
        """The units where ``account`` (an id of ``[a-z0-9-]``) is a value in a step's data: a
        seat, a stake, a movement's side, a banker..."""
        found: set[str] = set()
        with store.read() as tx:
            rows = tx.query(f"SELECT unit_id, data FROM {{s}}{self.step_table} WHERE data LIKE ?",
                            (f'%"{account}"%',))
            for unit_id, data in rows:
                if str(unit_id) not in found and _holds(json.loads(data), account):
                    found.add(str(unit_id))
        return found

    def steps_of(self, store: ReadStore, unit_id: str) -> list[Step]:
        """A unit's steps in order (none: an unknown unit)."""
        with store.read() as tx:
            rows = tx.query(f"SELECT unit_id, n, position, version, at, kind, data "
                            f"FROM {{s}}{self.step_table} WHERE unit_id = ? ORDER BY n",
                            (unit_id,))
        return [Step(str(r[0]), int(r[1]), int(r[2]), int(r[3]), str(r[4]), str(r[5]),
                     json.loads(r[6])) for r in rows]


def _holds(value: Any, text: str) -> bool:
    """Whether ``text`` is ``value`` or a string inside it (lists and objects, at any depth)."""
    if isinstance(value, dict):
        return any(_holds(v, text) for v in value.values())
    if isinstance(value, list):
        return any(_holds(v, text) for v in value)
    return bool(value == text)


def fold_log(events: Iterable[Any], opened: str, fold: Any) -> dict[str, Facts]:
    """The ledger's side: each unit's facts folded from stored events (``services.ledger
    .views.StoredEvent``, e.g. ``Core.logged``) by the game's ``fold``, as :class:`UnitsView`
    does: unit id -> its facts, with ``table_id``, in the order the units opened."""
    units: dict[str, Facts] = {}
    for e in events:
        oid = str(e.originator_id)
        if e.topic == opened:
            units[oid] = {}
        facts = units.get(oid)
        if facts is None:
            continue
        data = fields_of(e)
        at = e.timestamp or datetime.fromisoformat(str(e.state["timestamp"]))
        fold(facts, e.topic, data, at)
    return units


def day_of(facts: Facts, key: str, setting: GamingDay = DEFAULT) -> str | None:
    """The gaming day of the time a unit's ``fold`` stored under ``key`` (None: not yet)."""
    at = facts.get(key)
    return None if at is None else setting.of(datetime.fromisoformat(str(at)))[0]
