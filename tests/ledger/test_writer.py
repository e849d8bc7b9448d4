"""The single writer: concurrent commands folded into few saves; conflicts abort cleanly."""

from __future__ import annotations

import threading
from typing import Any

from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger

from .play import FixedInputs

PLAYERS = [f"p{i}" for i in range(8)]


def test_concurrent_commands_are_folded_into_few_saves(store_url: str) -> None:
    ledger = Ledger(FixedInputs().config(store_url), batching=True, games=LEDGER_GAMES)
    ledger.open_table("t", "t1", "francaise", {"allow_opposed_stakes": "true"})
    for p in PLAYERS:
        ledger.open_account("a" + p, p)
        ledger.deposit("d" + p, p, 1_000_000)
    shoe = ledger.open_shoe("s", "t1")
    ledger.cut("c", shoe.shoe_id, 100, "p0")
    coup = ledger.open_coup("o", "t1")
    saves: list[int] = []
    real_save = ledger.app.save

    def counting_save(*objs: Any, **kw: Any) -> Any:
        saves.append(len(objs))
        return real_save(*objs, **kw)

    ledger.app.save = counting_save  # type: ignore[method-assign]
    errors: list[BaseException] = []
    start = threading.Barrier(len(PLAYERS))

    def player(p: str) -> None:
        start.wait()
        try:
            for i in range(25):
                ledger.place_stake(f"{p}-{i}", coup.coup_id, p, ["noir", "rouge"][i % 2], 100)
                ledger.place_stake(f"{p}-{i}", coup.coup_id, p, ["noir", "rouge"][i % 2], 100)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=player, args=(p,)) for p in PLAYERS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    commands = 25 * len(PLAYERS)
    assert 1 <= len(saves) <= commands  # retries and folds save nothing more
    assert len(ledger.get_coup(coup.coup_id).layout) == commands
    balances = ledger.balances()
    assert sum(balances.values()) == 0
    assert all(balances[p] == 1_000_000 - 2500 for p in PLAYERS)
    # held back while the writer is busy, 8 commands are saved in at most 2 transactions
    saves.clear()
    queue = ledger._writer._queue
    assert queue is not None
    queued = threading.Semaphore(0)
    real_put = queue.put

    def put(item: Any, *args: Any, **kw: Any) -> None:
        real_put(item, *args, **kw)
        queued.release()

    queue.put = put  # type: ignore[method-assign]
    with ledger._writer.lock:
        threads = [
            threading.Thread(
                target=ledger.place_stake, args=(f"x{p}", coup.coup_id, p, "couleur", 100)
            )
            for p in PLAYERS
        ]
        for t in threads:
            t.start()
        for _ in PLAYERS:
            assert queued.acquire(timeout=10)
    for t in threads:
        t.join()
    assert 1 <= len(saves) <= 2
    assert len(ledger.get_coup(coup.coup_id).layout) == commands + len(PLAYERS)
    ledger.close()


def test_a_stale_writer_decides_again(sqlite_store_url: str) -> None:
    """Another writer saved first: the key collision makes this writer reload and decide again.
    (Only the lease holder decides, services/ledger/lease.py; ``two`` is a writer that does not
    know it lost the lease, whose saves the key collision still keeps right.)"""
    one = Ledger(FixedInputs().config(sqlite_store_url), games=LEDGER_GAMES)
    one.open_account("a", "ana")
    two = Ledger(FixedInputs().config(sqlite_store_url), games=LEDGER_GAMES)
    assert not two.writer_status()["active"]
    two._writer.active = True  # stale: it decides as if it held the lease
    assert two.get_account("ana").balance == 0  # now cached by the second writer
    one.deposit("d1", "ana", 100)
    assert two.deposit("d2", "ana", 50).balance == 150  # reloaded, decided again
    assert one.deposit("d2", "ana", 50).balance == 150  # the stored answer
    assert sum(two.balances().values()) == 0
    one.close()
    two.close()


