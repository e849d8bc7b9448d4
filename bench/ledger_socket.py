"""What issue 10's ledger side costs per stake, in process (processor time, best of rounds):

- ``socket.codec``: one call's frames through SABOT-LEDGER-WIRE-1 (``services/ledger/wire.py``),
  both ends: the call checked against the method table and read back, the answer written and
  read back into its view; beside a pickle of the same call and answer (what the socket carried
  before), the floor of any codec here.
- ``socket.stake``: a stake through the batching writer called directly (the floor: no
  socket), and through ``LedgerHost``/``RemoteLedger`` on a Unix socket, both in this process
  (16 threads, SQLite): the difference is the socket's whole cost per stake (framing, the two
  processes' threads handing work over), as the ledger process mode pays it.
- ``socket.owner``: the same direct stakes placed as a player's actor (ownership decided in the
  ledger) against the system actor.

``run()`` returns rows of (name, value); ``python -m bench.ledger_socket`` prints them.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
import threading
import time
import timeit
from typing import Any

import orjson

from services.bootstrap import LEDGER_GAMES
from services.ledger import wire
from services.ledger.actor import SYSTEM, Actor
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.ledger.remote import LedgerHost, RemoteLedger
from services.ledger.views import MovementView, StakeView
from services.trente_et_quarante.views import StakeResult

Row = tuple[str, float]
KEY = bytes(range(32))
THREADS = 16
PER_THREAD = int(os.environ.get("SABOT_BENCH_SOCKET_STAKES", "250"))
ROUNDS = 3


def _codec() -> list[Row]:
    sid, cid = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9", "6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
    result = StakeResult(cid, StakeView(sid, "anne", "noir", 1000, "free", False, None, False),
                         (MovementView(1, "stake", sid, "anne", "noir", 1000, "anne",
                                       "table:t1:layout"),), 99_000)
    args = ("p-1-23", cid, "anne", "noir", 1000, None, None)
    actor = Actor("anne", "player", "ipv4:127.0.0.1:51234", "anne")
    schema = wire.schema_of(LEDGER_GAMES)
    decode = schema.answer("place_stake")

    def by_pickle() -> None:
        pickle.loads(pickle.dumps((1, "place_stake", args, {"actor": actor}), protocol=5))
        pickle.loads(pickle.dumps((123, [(1, True, result)]), protocol=5))

    def by_wire() -> None:
        schema.read_call(orjson.loads(orjson.dumps(
            schema.call_frame(1, "place_stake", args, {"actor": actor}))))
        answer = orjson.loads(orjson.dumps({"saved": 123, "answers": [[1, True, result]]}))
        decode(answer["answers"][0][2])

    n = 5000
    rows = []
    for name, fn in (("pickle", by_pickle), ("wire", by_wire)):
        best = min(timeit.repeat(fn, number=n, repeat=7, timer=time.process_time)) / n
        rows.append((f"socket.codec.{name}_us_per_call", best * 1e6))
    return rows


def _stakes(ledger: Any, coup: str, actor_of: Any) -> float:
    """Processor ms per stake of THREADS threads placing PER_THREAD stakes each."""

    def client(i: int) -> None:
        actor = actor_of(i)
        for k in range(PER_THREAD):
            ledger.place_stake(f"p{i}-{k}", coup, f"p{i}", "noir", 100, actor=actor)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(THREADS)]
    c0 = time.process_time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return (time.process_time() - c0) * 1000 / (THREADS * PER_THREAD)


def _round(kind: str) -> float:
    tmp = tempfile.mkdtemp(prefix="sabot-bench-socket-")
    url = f"sqlite:///{tmp}/ledger.db"
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY), batching=True, games=LEDGER_GAMES)
    host = remote = None
    try:
        served: Any = ledger
        if kind == "remote":
            host = LedgerHost(ledger, f"{tmp}/ledger.sock").start()
            served = remote = RemoteLedger(f"{tmp}/ledger.sock", url, secret=host.secret,
                                           games=LEDGER_GAMES)
        served.open_table("t", "t1", "francaise", {"allow_opposed_stakes": "true"})
        shoe = served.open_shoe("s", "t1")
        served.cut("c", shoe.shoe_id, 100, "croupier")
        coup = served.open_coup("o", "t1").coup_id
        for i in range(THREADS):
            served.open_account(f"a{i}", f"p{i}")
            served.deposit(f"d{i}", f"p{i}", 10**9)
        if kind == "player":
            players = [Actor(f"p{i}", "player", "bench", f"p{i}") for i in range(THREADS)]
            return _stakes(served, coup, lambda i: players[i])
        return _stakes(served, coup, lambda i: SYSTEM)
    finally:
        if remote is not None:
            remote.close()
        if host is not None:
            host.close()
        ledger.close()
        shutil.rmtree(tmp, ignore_errors=True)


def run() -> list[Row]:
    rows = _codec()
    best = {kind: min(_round(kind) for _ in range(ROUNDS))
            for kind in ("direct", "remote", "player")}
    rows += [
        ("socket.stake.direct_cpu_ms", best["direct"]),
        ("socket.stake.remote_cpu_ms", best["remote"]),
        ("socket.stake.socket_cost_ms", best["remote"] - best["direct"]),
        ("socket.owner.player_actor_cpu_ms", best["player"]),
        ("socket.owner.cost_ms", best["player"] - best["direct"]),
    ]
    return rows


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:45s} {value:.4f}")
