"""Reconciliation figures per table, gaming day and shift, kept as additive metrics.

``rm_recon`` holds one amount per (table, gaming day, shift, metric, chance):

- ``handle`` / ``handle_sq`` per chance: the sum of the stakes in action at every decided coup
  (every settlement fate of a coup that was not void, refaits included) and of their squares;
- ``handle.<state>`` / ``handle_sq.<state>`` per chance: the same, split by the stake's state
  before the coup (``domain.trente_et_quarante.odds.stake_state``: ``free``, ``prison``,
  ``second_prison``, then
  ``:insured`` and ``:partage`` / ``:prison`` for the player's choice), which decides what the
  coup can do to it (the theoretical win and its interval apply each state's exact law);
- ``partage_chosen``: what the house took from stakes outside a coup's settlement, by a
  player's decision (a partage chosen after a 31, a half withdrawal, an imprisoned stake moved)
  or by the table's close (a prisoner half returned), a sure gain included in ``partage``;
- ``coups``, ``void_coups``; ``collections``, ``payments`` and ``coup_result`` (money into the
  bank minus money out of it, from the coups' own settlement movements);
- ``bank_net``, ``premiums``, ``partage``, ``prison_loss``: the net movement of the table's bank
  and house accounts, from the accounts' entries;
- ``cash_in`` / ``cash_out`` at the cage (table id = the cage account);
- ``prison_outstanding``: the imprisoned stakes on the layout after the last change in that shift.

Gaming day and shift come from the event time and the site's setting (:mod:`gamingday`:
``SABOT_GAMING_DAY``, ``SABOT_SHIFTS``); by default the day starts at 06:00 UTC and has three
shifts of eight hours (1: 06-14, 2: 14-22, 3: 22-06). The rows depend on the setting, so it is
part of the view's schema digest kept in ``rm_tracking`` (the default adds nothing: the digest is
the one of the versions before the setting). A process that starts with another setting rebuilds
the view from the log, as after a change of its code; a process still running with the previous
one then refuses to write into it (:class:`tracking.SchemaChanged`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from services import topics as T
from services.projections.fates import SETTLEMENT_FATES
from services.projections.games import CoupLaw
from services.projections.gamingday import DEFAULT, GamingDay, in_schema, schema_mark
from services.projections.store import ReadStore, Tx
from services.projections.view import Envelope, Table, View

DAY_START_HOUR = 6  # of the default setting (06:00 UTC, three shifts of eight hours)
SHIFT_HOURS = 8
PRISON_STATUSES = frozenset({"prison", "second_prison"})
# Fates outside a coup's settlement that give the house part of a stake, a sure gain: a
# player's decision between coups (a partage chosen after a 31, a half withdrawal, an imprisoned
# stake moved) or a table's close (a prisoner half returned): the house takes ``amount // 2``
# (``domain.trente_et_quarante.money.house_half``); a free stake moved loses nothing.
CHOSEN_TAKES = frozenset({"partage", "half_withdrawn", "moved", "half_returned"})
_HALF_TAKEN = frozenset({"half_withdrawn", "half_returned"})  # the stake leaves: half is taken
OVERWRITTEN = frozenset({"prison_outstanding"})
_ENTRIES = frozenset({T.ACCOUNT_DEBITED, T.ACCOUNT_CREDITED})
HOUSE_METRIC = {
    "bank": "bank_net",
    "house_insurance": "premiums",
    "house_partage": "partage",
    "house_prison": "prison_loss",
}

RECON = Table(
    "rm_recon",
    (
        ("table_id", "TEXT"),
        ("gaming_day", "TEXT"),
        ("shift", "BIGINT"),
        ("metric", "TEXT"),
        ("chance", "TEXT"),
        ("amount", "BIGINT"),
    ),
    ("table_id", "gaming_day", "shift", "metric", "chance"),
    indexes=(("gaming_day",),),
)
RECON_TABLE = Table(
    "rm_recon_table",
    (("table_id", "TEXT"), ("preset", "TEXT"), ("currency", "TEXT"), ("options", "TEXT")),
    ("table_id",),
)
RECON_ACCOUNT = Table(
    "rm_recon_account",
    (("originator_id", "TEXT"), ("account_id", "TEXT"), ("kind", "TEXT"), ("table_id", "TEXT")),
    ("originator_id",),
)
RECON_COUP = Table(
    "rm_recon_coup",
    (("coup_id", "TEXT"), ("table_id", "TEXT"), ("phase", "TEXT"), ("result", "TEXT")),
    ("coup_id",),
)
RECON_STAKE = Table(  # the state of the stakes on a layout, when not plain ``free``
    "rm_recon_stake",
    (("table_id", "TEXT"), ("stake_id", "TEXT"), ("state", "TEXT")),
    ("table_id", "stake_id"),
)
RECON_PRISON = Table(
    "rm_recon_prison",
    (("table_id", "TEXT"), ("stake_id", "TEXT"), ("amount", "BIGINT")),
    ("table_id", "stake_id"),
)


def stake_state(stake: Any) -> str:
    """The state of a (decoded) stake, as ``domain.trente_et_quarante.odds.stake_state`` names
    it."""
    status = getattr(stake.status, "value", stake.status)
    choice = getattr(stake.choice, "value", stake.choice)
    return str(status) + (":insured" if stake.insured else "") + (f":{choice}" if choice else "")


def gaming_day_and_shift(at: datetime, setting: GamingDay = DEFAULT) -> tuple[str, int]:
    """The gaming day (ISO date) and shift (1..n) of a time (naive: UTC) under ``setting``."""
    return setting.of(at)


def stored_setting(store: ReadStore) -> GamingDay:
    """The setting the reconciliation rows were built with (from ``rm_tracking``; the default
    when the view is not there yet or was built before the setting existed)."""
    if not store.table_exists("rm_tracking"):
        return DEFAULT
    with store.read() as tx:
        row = tx.one("SELECT schema FROM {s}rm_tracking WHERE view = ?", (ReconciliationView.name,))
    found = in_schema(str(row[0])) if row else None
    return DEFAULT if found is None else found


Key = tuple[str, str, int, str, str]
V = TypeVar("V")


def _per_stake(tx: Tx, cache: dict[str, dict[str, V]], table: str, column: str, name: str,
               convert: Callable[[Any], V]) -> dict[str, V]:
    """A table's stake id -> ``column`` rows of ``name``, read once per batch (then cached)."""
    found = cache.get(table)
    if found is None:
        found = cache[table] = {
            str(r[0]): convert(r[1])
            for r in tx.query(
                f"SELECT stake_id, {column} FROM {{s}}{name} WHERE table_id = ?", (table,)
            )
        }
    return found


