"""``writer.Answer``: a command's answer answers as ``concurrent.futures.Future`` does for what
the ledger's callers use (result/exception with a timeout, done, callbacks, set once)."""

from __future__ import annotations

import threading
from concurrent.futures import Future, InvalidStateError
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import pytest

from services.ledger.writer import Answer, Command


def test_a_command_answers_with_an_answer() -> None:
    command = Command("noop", "r1", {}, lambda unit: None, type(None))
    assert isinstance(command.future, Answer)
    assert isinstance(command.future, Future)


def test_result_and_exception_as_a_future() -> None:
    for make in (Future, Answer):
        ok: Future[int] = make()
        assert not ok.done() and not ok.running()
        ok.set_result(7)
        assert ok.done() and ok.result() == 7 and ok.result(0) == 7 and ok.exception() is None
        bad: Future[int] = make()
        bad.set_exception(ValueError("no"))
        assert bad.done() and isinstance(bad.exception(0), ValueError)
        with pytest.raises(ValueError, match="no"):
            bad.result()
        with pytest.raises(InvalidStateError):
            ok.set_result(8)
        with pytest.raises(InvalidStateError):
            bad.set_exception(KeyError())
        assert ok.result() == 7 and not ok.cancel() and not ok.cancelled()


def test_a_timeout_raises_and_the_answer_still_comes() -> None:
    answer: Answer[str] = Answer()
    with pytest.raises(FutureTimeout):
        answer.result(0.01)
    with pytest.raises(FutureTimeout):
        answer.exception(0)
    assert "pending" in repr(answer)
    answer.set_result("late")
    assert answer.result(0) == "late" and "done" in repr(answer)


def test_callbacks_run_once_whether_added_before_or_after() -> None:
    answer: Answer[int] = Answer()
    seen: list[tuple[str, Any]] = []
    answer.add_done_callback(lambda f: seen.append(("before", f.result())))
    answer.add_done_callback(lambda f: 1 / 0)  # a failing callback is logged, not raised
    answer.add_done_callback(lambda f: seen.append(("before2", f.result())))
    assert seen == []
    answer.set_result(3)
    answer.add_done_callback(lambda f: seen.append(("after", f.result())))
    assert seen == [("before", 3), ("before2", 3), ("after", 3)]


def test_every_waiter_gets_the_answer_from_other_threads() -> None:
    answers: list[Answer[int]] = [Answer() for _ in range(200)]
    got: list[list[object]] = [[] for _ in range(4)]
    called: list[object] = []
    lock = threading.Lock()

    def outcome(f: Future[int]) -> object:
        error = f.exception(10)
        return str(error) if error is not None else f.result(0)

    def wait(i: int) -> None:
        for a in answers:
            got[i].append(outcome(a))

    def callback(f: Future[int]) -> None:
        with lock:
            called.append(outcome(f))

    def add() -> None:
        for a in answers:
            a.add_done_callback(callback)

    threads = [threading.Thread(target=wait, args=(i,)) for i in range(4)]
    threads.append(threading.Thread(target=add))
    for t in threads:
        t.start()
    for k, a in enumerate(answers):
        if k % 3:
            a.set_result(k)
        else:
            a.set_exception(ValueError(str(k)))
    for t in threads:
        t.join()
    expected = [k if k % 3 else str(k) for k in range(200)]
    assert all(g == expected for g in got)
    assert sorted(called, key=str) == sorted(expected, key=str)  # each callback once
