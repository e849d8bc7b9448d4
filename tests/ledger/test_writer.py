"""The single writer: concurrent commands folded into few saves; conflicts abort cleanly."""

from __future__ import annotations

import threading
from typing import Any

from services.ledger.api import Ledger

from .play import FixedInputs

PLAYERS = [f"p{i}" for i in range(8)]


def test_concurrent_commands_are_folded_into_few_saves(store_url: str) -> None:
    ledger = Ledger(FixedInputs().config(store_url), batching=True)
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
    """Another writer saved first: the key collision makes this writer reload and decide again."""
    one = Ledger(FixedInputs().config(sqlite_store_url))
    one.open_account("a", "ana")
    two = Ledger(FixedInputs().config(sqlite_store_url))
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

    ledger = Ledger(FixedInputs().config(sqlite_store_url))
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
