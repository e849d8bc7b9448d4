"""``sabot serve``'s read models kept up to date by a process of their own (issue 25): a child
of the ledger process (``python -m services.bootstrap --read-models``), holding no key; the
server's health follows what it applied (``rm_tracking``); killed, it is started again and
follows on; the server killed, it ends with the ledger process. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.request
from pathlib import Path

from services.api.client import Client
from services.api.gen.sabot.v1 import cashier_pb2, common_pb2

from .support import ADMIN_TOKEN, Keys, Served


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


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _read_models_process(ledger: int, other_than: int = 0, timeout: float = 60) -> int:
    """The read models' process under the ledger process (waited for)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for child in _children(ledger):
            try:
                cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            except OSError:  # ended (and reaped) since it was listed
                continue
            if b"--read-models" in cmdline and child != other_than and _alive(child):
                return child
        time.sleep(0.2)
    raise AssertionError("no read models' process under the ledger process")


def _caught_up(port: int, beyond: int, timeout: float = 90) -> int:
    """Wait until the server's health says every read model caught up with a log whose head is
    beyond ``beyond`` (the health looks every second or so); that head."""
    deadline = time.monotonic() + timeout
    while True:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as reply:
            facts = json.loads(reply.read())["facts"]
        views, head = facts.get("views", {}), int(facts.get("head", 0))
        if views and head > beyond and all(int(f["events_behind"]) == 0
                                           for f in views.values()):
            assert {"bankrolls", "recall", "reconciliation"} <= set(views)
            return head
        if time.monotonic() > deadline:
            raise AssertionError(f"the read models did not catch up: {facts}")
        time.sleep(0.3)


def test_the_read_models_follow_in_a_process_of_their_own_started_again_when_killed(
        store: str, tmp_path: Path) -> None:
    keys = Keys(tmp_path)
    served = Served(store, keys, tmp_path, "--metrics-listen", "127.0.0.1:0")
    try:
        target = served.wait_listening()
        port = served.metrics_port()
        (ledger,) = _children(served.process.pid)  # the server's one child: the ledger's
        reader = _read_models_process(ledger)
        for where in ("cmdline", "environ"):  # no key where another process could read it
            text = Path(f"/proc/{reader}/{where}").read_bytes().decode(errors="replace")
            assert keys.seal not in text and ADMIN_TOKEN not in text

        api = Client(target, ADMIN_TOKEN)
        try:
            api.cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
                request_id="rm-a", account_id="anne"))
            for k in range(3):
                api.cashier.Deposit(cashier_pb2.DepositRequest(
                    request_id=f"rm-d{k}", name="accounts/anne",
                    amount=common_pb2.Money(amount_minor=100)))
            head = _caught_up(port, 0)  # applied by the read models' process

            os.kill(reader, signal.SIGKILL)
            again = _read_models_process(ledger, other_than=reader)
            assert again != reader
            for k in range(3, 6):
                api.cashier.Deposit(cashier_pb2.DepositRequest(
                    request_id=f"rm-d{k}", name="accounts/anne",
                    amount=common_pb2.Money(amount_minor=100)))
            _caught_up(port, head)  # the new one follows on
            assert served.process.poll() is None  # the server served on meanwhile
            log = (tmp_path / "server.log").read_text()
            assert "the read models' process ended; starting it again" in log
        finally:
            api.close()

        served.process.send_signal(signal.SIGKILL)  # the server dies: everything under it ends
        served.process.wait(30)
        deadline = time.monotonic() + 60
        while (_alive(ledger) or _alive(again)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(ledger) and not _alive(again)
    finally:
        served.stop()
