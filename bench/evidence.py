"""What the evidence chain costs: per stake on the write path, per coup on the verifying side.

Write path (no gRPC; each store): the same stake load as ``bench.ledger`` (32 clients through
the batching writer, and one client placing stakes one command per batch, the worst case: one
signature per stake), with the evidence on and off (``LedgerConfig(evidence=False)``, a setting
for this comparison only), and with the evidence on but the writer's own checks off (issue 20:
the chain's last link confirmed before each save, the committed events remembered, every
loaded event checked against its link; ``_unchecked``, for this comparison only), in
alternating rounds of one run; figures are medians over the rounds.
``cpu_ms_per_stake`` is this process's processor time (every thread: clients, writer, commit)
per stake; PostgreSQL's own processes are not in it. The parts are also timed alone: making one
batch's link (hashes, signature) and rewriting the head file (with its line appended to the
history of signed links, ``SABOT_CHAIN_HEAD.links``).

Verifying (SQLite): a whole shoe played with evidence, notarised and exported whole; the time
``sabot-verify`` takes per coup, and apart from it the time of its chain walk and of its money
checks (the rest is what verifying cost without the evidence); and ``sabot replay`` of a coup
with its chain check, beside the chain check alone.
"""

from __future__ import annotations

import dataclasses
import io
import os
import random
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from bench._support import drop_pg_database, fresh_pg_database
from services.bootstrap import LEDGER_GAMES, REGULATOR_GAMES
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig

KEY = bytes(range(32))
CHAIN_KEY = bytes([0x3E]) * 32
CHANCES = ("noir", "rouge", "couleur", "inverse")
PG_DB = f"sabot_bench_evidence_{os.getpid()}"
ROUNDS = int(os.environ.get("SABOT_BENCH_EVIDENCE_ROUNDS", "3"))

Row = tuple[str, float]


def _config(url: str, evidence: bool, head: str | None = None) -> LedgerConfig:
    return LedgerConfig(store_url=url, seal_key=KEY, chain_key=CHAIN_KEY, evidence=evidence,
                        chain_head=head)


def _table(ledger: Ledger, table: str) -> str:
    ledger.open_table(f"{table}-o", table, "francaise", {"allow_opposed_stakes": "true"})
    shoe = ledger.open_shoe(f"{table}-s", table)
    ledger.cut(f"{table}-c", shoe.shoe_id, 100, "croupier")
    return ledger.open_coup(f"{table}-oc", table).coup_id


def _unchecked(ledger: Ledger) -> None:
    """The evidence on, the writer's checks of it off (what they cost)."""
    chain = ledger.app.evidence
    if chain is not None:
        chain.checks = False
        ledger.app.use_evidence(chain)