class ReconciliationView(View):
    name = "reconciliation"
    version = 2  # 2: handle by the stake's state (handle.<state>, handle_sq.<state>)
    tables = (RECON, RECON_TABLE, RECON_ACCOUNT, RECON_COUP, RECON_PRISON, RECON_STAKE)
    topics = frozenset(
        {T.TABLE_OPENED, T.ACCOUNT_OPENED, T.ACCOUNT_DEBITED, T.ACCOUNT_CREDITED, T.COUP_OPENED,
         T.COUP_RESOLVED, T.COUP_SETTLED, T.COUP_MONEY_MOVED, T.COUP_LAYOUT_RESTATED}
    ) | T.STAKE_EVENTS

    def __init__(self, gaming_day: GamingDay | None = DEFAULT, *,
                 coup_law: CoupLaw | None = None) -> None:
        """``gaming_day`` None: the setting the rows were built with (see ``adopt``);
        ``coup_law``: the law of one coup (``ReadGame.coup_law``), by which the gaming-day report
        computes the theoretical win (None: it is unknown)."""
        self.coup_law = coup_law
        self.adopting = gaming_day is None
        self.gaming_day = DEFAULT if gaming_day is None else gaming_day
        self._of = self.gaming_day.resolver()

    def adopt(self, store: ReadStore) -> None:
        """Take the stored setting when none was given (called by the projector first)."""
        if self.adopting:
            self.gaming_day = stored_setting(store)
            self._of = self.gaming_day.resolver()

    def schema_digest(self) -> str:
        """The tables' digest; with a setting other than the default, a digest that covers it
        too, followed by the setting in clear (see :func:`gamingday.in_schema`)."""
        digest = super().schema_digest()
        if self.gaming_day.is_default:
            return digest
        setting = schema_mark(self.gaming_day)
        return hashlib.sha256(f"{digest}{setting}".encode()).hexdigest()[:16] + setting

    def apply(self, tx: Tx, batch: Sequence[Envelope]) -> None:
        figures = _ReconBatch(tx, batch, self._of)
        handlers = figures.handlers
        stake = figures.stake
        for e in batch:
            handlers.get(e.topic, stake)(e)
        figures.write()
        handlers.clear()  # bound methods: a cycle; its rows are freed now, not by the collector