def test_a_failed_save_stores_nothing_and_aborts(sqlite_store_url: str) -> None:
    import pytest
    from eventsourcing.persistence import IntegrityError

    from services.ledger.errors import Conflict

    ledger = Ledger(FixedInputs().config(sqlite_store_url), games=LEDGER_GAMES)
    ledger.open_account("a", "ana")
    real_save = ledger.app.save
    for failure in (IntegrityError("collision"), OSError("disk gone")):

        def failing_save(*objs: Any, _exc: Exception = failure, **kw: Any) -> Any:
            raise _exc

        ledger.app.save = failing_save  # type: ignore[method-assign]
        with pytest.raises(Conflict) as err:
            ledger.deposit("d", "ana", 100)
        assert err.value.field == "request_id"
    ledger.app.save = real_save  # type: ignore[method-assign]
    assert ledger.get_account("ana").balance == 0
    assert ledger.deposit("d", "ana", 100).balance == 100
    ledger.close()


# --- the pipelined writer: a batch decided while the previous one commits ----------------------


def _blocked_first_save(ledger: Ledger, failure: Exception | None) -> tuple[
    threading.Event, threading.Event
]:
    """The next save waits for ``go`` (``saving`` is set meanwhile), then raises ``failure``
    (None: stores); later saves store at once."""
    saving, go = threading.Event(), threading.Event()
    real_save = ledger.app.save
    calls: list[int] = []

    def save(*objs: Any, **kw: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            saving.set()
            assert go.wait(10)
            if failure is not None:
                raise failure
        return real_save(*objs, **kw)

    ledger.app.save = save  # type: ignore[method-assign]
    return saving, go


def _in_thread(fn: Any, *args: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(fn(*args))
        except BaseException as exc:
            out.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def _wait_for(condition: Any) -> None:
    import time

    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_the_next_batch_is_decided_again_when_the_batch_in_flight_is_not_stored(
    store_url: str,
) -> None:
    """d2 is decided on top of d1 while d1 commits. d1 fails: d2 must not keep d1's money."""
    from eventsourcing.persistence import IntegrityError

    from services.ledger.errors import Conflict
    from services.ledger.ids import account_uuid

    for n, (failure, d1_after, d2_after) in enumerate((
        (OSError("disk gone"), None, 50),  # nothing of d1 stored: d2 alone
        (IntegrityError("collision"), 100, 150),  # d1 decided again alone and stored, then d2
    )):
        ana = f"ana{n}"
        ledger = Ledger(FixedInputs().config(store_url), batching=True, games=LEDGER_GAMES)
        ledger.open_account(f"a{n}", ana)
        saving, go = _blocked_first_save(ledger, failure)
        first, out1 = _in_thread(ledger.deposit, f"d1-{n}", ana, 100)
        assert saving.wait(10)
        second, out2 = _in_thread(ledger.deposit, f"d2-{n}", ana, 50)

        def decided_on_top(writer: Any = ledger._writer, name: str = ana) -> bool:
            with writer.lock:
                account = writer.cache.get(account_uuid(name))
                return account is not None and account.balance == 150

        _wait_for(decided_on_top)
        assert not out2  # no answer before its batch is stored
        go.set()
        first.join(10)
        second.join(10)
        if d1_after is None:
            assert isinstance(out1[0], Conflict) and out1[0].reason == "NOT_STORED"
        else:
            assert out1[0].balance == d1_after
        assert out2[0].balance == d2_after
        assert ledger.get_account(ana).balance == d2_after
        assert ledger.deposit(f"d2-{n}", ana, 50).balance == d2_after  # the stored answer
        assert sum(ledger.balances().values()) == 0
        ledger.close()
        reopened = Ledger(FixedInputs().config(store_url), games=LEDGER_GAMES)
        assert reopened.get_account(ana).balance == d2_after
        reopened.close()


def test_queries_wait_for_the_batch_in_flight(sqlite_store_url: str) -> None:
    ledger = Ledger(FixedInputs().config(sqlite_store_url), batching=True, games=LEDGER_GAMES)
    ledger.open_account("a", "ana")
    saving, go = _blocked_first_save(ledger, None)
    writing, answer = _in_thread(ledger.deposit, "d1", "ana", 100)
    assert saving.wait(10)
    reading, seen = _in_thread(ledger.get_account, "ana")
    reading.join(0.2)
    assert reading.is_alive()  # the deposit is decided, not stored: not shown yet
    go.set()
    writing.join(10)
    reading.join(10)
    assert answer[0].balance == 100
    assert seen[0].balance == 100
    ledger.close()


def test_a_snapshot_taken_inside_a_batch_reloads(store_url: str) -> None:
    """Concurrent deposits: the account's 500th event falls inside a batch; the snapshot is of
    the aggregate as the batch left it, and a reopened ledger agrees with the events."""
    from services.ledger.ids import account_uuid

    inputs = FixedInputs()
    ledger = Ledger(inputs.config(store_url), batching=True, games=LEDGER_GAMES)
    ledger.open_account("a", "ana")
    start = threading.Barrier(8)

    def deposits(k: int) -> None:
        start.wait()
        for i in range(66):
            ledger.deposit(f"d{k}-{i}", "ana", 1 + k)

    threads = [threading.Thread(target=deposits, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expected = sum(66 * (1 + k) for k in range(8))
    assert ledger.app.snapshots is not None
    snapshots = list(ledger.app.snapshots.get(account_uuid("ana")))
    assert snapshots and snapshots[-1].originator_version >= 500
    ledger.close()
    reopened = Ledger(inputs.config(store_url), games=LEDGER_GAMES)
    account = reopened.get_account("ana")
    assert (account.balance, account.entries) == (expected, 8 * 66)
    assert reopened.deposit("again", "ana", 1).balance == expected + 1
    reopened.close()


def test_the_postgres_recorder_numbers_a_save_in_order_and_collides_atomically(
    postgres_store_url: str,
) -> None:
    from uuid import uuid4

    import pytest
    from eventsourcing.persistence import IntegrityError, StoredEvent

    from services.ledger.application import ArrayInsertRecorder

    ledger = Ledger(FixedInputs().config(postgres_store_url), games=LEDGER_GAMES)
    recorder = ledger.app.recorder
    assert isinstance(recorder, ArrayInsertRecorder)
    ids = [uuid4() for _ in range(3)]
    events = [StoredEvent(i, v, "t", f"{i}/{v}".encode()) for v in (1, 2) for i in ids]
    numbers = recorder.insert_events(events)
    assert numbers is not None and list(numbers) == sorted(numbers)
    stored = recorder.select_notifications(numbers[0], 10)
    assert [(n.originator_id, n.originator_version, n.state) for n in stored] == [
        (e.originator_id, e.originator_version, e.state) for e in events
    ]
    before = recorder.max_notification_id()
    fresh = StoredEvent(uuid4(), 1, "t", b"x")
    with pytest.raises(IntegrityError):
        recorder.insert_events([fresh, events[0]])  # one key collides: nothing is stored
    assert recorder.max_notification_id() == before
    assert recorder.select_events(fresh.originator_id) == []
    ledger.close()


def test_plain_answers_equal_to_dict() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from services.ledger.views import MovementView, StakeView, to_dict
    from services.ledger.writer import plain
    from services.trente_et_quarante.views import StakeResult

    text = st.text(max_size=8)
    stakes = st.builds(StakeView, text, text, text, st.integers(), text, st.booleans(),
                       st.none() | text, st.booleans())
    movements = st.builds(MovementView, st.integers(), text, text, text, text, st.integers(),
                          text, text)
    results = st.builds(StakeResult, text, st.none() | stakes,
                        st.lists(movements, max_size=3).map(tuple), st.integers())

    @settings(max_examples=200, deadline=None)
    @given(results)
    def check(result: StakeResult) -> None:
        assert plain(result) == to_dict(result)

    check()


def test_a_batching_writer_collects_garbage_less_often_and_never_more(
        sqlite_store_url: str) -> None:
    """A process running a batching writer collects cycles every ``GC_THRESHOLD`` allocations
    (not the interpreter's 700); a higher threshold set before is kept; cycles are still
    collected."""
    import gc
    import weakref

    from services.ledger.writer import GC_THRESHOLD

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, before[1], before[2])
        ledger = Ledger(FixedInputs().config(sqlite_store_url), batching=True, games=LEDGER_GAMES)
        try:
            assert gc.get_threshold() == (GC_THRESHOLD, before[1], before[2])
            gc.set_threshold(5 * GC_THRESHOLD, before[1], before[2])
            Ledger(FixedInputs().config(sqlite_store_url), batching=True,
                   games=LEDGER_GAMES).close()
            assert gc.get_threshold()[0] == 5 * GC_THRESHOLD

            class Cycle:
                me: Any = None

            cycle = Cycle()
            cycle.me = cycle
            gone = weakref.ref(cycle)
            del cycle
            kept = [[] for _ in range(3 * 5 * GC_THRESHOLD)]  # the collector runs by itself
            assert gone() is None
            del kept
        finally:
            ledger.close()
    finally:
        gc.set_threshold(*before)
