"""The ledger process SIGKILLed under ``sabot serve`` with deposits in flight (issue 20: a request
already stored was answered ABORTED ``NOT_STORED`` twice after its ledger process died, and a
client keyed on that reason would have placed the stake again under a new id).

No answer says ``NOT_STORED``: each command cut by the loss is ABORTED ``OUTCOME_UNKNOWN``
(or UNAVAILABLE while the server stops). The server stops with an error; started again on the
same store, every such request retried with its request id is answered, each deposit has
exactly one effect (the balances answered for an account are 1, 2, ... n without a repeat, and
its balance is n), and a retry of a stored one gives its first answer. On SQLite and
PostgreSQL."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import grpc

from services.api.errors import details_of

from .support import Keys, Served
from .test_outage import Site

CLIENTS = 12


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def test_a_killed_ledger_process_never_says_not_stored_and_the_retry_gives_the_first_answer(
        store: str, tmp_path: Path) -> None:
    keys = Keys(tmp_path)
    served = Served(store, keys, tmp_path)
    answers: dict[str, int] = {}  # request id -> balance answered
    pending: dict[str, str] = {}  # request id -> account: cut by the loss, to retry
    reasons: list[tuple[str, str]] = []  # (code, reason) of every refusal
    lock = threading.Lock()
    stop = threading.Event()
    try:
        served.wait_listening()
        site = Site(served, None, "")  # type: ignore[arg-type]
        for k in range(CLIENTS):
            site.open_account(f"k-{k}")

        def client(k: int) -> None:
            i = 0
            while not stop.is_set():
                request_id = f"k{k}-{i}"
                try:
                    reply = site.deposit(request_id, f"k-{k}", timeout=5.0)
                    with lock:
                        answers[request_id] = int(reply.balance.amount_minor)
                except grpc.RpcError as exc:
                    with lock:
                        reasons.append((exc.code().name, details_of(exc)[1]))
                        pending[request_id] = f"k-{k}"
                    for _ in range(3):  # at once again, as a client does, while it stops
                        try:
                            site.deposit(request_id, f"k-{k}", timeout=5.0)
                        except grpc.RpcError as again:
                            with lock:
                                reasons.append((again.code().name, details_of(again)[1]))
                    return  # its server is gone: it retries after the restart
                i += 1

        clients = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
        for t in clients:
            t.start()
        time.sleep(1.5)  # deposits flow
        (ledger_process,) = _children(served.process.pid)
        os.kill(ledger_process, signal.SIGKILL)
        assert served.process.wait(60) == 2  # "the ledger process ended by itself"
        stop.set()
        for t in clients:
            t.join(timeout=30)
        site.channel.close()
    finally:
        served.stop()
    assert answers, "no deposit was stored before the kill"
    assert reasons, "no command was cut by the kill"
    assert not [r for r in reasons if r[1] == "NOT_STORED"], reasons
    assert {code for code, _ in reasons} <= {"ABORTED", "UNAVAILABLE", "CANCELLED"}, reasons

    again = Served(store, keys, tmp_path)
    try:
        again.wait_listening()
        site = Site(again, None, "")  # type: ignore[arg-type]
        try:
            for request_id, account in pending.items():
                answers[request_id] = int(site.deposit(request_id, account,
                                                       timeout=10).balance.amount_minor)
            some = sorted(answers)[:10]
            for request_id in some:  # a retry of a stored request: its first answer
                account = "k-" + request_id[1:].split("-")[0]
                assert site.deposit(request_id, account, timeout=10).balance.amount_minor \
                    == answers[request_id]
            for k in range(CLIENTS):
                mine = sorted(b for rid, b in answers.items() if rid.startswith(f"k{k}-"))
                assert mine == list(range(1, len(mine) + 1)), (k, mine)  # one effect each
                assert site.balance(f"k-{k}") == (len(mine), len(mine))
        finally:
            site.channel.close()
    finally:
        again.stop()
    print(f"\nLEDGER KILL: {len(answers)} deposits stored, {len(pending)} cut by the kill, "
          f"{len(reasons)} refusals ({sorted(set(reasons))}) with the retries before the "
          "restart, every one answered after it, none NOT_STORED")