def concurrent(url: str, evidence: bool, head: str | None, clients: int = 32,
               per_client: int = 40, checks: bool = True) -> tuple[float, float]:
    """(stakes/s, cpu ms per stake) of ``clients`` threads through the batching writer."""
    ledger = Ledger(_config(url, evidence, head), batching=True, games=LEDGER_GAMES)
    if not checks:
        _unchecked(ledger)
    tables = [f"c{t}" for t in range(clients // 8)]
    coups = {t: _table(ledger, t) for t in tables}
    players = [f"{tables[i % len(tables)]}-p{i}" for i in range(clients)]
    for p in players:
        ledger.open_account(f"{p}-a", p)
        ledger.deposit(f"{p}-d", p, 10**9)
    barrier = threading.Barrier(clients + 1)

    def client(i: int) -> None:
        p = players[i]
        coup = coups[p.split("-")[0]]
        barrier.wait()
        for k in range(per_client):
            ledger.place_stake(f"{p}-{k}", coup, p, CHANCES[k % 4], 100)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    t0, c0 = time.perf_counter(), time.process_time()
    for t in threads:
        t.join()
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    ledger.close()
    n = clients * per_client
    return n / elapsed, 1000 * cpu / n


def sequential(url: str, evidence: bool, head: str | None, stakes: int = 400,
               checks: bool = True) -> tuple[float, float]:
    """(stakes/s, cpu ms per stake) of one client: every stake a batch of its own."""
    ledger = Ledger(_config(url, evidence, head), games=LEDGER_GAMES)
    if not checks:
        _unchecked(ledger)
    coup = _table(ledger, "s0")
    players = [f"s0-p{i}" for i in range(8)]
    for p in players:
        ledger.open_account(f"{p}-a", p)
        ledger.deposit(f"{p}-d", p, 10**9)
    t0, c0 = time.perf_counter(), time.process_time()
    for k in range(stakes):
        ledger.place_stake(f"q{k}", coup, players[k % 8], CHANCES[k % 4], 100)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    ledger.close()
    return stakes / elapsed, 1000 * cpu / stakes


def _parts() -> list[Row]:
    """A batch's link made alone (32 stakes' events), and the head file rewritten alone."""
    from eventsourcing.persistence import StoredEvent

    from services.ledger.evidence import ChainKey, ChainWriter, Head

    class _Recorder:
        def select_events(self, *a: Any, **k: Any) -> list[Any]:
            return []

        def max_notification_id(self) -> int:
            return 0

    tmp = tempfile.mkdtemp(prefix="sabot-bench-head-")
    try:
        writer = ChainWriter(_Recorder(), ChainKey.from_raw(CHAIN_KEY), Path(tmp) / "head.json")
        state = (b'{"account_id":"c0-p1","amount":100,"balance":999999900,"cause":"stake",'
                 b'"counter_account":"table:c0:layout","kind":"stake","stake_id":"' + b"0" * 36
                 + b'","timestamp":{"_data_":"2026-01-01T00:00:00+00:00","_type_":'
                 b'"datetime_iso"}}')
        events = [StoredEvent(UUID(int=i + 1), 7, "sabot.ledger:Account.Debited", state)
                  for i in range(32 * 5)]  # a stake: four events and its request
        writer._head = Head(10, b"\1" * 32, 1000, writer.key.key_id)
        now = datetime(2026, 1, 1, tzinfo=UTC)
        n = 200
        t0 = time.perf_counter()
        for _ in range(n):
            pending = writer.link(events, [], now)
        link_ms = 1000 * (time.perf_counter() - t0) / n
        heads = [dataclasses.replace(pending.head, seq=pending.head.seq + i) for i in range(n)]
        t0 = time.perf_counter()
        for head in heads:  # each a later link (a lower one is never written)
            writer._write_head_file(head)
        head_ms = 1000 * (time.perf_counter() - t0) / n
        writer.head_file = None
        single = events[:5]
        t0 = time.perf_counter()
        for _ in range(n):
            writer.link(single, [], now)
        one_ms = 1000 * (time.perf_counter() - t0) / n
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [
        ("evidence.parts.link_32_stakes_ms", link_ms),
        ("evidence.parts.link_1_stake_ms", one_ms),
        ("evidence.parts.head_file_write_ms", head_ms),
        *_check_parts(),
    ]


def _check_parts() -> list[Row]:
    """The writer's checks (issue 20) timed alone, on a SQLite store: confirming its last
    link before a save (one indexed read), remembering a batch of 32 stakes' events as
    checked, and a cold load of an account of 201 events (from the store, no snapshot) with
    and without the check."""
    from uuid import uuid5

    from services.ledger.ids import NAMESPACE, account_uuid

    tmp = tempfile.mkdtemp(prefix="sabot-bench-check-")
    try:
        ledger = Ledger(_config(f"sqlite:///{tmp}/check.db", True, f"{tmp}/head.json"),
                        games=LEDGER_GAMES)
        ledger.open_account("a", "p")
        for k in range(200):
            ledger.deposit(f"d{k}", "p", 1)
        chain = ledger.app.evidence
        assert chain is not None and chain._mine is not None
        n = 500
        t0 = time.perf_counter()
        for _ in range(n):
            chain._still_there(chain._mine)
        confirm_ms = 1000 * (time.perf_counter() - t0) / n
        events = [(10**9 + i, uuid5(NAMESPACE, str(i % 64)), i) for i in range(160)]
        hashes = [bytes(32)] * 160
        t0 = time.perf_counter()
        for _ in range(n):
            chain.guard.remember(events, 0, hashes)
        remember_ms = 1000 * (time.perf_counter() - t0) / n
        oid = account_uuid("p")
        loads: dict[bool, float] = {}
        for checked in (True, False, True, False):
            ledger.app.use_evidence(chain)
            events_store: Any = ledger.app.events
            if not checked:
                events_store.guard = None
            best = float("inf")
            for _ in range(5):
                chain.guard.checked.clear()
                chain.guard.latest.clear()
                t0 = time.perf_counter()
                list(ledger.app.events.get(oid))
                best = min(best, time.perf_counter() - t0)
            loads[checked] = min(loads.get(checked, best), best)
        ledger.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [
        ("evidence.parts.confirm_last_link_sqlite_ms", confirm_ms),
        ("evidence.parts.remember_32_stakes_ms", remember_ms),
        ("evidence.parts.cold_load_201_events_ms.checked", 1000 * loads[True]),
        ("evidence.parts.cold_load_201_events_ms.unchecked", 1000 * loads[False]),
    ]


def _write_path(store: str, url: Callable[[str], str], tmp: str) -> list[Row]:
    rows: list[Row] = []
    for label, run in (("batched_32_clients", concurrent), ("one_client", sequential)):
        on: list[tuple[float, float]] = []
        off: list[tuple[float, float]] = []
        unchecked: list[tuple[float, float]] = []
        for r in range(ROUNDS):
            for evidence, checks, out in ((True, True, on), (False, True, off),
                                          (True, False, unchecked)):
                name = f"{label}-{r}-{'on' if evidence else 'off'}{'' if checks else '-u'}"
                head = f"{tmp}/{store}-{name}.head" if evidence else None
                out.append(run(url(name), evidence, head, checks=checks))
        p = f"evidence.{store}.{label}"
        s_on, s_off, s_un = (statistics.median(x[0] for x in v) for v in (on, off, unchecked))
        c_on, c_off, c_un = (statistics.median(x[1] for x in v) for v in (on, off, unchecked))
        rows += [
            (f"{p}.stakes_per_s.with_evidence", s_on),
            (f"{p}.stakes_per_s.without", s_off),
            (f"{p}.cpu_ms_per_stake.with_evidence", c_on),
            (f"{p}.cpu_ms_per_stake.without", c_off),
            (f"{p}.cpu_ms_per_stake.evidence_costs", c_on - c_off),
            (f"{p}.stakes_per_s.ratio_with_to_without", s_on / s_off),
            (f"{p}.stakes_per_s.evidence_unchecked", s_un),
            (f"{p}.cpu_ms_per_stake.evidence_unchecked", c_un),
            (f"{p}.cpu_ms_per_stake.writer_checks_cost", c_on - c_un),
            (f"{p}.stakes_per_s.ratio_checked_to_unchecked", s_on / s_un),
        ]
    return rows


def _verifying(tmp: str) -> list[Row]:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from sabot_verify.__main__ import run as verify
    from sabot_verify.chain import walk_export
    from sabot_verify.integrity import parse
    from sabot_verify.money import check_money

    from services.bootstrap import ROUND_END
    from services.regulator.chain import chain_problems, pinned_keys
    from services.regulator.checkpoint import public_key_bytes
    from services.regulator.export import write_export
    from services.regulator.notary import Notary
    from services.regulator.replay import Replayer, verdict
    from services.regulator.source import Database, EventTable

    url = f"sqlite:///{tmp}/verify.db"
    coups = _play_shoe(url)
    db = Database(url)
    events = EventTable(db)
    key = Ed25519PrivateKey.generate()
    notary = Notary(db, events, key, "bench", ROUND_END)
    notary.sync()
    notary.checkpoint_now()
    buf = io.StringIO()
    write_export(buf, events, notary, public_key_bytes(key.public_key()))
    lines = buf.getvalue().splitlines()
    chain_pub = Ed25519PrivateKey.from_private_bytes(CHAIN_KEY).public_key().public_bytes_raw()
    pinned = pinned_keys([chain_pub])

    def whole() -> None:
        out = io.StringIO()
        assert verify(lines, checkpoint_key=public_key_bytes(key.public_key()), out=out,
                      chain_keys=[chain_pub]) == 0, out.getvalue()

    exp = parse(lines)
    records = sorted((r["position"], r["index"], r.get("event")) for r in exp.events)
    contents = [r["event"] for r in exp.events if r.get("event")]

    def chain() -> Any:
        return walk_export(records, dict(pinned), whole=True)

    walk = chain()
    assert not walk.findings

    def money() -> None:
        found, _ = check_money(contents, walk.after or 0, True, exp.snapshots, walk.links)
        assert not found

    n = len(coups)
    total = _median_s(whole, 3)
    chain_s = _median_s(chain, 3)
    money_s = _median_s(money, 3)
    replayer = Replayer(events, notary, chain_keys=pinned, games=REGULATOR_GAMES)
    coup = coups[len(coups) // 2]
    coup_events = events.by_originator(UUID(coup))
    span = [(coup_events[0].position, coup_events[-1].position)]
    replay_s = _median_s(lambda: verdict(replayer.coup(coup)), 5)
    replay_chain_s = _median_s(lambda: chain_problems(events, span, pinned), 5)
    db.close()
    return [
        ("evidence.verify.coups", float(n)),
        ("evidence.verify.events", float(len(records))),
        ("evidence.verify.ms_per_coup.with_evidence", 1000 * total / n),
        ("evidence.verify.ms_per_coup.without", 1000 * (total - chain_s - money_s) / n),
        ("evidence.verify.ms_per_coup.chain", 1000 * chain_s / n),
        ("evidence.verify.ms_per_coup.money", 1000 * money_s / n),
        ("evidence.replay_coup_ms.with_evidence", 1000 * replay_s),
        ("evidence.replay_coup_ms.without", 1000 * (replay_s - replay_chain_s)),
        ("evidence.replay_coup_ms.chain", 1000 * replay_chain_s),
    ]


def _median_s(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _play_shoe(url: str) -> list[str]:
    rng = random.Random(5)
    clock = [datetime(2026, 1, 2, tzinfo=UTC)]

    def now() -> datetime:
        clock[0] += timedelta(seconds=1)
        return clock[0]

    ledger = Ledger(LedgerConfig(
        store_url=url, seal_key=KEY, clock=now, chain_key=CHAIN_KEY,
        new_id=lambda: UUID(int=rng.getrandbits(128), version=4),
        new_seed=lambda: rng.randbytes(32),
    ), games=LEDGER_GAMES)
    n = 0

    def rid() -> str:
        nonlocal n
        n += 1
        return f"b{n}"

    try:
        ledger.open_table(rid(), "bench", "francaise")
        players = [f"p{i}" for i in range(4)]
        for p in players:
            ledger.open_account(rid(), p)
            ledger.deposit(rid(), p, 10**9)
        shoe = ledger.open_shoe(rid(), "bench")
        ledger.cut(rid(), shoe.shoe_id, 150, "p0")
        coups = []
        while True:
            cid = ledger.open_coup(rid(), "bench").coup_id
            busy = {s.account_id for s in ledger.get_table("bench").layout}
            for p in players:
                if p not in busy:
                    ledger.place_stake(rid(), cid, p, rng.choice(["noir", "rouge"]),
                                       100 * rng.randint(1, 20))
            end = ledger.deal(rid(), cid).cut_card_reached
            ledger.settle(rid(), cid)
            coups.append(cid)
            if end:
                break
        ledger.close_shoe(rid(), shoe.shoe_id)
        return coups
    finally:
        ledger.close()


def run() -> list[Row]:
    rows: list[Row] = _parts()
    tmp = tempfile.mkdtemp(prefix="sabot-bench-evidence-")
    try:
        rows += _write_path("sqlite", lambda name: f"sqlite:///{tmp}/{name}.db", tmp)
        pg = fresh_pg_database(PG_DB)
        if pg is not None:
            def pg_url(name: str) -> str:  # a fresh schema per run
                import psycopg

                schema = "b_" + name.replace("-", "_")
                with psycopg.connect(pg, autocommit=True) as conn:
                    conn.execute(f'CREATE SCHEMA "{schema}"')
                return f"{pg}?schema={schema}"

            rows += _write_path("postgres", pg_url, tmp)
        elif os.environ.get("SABOT_REQUIRE_POSTGRES") == "1":
            raise RuntimeError("PostgreSQL unreachable and SABOT_REQUIRE_POSTGRES=1")
        rows += _verifying(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        drop_pg_database(PG_DB)
    return rows


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:64s} {value:12.4f}")