class _ReconBatch:
    """One batch's figures: the accounts, coups and layouts it touches (read once, then kept),
    the sums it adds and the prisons outstanding it overwrites, one handler per event kind;
    then written back."""

    def __init__(self, tx: Tx, batch: Sequence[Envelope],
                 of: Callable[[datetime], tuple[str, int]]) -> None:
        self.tx = tx
        self.of = of
        self.sums: dict[Key, int] = {}
        self.accounts: dict[str, tuple[str, str, str | None]] = {
            str(r[0]): (str(r[1]), str(r[2]), r[3])
            for r in tx.query_in(
                "SELECT originator_id, account_id, kind, table_id FROM {s}rm_recon_account "
                "WHERE originator_id",
                {e.oid for e in batch if e.topic in _ENTRIES},
            )
        }
        self.new_accounts: list[tuple[Any, ...]] = []
        self.coups: dict[str, list[Any]] = {
            str(r[0]): list(r)
            for r in tx.query_in(
                "SELECT coup_id, table_id, phase, result FROM {s}rm_recon_coup WHERE coup_id",
                {e.oid for e in batch if e.topic in T.COUP_EVENTS},
            )
        }
        self.prisons: dict[str, dict[str, int]] = {}
        self.states: dict[str, dict[str, str]] = {}
        self.states_changed: set[str] = set()
        self.prison_changed: dict[str, Envelope] = {}
        self.new_tables: list[tuple[Any, ...]] = []
        self.shifts: dict[str, tuple[str, int]] = {}
        self.handlers: dict[str, Callable[[Envelope], None]] = {
            T.TABLE_OPENED: self.table_opened,
            T.ACCOUNT_OPENED: self.account_opened,
            T.ACCOUNT_DEBITED: self.entry,
            T.ACCOUNT_CREDITED: self.entry,
            T.COUP_OPENED: self.coup_opened,
            T.COUP_RESOLVED: self.resolved,
            T.COUP_SETTLED: self.settled,
            T.COUP_MONEY_MOVED: self.money_moved,
            T.COUP_LAYOUT_RESTATED: self.layout_restated,
        }

    def add(self, table: str, e: Envelope, metric: str, amount: int, chance: str = "") -> None:
        """``amount`` more of ``metric`` at ``table`` in the gaming day and shift of ``e``."""
        ds = self.shifts.get(e.at)
        if ds is None:
            ds = self.shifts[e.at] = self.of(e.time)
        day, shift = ds
        key = (table, day, shift, metric, chance)
        self.sums[key] = self.sums.get(key, 0) + amount

    def account(self, oid: str) -> tuple[str, str, str | None]:
        found = self.accounts.get(oid)
        if found is None:
            row = self.tx.one(
                "SELECT account_id, kind, table_id FROM {s}rm_recon_account "
                "WHERE originator_id = ?",
                (oid,),
            )
            if row is None:
                raise LookupError(f"movement on unknown account {oid}")
            found = self.accounts[oid] = (str(row[0]), str(row[1]), row[2])
        return found

    def coup(self, oid: str) -> list[Any]:
        row = self.coups.get(oid)
        if row is None:
            found = self.tx.one(
                "SELECT coup_id, table_id, phase, result FROM {s}rm_recon_coup "
                "WHERE coup_id = ?",
                (oid,),
            )
            if found is None:
                raise LookupError(f"event of unknown coup {oid}")
            row = self.coups[oid] = list(found)
        return row

    def prison(self, table: str) -> dict[str, int]:
        """The imprisoned stakes on ``table``'s layout: stake id -> amount."""
        return _per_stake(self.tx, self.prisons, table, "amount", "rm_recon_prison", int)

    def state(self, table: str) -> dict[str, str]:
        """The stakes on ``table``'s layout not plain ``free``: stake id -> state."""
        return _per_stake(self.tx, self.states, table, "state", "rm_recon_stake", str)

    def table_opened(self, e: Envelope) -> None:
        ev = e.event
        self.new_tables.append(
            (ev.table_id, ev.preset, ev.options.get("currency", ""),
             json.dumps(dict(ev.options), sort_keys=True))
        )

    def account_opened(self, e: Envelope) -> None:
        ev = e.event
        self.accounts[e.oid] = (ev.account_id, ev.kind, ev.table_id)
        self.new_accounts.append((e.oid, ev.account_id, ev.kind, ev.table_id))

    def entry(self, e: Envelope) -> None:
        """An entry of an account: the net of the table's bank and house accounts, the cash
        in and out at the cage."""
        ev = e.event
        name, kind, table = self.account(e.oid)
        credit = e.topic == T.ACCOUNT_CREDITED
        if kind in HOUSE_METRIC and table is not None:
            self.add(table, e, HOUSE_METRIC[kind], ev.amount if credit else -ev.amount)
        elif kind == "cage":
            self.add(name, e, "cash_out" if credit else "cash_in", ev.amount)

    def coup_opened(self, e: Envelope) -> None:
        self.coups[e.oid] = [e.oid, e.event.table_id, "open", None]

    def resolved(self, e: Envelope) -> None:
        """The coup dealt: one more coup, or void coup, in the shift."""
        ev = e.event
        row = self.coup(e.oid)
        row[2], row[3] = "dealt", str(getattr(ev.result, "value", ev.result))
        self.add(row[1], e, "void_coups" if row[3] == "void" else "coups", 1)

    def settled(self, e: Envelope) -> None:
        self.coup(e.oid)[2] = "settled"

    def money_moved(self, e: Envelope) -> None:
        """A settlement movement of a dealt coup: collections, payments, the coup's result."""
        ev = e.event
        row = self.coup(e.oid)
        if row[2] != "dealt":
            return  # the shoe's end: free stakes going back, no game result
        bank = f"table:{row[1]}:bank"
        if ev.kind in ("collection", "payment"):
            self.add(row[1], e, ev.kind + "s", ev.amount)
        if ev.credit_account == bank:
            self.add(row[1], e, "coup_result", ev.amount)
        if ev.debit_account == bank:
            self.add(row[1], e, "coup_result", -ev.amount)

    def layout_restated(self, e: Envelope) -> None:
        """The layout as a whole (carried over to the next coup): its prisoners and the
        states of its stakes, replaced."""
        ev = e.event
        row = self.coup(e.oid)
        held = self.prison(row[1])
        held.clear()
        for s in ev.stakes:
            if getattr(s.status, "value", s.status) in PRISON_STATUSES:
                held[s.stake_id] = s.amount
        self.prison_changed[row[1]] = e
        kept = self.state(row[1])
        now = {s.stake_id: stake_state(s) for s in ev.stakes}
        now = {k: v for k, v in now.items() if v != "free"}
        if now != kept:
            kept.clear()
            kept.update(now)
            self.states_changed.add(row[1])

    def stake(self, e: Envelope) -> None:
        """A stake's fate: its handle at a decided coup (by its state before it) or what a
        partage chosen took; then its state and its prison after it."""
        ev = e.event
        row = self.coup(e.oid)
        kept = self.state(row[1])
        if row[2] == "dealt" and row[3] != "void" and ev.fate in SETTLEMENT_FATES:
            before = kept.get(ev.stake_id, "free")
            sq = ev.amount_before * ev.amount_before
            self.add(row[1], e, "handle", ev.amount_before, ev.chance)
            self.add(row[1], e, "handle_sq", sq, ev.chance)
            self.add(row[1], e, "handle." + before, ev.amount_before, ev.chance)
            self.add(row[1], e, "handle_sq." + before, sq, ev.chance)
        elif ev.fate in CHOSEN_TAKES:
            taken = (ev.amount_before // 2 if ev.fate in _HALF_TAKEN
                     else ev.amount_before - ev.amount_after)
            if taken:
                self.add(row[1], e, "partage_chosen", taken)
        self.stake_after(row[1], e, kept)

    def stake_after(self, table: str, e: Envelope, kept: dict[str, str]) -> None:
        """The stake's state after its fate (gone when plain ``free``) and its prison."""
        ev = e.event
        st = ev.stake
        after = ("free" if st is None or (
            st.status == "free" and not st.insured and not st.choice) else stake_state(st))
        if after != kept.get(ev.stake_id, "free"):
            if after == "free":
                del kept[ev.stake_id]
            else:
                kept[ev.stake_id] = after
            self.states_changed.add(table)
        held = self.prison(table)
        was = held.get(ev.stake_id)
        if ev.status_after in PRISON_STATUSES:
            held[ev.stake_id] = ev.amount_after
        else:
            held.pop(ev.stake_id, None)
        if held.get(ev.stake_id) != was:
            self.prison_changed[table] = e

    def write(self) -> None:
        tx = self.tx
        tx.executemany(
            "INSERT INTO {s}rm_recon_table (table_id, preset, currency, options) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (table_id) DO NOTHING",
            self.new_tables,
        )
        tx.executemany(
            "INSERT INTO {s}rm_recon_account (originator_id, account_id, kind, table_id) "
            "VALUES (?, ?, ?, ?)",
            self.new_accounts,
        )
        tx.executemany(
            "INSERT INTO {s}rm_recon_coup (coup_id, table_id, phase, result) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (coup_id) DO UPDATE SET phase = excluded.phase, result = excluded.result",
            list(self.coups.values()),
        )
        self.write_layouts()
        self.write_figures()

    def write_layouts(self) -> None:
        """The prisoners and stake states of every layout touched, replaced."""
        tx = self.tx
        for table, held in self.prisons.items():
            tx.execute("DELETE FROM {s}rm_recon_prison WHERE table_id = ?", (table,))
            tx.executemany(
                "INSERT INTO {s}rm_recon_prison (table_id, stake_id, amount) VALUES (?, ?, ?)",
                [(table, k, v) for k, v in held.items()],
            )
        for table in self.states_changed:
            tx.execute("DELETE FROM {s}rm_recon_stake WHERE table_id = ?", (table,))
            tx.executemany(
                "INSERT INTO {s}rm_recon_stake (table_id, stake_id, state) VALUES (?, ?, ?)",
                [(table, k, v) for k, v in self.states[table].items()],
            )

    def write_figures(self) -> None:
        """The sums added to the figures; the prisons outstanding in their last shift."""
        overwrite: dict[Key, int] = {}
        for table, e in self.prison_changed.items():
            day, shift = self.of(e.time)
            overwrite[(table, day, shift, "prison_outstanding", "")] = sum(
                self.prisons[table].values())
        self.tx.executemany(
            "INSERT INTO {s}rm_recon AS r (table_id, gaming_day, shift, metric, chance, amount) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (table_id, gaming_day, shift, metric, chance) "
            "DO UPDATE SET amount = r.amount + excluded.amount",
            [(*k, v) for k, v in self.sums.items()],
        )
        self.tx.executemany(
            "INSERT INTO {s}rm_recon (table_id, gaming_day, shift, metric, chance, amount) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (table_id, gaming_day, shift, metric, chance) "
            "DO UPDATE SET amount = excluded.amount",
            [(*k, v) for k, v in overwrite.items()],
        )
