"""Game recall: every coup of every table with all its steps in order.

``rm_coup``: one row per coup (table, shoe, numbers, outcome, announcement, phase).
``rm_coup_step``: every recorded step of the coup in order (stakes, insurance, choices, cards,
outcome, settlement movements and fates) plus the money the betting commands moved (stakes,
premiums, withdrawals; from the accounts' entries whose cause names the coup, before it is dealt),
each with its event and who ran the command behind it (from its ``Request.Recorded``: see
``actors.ActorColumn``).
Queryable by table, shoe, coup, player (account) and time range: see :func:`recall`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from domain.errors import InvalidArgument
from services import topics as T
from services.ledger.ids import account_uuid
from services.projections.actors import (
    REQUEST_FIELDS,
    ActorColumn,
    Batch,
    Key,
    unattributed_index,
)
from services.projections.store import ReadStore, Tx
from services.projections.view import Envelope, Table, View

COUP = Table(
    "rm_coup",
    (
        ("coup_id", "TEXT"),
        ("table_id", "TEXT"),
        ("shoe_id", "TEXT"),
        ("number", "BIGINT"),
        ("number_in_shoe", "BIGINT"),
        ("start_position", "BIGINT"),
        ("opened_at", "TEXT"),
        ("resolved_at", "TEXT"),
        ("phase", "TEXT"),
        ("result", "TEXT"),
        ("noir_total", "BIGINT"),
        ("rouge_total", "BIGINT"),
        ("refait_total", "BIGINT"),
        ("couleur", "TEXT"),
        ("winning", "TEXT"),
        ("announcement", "TEXT"),
        ("cut_card_reached", "BIGINT"),
        ("steps", "BIGINT"),
    ),
    ("coup_id",),
    indexes=(("table_id", "number"), ("shoe_id",), ("opened_at",)),
)
ACCOUNT_NAME = Table(
    "rm_recall_account", (("originator_id", "TEXT"), ("account_id", "TEXT")), ("originator_id",)
)
STEP = Table(
    "rm_coup_step",
    (
        ("coup_id", "TEXT"),
        ("step", "BIGINT"),
        ("position", "BIGINT"),
        ("at", "TEXT"),
        ("kind", "TEXT"),
        ("account_id", "TEXT"),
        ("stake_id", "TEXT"),
        ("chance", "TEXT"),
        ("amount", "BIGINT"),
        ("detail", "TEXT"),
        ("version", "BIGINT"),  # its event's version (in the coup, or the account for Money.*)
        ("actor", "BIGINT"),  # who ran its command: an actor_id of rm_recall_actor
    ),
    ("coup_id", "step"),
    indexes=(("account_id",),),
    lookups=(("position",),),  # the coup with a step at a log position (the search)
)
RECALL_ACTOR = Table(
    "rm_recall_actor", (("actor_id", "BIGINT"), ("actor", "TEXT")), ("actor_id",)
)
_ACTOR = STEP.column_names.index("actor")
_CC = COUP.column_names
_I = {n: i for i, n in enumerate(_CC)}
_STEPS = _I["steps"]
_SHORT = {t: T.short(t) for t in T.COUP_EVENTS}  # topic -> the step's kind
_HOUSE = ("table:", "cage:")  # accounts that are not a player's


class RecallView(View):
    name = "recall"
    version = 2  # v2: each step's event and actor
    tables = (COUP, STEP, ACCOUNT_NAME, RECALL_ACTOR)
    topics = T.COUP_EVENTS | {T.ACCOUNT_OPENED, T.ACCOUNT_CREDITED, T.REQUEST_RECORDED}
    # of a request: its actor and effects only
    reads: ClassVar[Mapping[str, frozenset[str]]] = {T.REQUEST_RECORDED: REQUEST_FIELDS}

    def __init__(self) -> None:
        self._actors = ActorColumn("rm_coup_step", STEP.key, _ACTOR, lambda r: (r[0], r[1]),
                                   "rm_recall_actor", _unattributed)

    def create_sql(self) -> list[str]:
        return [*super().create_sql(), unattributed_index("rm_coup_step", "coup_id")]

    def apply(self, tx: Tx, batch: Sequence[Envelope]) -> None:
        coups = _RecallBatch(tx, batch, self._actors.batch())
        handlers = coups.handlers
        pending = coups.pending
        for e in batch:
            t = e.topic
            if t == T.REQUEST_RECORDED:
                pending.request(e.event, e.position)
                continue
            pending.event(e.position)
            handler = handlers.get(t)
            if handler is not None:
                handler(e)
            else:
                coups.step_of(e)
        coups.write()
        coups.handlers.clear()  # bound methods: a cycle; its rows are freed now, not by the
        coups.coup_steps.clear()  # cyclic collector (see projector._gc_paused)


_Row = list[Any]


class _RecallBatch:
    """One batch's coups and account names (read once, then kept) and the steps its events add:
    one handler per event kind (a coup's steps: :meth:`step_of`), then written back."""

    def __init__(self, tx: Tx, batch: Sequence[Envelope], pending: Batch) -> None:
        self.tx = tx
        self.pending = pending
        credited = [e for e in batch if e.topic == T.ACCOUNT_CREDITED]
        wanted = {e.oid for e in batch if e.topic in T.COUP_EVENTS}
        wanted |= {_coup_of_cause(e.event.cause) or "" for e in credited}
        self.coups: dict[str, _Row] = {
            r[0]: list(r)
            for r in tx.query_in(f"SELECT {', '.join(_CC)} FROM {{s}}rm_coup WHERE coup_id",
                                 wanted)
        }
        self.steps: list[_Row] = []
        self.names: dict[str, str] = {
            str(r[0]): str(r[1])
            for r in tx.query_in(
                "SELECT originator_id, account_id FROM {s}rm_recall_account WHERE originator_id",
                {e.oid for e in credited},
            )
        }
        self.new_names: list[tuple[str, str]] = []
        self.handlers: dict[str, Callable[[Envelope], None]] = {
            T.ACCOUNT_OPENED: self.account_opened,
            T.ACCOUNT_CREDITED: self.money,
            T.COUP_OPENED: self.coup_opened,
        }
        stake = self.stake
        self.coup_steps: dict[str, Callable[[_Row, Envelope, str], None]] = {
            **{t: stake for t in T.STAKE_EVENTS},
            T.COUP_STAKE_CARRIED_OVER: self.carried_over,
            T.COUP_MONEY_MOVED: self.money_moved,
            T.COUP_CARD_DEALT: self.card_dealt,
            T.COUP_RESOLVED: self.resolved,
            T.COUP_BETTING_CLOSED: self.betting_closed,
            T.COUP_SETTLED: self.settled,
            T.COUP_LAYOUT_RESTATED: self.layout_restated,
        }

    def name(self, oid: str) -> str:
        found = self.names.get(oid)
        if found is None:
            row = self.tx.one(
                "SELECT account_id FROM {s}rm_recall_account WHERE originator_id = ?", (oid,)
            )
            found = self.names[oid] = str(row[0]) if row else oid
        return found

    def coup(self, coup_id: str) -> _Row | None:
        row = self.coups.get(coup_id)
        if row is None:
            found = self.tx.one(f"SELECT {', '.join(_CC)} FROM {{s}}rm_coup WHERE coup_id = ?",
                                (coup_id,))
            if found is None:
                return None
            row = self.coups[coup_id] = list(found)
        return row

    def add(self, row: _Row, e: Envelope, kind: str, account: Any, stake: Any, chance: Any,
            amount: Any, detail: dict[str, Any]) -> None:
        """The coup's next step (its actor to come from its command's request)."""
        n = row[_STEPS] = int(row[_STEPS]) + 1
        version = e.event.originator_version
        step = [row[0], n, e.position, e.at, kind, account, stake, chance, amount,
                _json(detail), version, None]
        self.pending.add(e.oid, version, step, e.position)
        self.steps.append(step)

    def account_opened(self, e: Envelope) -> None:
        self.names[e.oid] = e.event.account_id
        self.new_names.append((e.oid, e.event.account_id))

    def money(self, e: Envelope) -> None:
        """Money a betting command moved (a stake, a premium, a withdrawal), from the entry of
        the account credited whose cause names the coup, before the coup is dealt."""
        ev = e.event
        cid = _coup_of_cause(ev.cause)
        row = self.coup(cid) if cid else None
        if row is None or row[_I["phase"]] not in ("betting", "closed"):
            return  # settlement money is recorded by the coup's own movements
        source, dest = ev.counter_account, self.name(e.oid)
        player = dest if source.startswith(_HOUSE) else source
        self.add(row, e, "Money." + ev.kind, player, ev.stake_id, None, ev.amount,
                 {"kind": ev.kind, "debit": source, "credit": dest})

    def coup_opened(self, e: Envelope) -> None:
        ev, oid = e.event, e.oid
        row = self.coups[oid] = [
            oid, ev.table_id, ev.shoe_id, int(ev.number), int(ev.number_in_shoe),
            int(ev.start_position), e.at, None, "betting", None, None, None,
            None, None, "", None, 0, 0,
        ]
        self.add(row, e, "Coup.Opened", None, None, None, None,
                 {"number": ev.number, "number_in_shoe": ev.number_in_shoe,
                  "start_position": ev.start_position})

    def step_of(self, e: Envelope) -> None:
        """Any other event of a coup: the step its kind records (of a coup already opened)."""
        t = e.topic
        row = self.coup(e.oid)
        if row is None:
            raise LookupError(f"event {t} of unknown coup {e.oid} at {e.position}")
        step = self.coup_steps.get(t)
        if step is not None:
            step(row, e, _SHORT.get(t) or T.short(t))

    def stake(self, row: _Row, e: Envelope, kind: str) -> None:
        ev = e.event
        self.add(row, e, kind, ev.account_id, ev.stake_id, ev.chance, ev.amount_after,
                 {"fate": ev.fate, "amount_before": ev.amount_before,
                  "amount_after": ev.amount_after, "status_after": ev.status_after})

    def carried_over(self, row: _Row, e: Envelope, kind: str) -> None:
        s = e.event.stake
        self.add(row, e, kind, s.player, s.stake_id, _v(s.chance), s.amount,
                 {"from_coup_id": e.event.from_coup_id, "status": _v(s.status)})

    def money_moved(self, row: _Row, e: Envelope, kind: str) -> None:
        ev = e.event
        self.add(row, e, kind, ev.account_id, ev.stake_id, ev.chance, ev.amount,
                 {"seq": ev.seq, "kind": ev.kind, "debit": ev.debit_account,
                  "credit": ev.credit_account})

    def card_dealt(self, row: _Row, e: Envelope, kind: str) -> None:
        ev = e.event
        self.add(row, e, kind, None, None, None, None,
                 {"row": ev.row, "code": ev.code, "position": ev.position,
                  "running_total": ev.running_total})

    def resolved(self, row: _Row, e: Envelope, kind: str) -> None:
        """The coup dealt: its result, the rows' totals (a refait's too), couleur or inverse,
        the chances that won and the croupier's announcement."""
        ev = e.event
        row[_I["resolved_at"]] = e.at
        row[_I["phase"]] = "dealt"
        row[_I["result"]] = _v(ev.result)
        row[_I["noir_total"]] = ev.noir_total
        row[_I["rouge_total"]] = ev.rouge_total
        row[_I["refait_total"]] = ev.refait_total
        row[_I["couleur"]] = (
            None if ev.couleur is None else ("couleur" if ev.couleur else "inverse")
        )
        row[_I["winning"]] = ",".join(sorted(_v(c) for c in ev.winning_chances))
        row[_I["announcement"]] = ev.announcement
        row[_I["cut_card_reached"]] = int(bool(ev.cut_card_reached))
        self.add(row, e, kind, None, None, None, None,
                 {"result": _v(ev.result), "noir_total": ev.noir_total,
                  "rouge_total": ev.rouge_total, "announcement": ev.announcement})

    def betting_closed(self, row: _Row, e: Envelope, kind: str) -> None:
        row[_I["phase"]] = "closed"
        self.add(row, e, kind, None, None, None, None, {})

    def settled(self, row: _Row, e: Envelope, kind: str) -> None:
        row[_I["phase"]] = "settled"
        self.add(row, e, kind, None, None, None, None, {})

    def layout_restated(self, row: _Row, e: Envelope, kind: str) -> None:
        self.add(row, e, kind, None, None, None, None,
                 {"stakes": [[s.stake_id, s.player, _v(s.chance), s.amount, _v(s.status)]
                             for s in e.event.stakes]})

    def write(self) -> None:
        tx = self.tx
        tx.executemany(
            f"INSERT INTO {{s}}rm_coup ({', '.join(_CC)}) VALUES ({', '.join('?' * len(_CC))}) "
            "ON CONFLICT (coup_id) DO UPDATE SET "
            + ", ".join(f"{c} = excluded.{c}" for c in _CC[1:]),
            list(self.coups.values()),
        )
        tx.executemany(
            "INSERT INTO {s}rm_recall_account (originator_id, account_id) VALUES (?, ?)",
            self.new_names,
        )
        tx.executemany(
            f"INSERT INTO {{s}}rm_coup_step ({', '.join(STEP.column_names)}) "
            f"VALUES ({', '.join('?' * len(STEP.columns))})",
            self.steps,
        )
        self.pending.finish(tx)  # steps of earlier batches whose command's request came now


def _unattributed(tx: Tx) -> list[tuple[Key, tuple[Any, ...]]]:
    """Steps left without an actor (partial index), each with its event's key: the coup's own
    event, or for ``Money.*`` the credited account's entry."""
    out: list[tuple[Key, tuple[Any, ...]]] = []
    for coup_id, step, kind, version, detail in tx.query(
        "SELECT coup_id, step, kind, version, detail FROM {s}rm_coup_step WHERE actor IS NULL"
    ):
        oid = str(coup_id)
        if str(kind).startswith("Money."):
            oid = str(account_uuid(str(json.loads(detail).get("credit", ""))))
        out.append(((oid, int(version)), (coup_id, step)))
    return out


def _v(x: Any) -> Any:
    return getattr(x, "value", x)


try:
    import orjson

    _SORT = orjson.OPT_SORT_KEYS

    def _json(detail: dict[str, Any]) -> str:
        return orjson.dumps(detail, option=_SORT).decode()

except ImportError:  # pragma: no cover - the same text, more slowly

    def _json(detail: dict[str, Any]) -> str:
        return json.dumps(detail, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          default=_v)


def _coup_of_cause(cause: str | None) -> str | None:
    """The coup id a movement's cause names (``coup:<id>`` or ``<id>``), if any."""
    if not cause:
        return None
    return cause.split(":", 1)[1] if cause.startswith("coup:") else cause


MAX_LIMIT = 10_000


def iso_time(text: str | None, field: str) -> str | None:
    """``text`` as the canonical ISO 8601 UTC text the views store (a date means its start)."""
    if text is None:
        return None
    try:
        at = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise InvalidArgument(field, "BAD_TIME", f"must be ISO 8601, got {text!r}") from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at.astimezone(UTC).isoformat()


@dataclass(frozen=True, slots=True)
class RecalledStep:
    step: int
    position: int
    at: str
    kind: str
    account_id: str | None
    stake_id: str | None
    chance: str | None
    amount: int | None
    detail: dict[str, Any]
    actor: dict[str, Any] | None = None  # who ran the command behind the step


@dataclass(frozen=True, slots=True)
class RecalledCoup:
    coup_id: str
    table_id: str
    shoe_id: str
    number: int
    number_in_shoe: int
    opened_at: str
    result: str | None
    noir_total: int | None
    rouge_total: int | None
    announcement: str | None
    phase: str
    steps: tuple[RecalledStep, ...]
    dealt_by: dict[str, Any] | None = None  # the actor of the deal (None: not dealt yet)


def recall(
    store: ReadStore,
    *,
    table_id: str | None = None,
    shoe_id: str | None = None,
    coup_id: str | None = None,
    player: str | None = None,
    since: str | None = None,
    until: str | None = None,
    limit: int = 100,
    position: int | None = None,
) -> list[RecalledCoup]:
    """Coups matching every filter given (times are ISO 8601, ``since`` <= opened_at <
    ``until``; ``position``: the coup with a step at that log position), newest first, each
    with all its steps in order. InvalidArgument names ``limit`` (1..10000), ``since`` or
    ``until`` (not ISO 8601)."""
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidArgument("limit", "OUT_OF_RANGE", f"must be 1 to {MAX_LIMIT}")
    since = iso_time(since, "since")
    until = iso_time(until, "until")
    where: list[str] = []
    params: list[Any] = []
    for col, val in (("table_id", table_id), ("shoe_id", shoe_id), ("coup_id", coup_id)):
        if val is not None:
            where.append(f"c.{col} = ?")
            params.append(val)
    if since is not None:
        where.append("c.opened_at >= ?")
        params.append(since)
    if until is not None:
        where.append("c.opened_at < ?")
        params.append(until)
    if player is not None:
        where.append(
            "EXISTS (SELECT 1 FROM {s}rm_coup_step p WHERE p.coup_id = c.coup_id "
            "AND p.account_id = ?)"
        )
        params.append(player)
    if position is not None:
        # the steps at that position first (an index lookup), then their coups: not a scan
        # of every coup's steps
        where.append("c.coup_id IN (SELECT q.coup_id FROM {s}rm_coup_step q WHERE q.position = ?)")
        params.append(position)
    sql = (
        "SELECT c.coup_id, c.table_id, c.shoe_id, c.number, c.number_in_shoe, c.opened_at, "
        "c.result, c.noir_total, c.rouge_total, c.announcement, c.phase FROM {s}rm_coup c"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " ORDER BY c.opened_at DESC, c.table_id, c.number DESC LIMIT ?"
    )
    params.append(limit)
    out: list[RecalledCoup] = []
    with store.read() as tx:
        for r in tx.query(sql, params):
            steps = tuple(
                RecalledStep(int(s[0]), int(s[1]), s[2], s[3], s[4], s[5], s[6],
                             None if s[7] is None else int(s[7]), json.loads(s[8]),
                             json.loads(s[9]) if s[9] else None)
                for s in tx.query(
                    "SELECT s.step, s.position, s.at, s.kind, s.account_id, s.stake_id, s.chance, "
                    "s.amount, s.detail, a.actor FROM {s}rm_coup_step s LEFT JOIN "
                    "{s}rm_recall_actor a ON a.actor_id = s.actor WHERE s.coup_id = ? "
                    "ORDER BY s.step",
                    (r[0],),
                )
            )
            dealt_by = next((s.actor for s in steps if s.kind == "Coup.Resolved"), None)
            out.append(RecalledCoup(r[0], r[1], r[2], int(r[3]), int(r[4]), r[5], r[6],
                                    r[7], r[8], r[9], r[10], steps, dealt_by))
    return out
