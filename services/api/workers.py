"""The gRPC server's RPC threads: what ``grpc.server`` is handed as its thread pool, cheaper per
call than ``concurrent.futures.ThreadPoolExecutor``.

grpc's synchronous server submits every RPC to its pool and keeps the returned future only to
count the RPCs in flight (``add_done_callback``: its ``maximum_concurrent_rpcs``). A
``ThreadPoolExecutor`` pays, per call, a ``Future`` (a ``Condition`` over an ``RLock``), a work
item, two locks and an idle ``Semaphore`` (a ``Condition`` again): measured by py-spy under the
stake load, ``submit`` was 16 % of the server process's time (``docs/performance.md``, the
stake path). ``Workers`` keeps the same contract for what grpc uses: threads started as they are
needed up to ``max_workers`` (never more; a call waits for a free thread as it did), each call run
once in the caller's ``contextvars`` context as grpc hands it, the done callback called once,
after both the call ended and the callback was added, whichever comes last. Per call: one small
ticket, one ``SimpleQueue.put``, an atomic pop from the idle threads' tokens.

It is a ``ThreadPoolExecutor`` for its type only (``grpc.server`` is typed so, and
``experimental_thread_pool`` is checked so): none of that class's state is made or used."""

from __future__ import annotations

import itertools
import logging
import queue
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

log = logging.getLogger("sabot.api.workers")


class Ticket(Future[T]):
    """A submitted call as grpc sees it: ``add_done_callback`` only (``done`` and ``cancel``
    answer as a future would; nobody waits on it, so it has no condition). Not
    ``Future.__init__``: its condition is what this saves."""

    def __init__(self, fn: Callable[..., T], args: tuple[object, ...],
                 kwargs: dict[str, object]) -> None:
        self._fn = fn
        self._args = args
        self._kwargs = kwargs
        self._callback: Callable[[Future[T]], object] | None = None
        self._turns = itertools.count()  # next() is atomic: the second of (ended, added) calls
        self._ended = False

    def add_done_callback(self, fn: Callable[[Future[T]], object]) -> None:
        self._callback = fn
        if next(self._turns):
            fn(self)

    def done(self) -> bool:
        return self._ended

    def cancel(self) -> bool:
        return False

    def cancelled(self) -> bool:
        return False

    def running(self) -> bool:
        return not self._ended

    def run(self) -> None:
        try:
            self._fn(*self._args, **self._kwargs)
        except BaseException:  # grpc's own work handles its errors: this is a bug, logged
            log.exception("an RPC thread's work failed")
        finally:
            self._ended = True
            if next(self._turns):
                callback = self._callback
                assert callback is not None
                callback(self)


class Workers(ThreadPoolExecutor):
    """At most ``max_workers`` daemon threads named ``thread_name_prefix_N``, started as calls
    find none idle; ``shutdown`` ends them once the calls queued before have run."""

    def __init__(self, max_workers: int, thread_name_prefix: str = "") -> None:
        # (not ThreadPoolExecutor.__init__: none of its state is used)
        if max_workers <= 0:
            raise ValueError("max_workers must be greater than 0")
        self._limit = max_workers
        self._prefix = thread_name_prefix or "workers"
        self._work: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._idle: deque[None] = deque()  # a token per thread waiting (or about to) for work
        self._started: list[threading.Thread] = []
        self._spawn = threading.Lock()  # starting a thread (rare): one at a time
        self._closed = False

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        if self._closed:
            raise RuntimeError("cannot schedule new calls after shutdown")
        ticket = Ticket(fn, args, kwargs)
        try:
            self._idle.pop()  # an idle thread takes it
        except IndexError:
            self._start_one()  # none idle: one more thread, while under the limit
        self._work.put(ticket.run)
        return ticket

    def _start_one(self) -> None:
        with self._spawn:
            if len(self._started) >= self._limit:
                return  # the call waits for a thread to be free, as with ThreadPoolExecutor
            thread = threading.Thread(target=self._serve,
                                      name=f"{self._prefix}_{len(self._started)}", daemon=True)
            self._started.append(thread)
        thread.start()

    def _serve(self) -> None:
        work, idle = self._work, self._idle
        while True:
            run = work.get()
            if run is None:
                return
            run()
            del run
            idle.append(None)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._closed = True
        with self._spawn:
            threads = list(self._started)
        for _ in threads:
            self._work.put(None)
        if wait:
            for thread in threads:
                if thread is not threading.current_thread():
                    thread.join()
