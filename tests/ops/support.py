"""What the operations tests share: a PostgreSQL database set up as the runbook says (an owner
role owns it and applies the schema, the server connects as the role that may only read and
insert), the keys made by the ``sabot`` key commands, and ``sabot serve`` run as a process."""

from __future__ import annotations

import contextlib
import os
import queue
import secrets
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from tests.conftest import (
    OWNER_ROLE,
    PG_ADMIN_DSN,
    PG_HOST,
    PG_PORT,
    READER_ROLE,
    SERVER_ROLE,
    ensure_roles,
)

ROOT = Path(__file__).resolve().parents[2]
ADMIN_TOKEN = "ops-admin-" + "5" * 40  # >= 128 bits by the server's count


def sabot(*args: str, env: dict[str, str] | None = None, timeout: float = 120,
          cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``sabot ARGS`` as an operator runs it (the entry point's module, this interpreter)."""
    return subprocess.run([sys.executable, "-m", "services.cli.server", *args],
                          cwd=cwd or ROOT, env=env or clean_env(), capture_output=True,
                          text=True, timeout=timeout)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SABOT_", "PG"))}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


@dataclass
class Keys:
    """The server's keys as files (``sabot chain-keygen``, ``checkpoint-keygen``), the seal key
    as hex."""

    folder: Path
    seal: str = field(default_factory=lambda: secrets.token_hex(32))

    def __post_init__(self) -> None:
        for command, name in (("chain-keygen", "chain"), ("checkpoint-keygen", "checkpoint")):
            done = sabot(command, "--out", str(self.folder / name))
            assert done.returncode == 0, done.stderr

    @property
    def chain(self) -> Path:
        return self.folder / "chain.key"

    @property
    def checkpoint(self) -> Path:
        return self.folder / "checkpoint.key"

    @property
    def checkpoint_public(self) -> str:
        return (self.folder / "checkpoint.pub").read_text().strip()


def url(database: str, role: str = SERVER_ROLE, port: int = PG_PORT) -> str:
    return f"postgresql://{role}@{PG_HOST}:{port}/{database}"


def create_store(name: str | None = None) -> str:
    """A database owned by the owner role, set up by ``sabot ledger-schema`` as that role for
    the server and reader roles (docs/postgres.md): its name."""
    ensure_roles()
    name = name or f"sabot_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" OWNER {OWNER_ROLE}')
    done = sabot("ledger-schema", "--store", url(name, OWNER_ROLE), "--server-role", SERVER_ROLE,
                 "--reader-role", READER_ROLE)
    assert done.returncode == 0, done.stderr
    return name


def drop_database(name: str) -> None:
    with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Served:
    """``sabot serve`` in a process of its own; its output lines are read as they come.
    ``keys`` None: ``--dev`` (it makes its keys in ``folder``/var and prints its tokens)."""

    def __init__(self, store: str, keys: Keys | None, folder: Path, *args: str,
                 env: dict[str, str] | None = None) -> None:
        self.folder = folder
        self.env = env or clean_env()
        self.env["SABOT_STORE"] = store
        if keys is not None:
            self.env.update({
                "SABOT_SEAL_KEY": keys.seal,
                "SABOT_CHAIN_KEY": str(keys.chain), "SABOT_CHECKPOINT_KEY": str(keys.checkpoint),
                "SABOT_CHAIN_HEAD": str(folder / "chain-head.json"),
                "SABOT_TOKENS": f"{ADMIN_TOKEN}:admin",
            })
        else:
            args = ("--dev", *args)
        self.log = open(folder / "server.log", "a")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "services.cli.server", "serve", "--listen", "127.0.0.1:0",
             "--env-file", str(folder / "none.env"), *args],
            cwd=folder, env=self.env, stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.lines: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.stdout: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.target = ""

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.stdout.append(line)
            self.lines.put(line)

    def wait_listening(self, timeout: float = 120) -> str:
        """Wait for "The server is listening on HOST:PORT" (after the demo, with --demo)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or self.process.poll() is not None:
                raise AssertionError("sabot serve did not start:\n" + "".join(self.stdout)
                                     + (self.folder / "server.log").read_text()[-4000:])
            with contextlib.suppress(queue.Empty):
                line = self.lines.get(timeout=min(left, 0.5))
                if "The server is listening on" in line:
                    self.target = line.split(" on ", 1)[1].split(" ", 1)[0]
                    return self.target

    @classmethod
    def dev(cls, store: str, folder: Path, *args: str) -> Served:
        return cls(store, None, folder, *args)

    def metrics_port(self, timeout: float = 10) -> int:
        """The port of "Metrics: http://HOST:PORT/metrics", printed after "listening on"."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.stdout:
                if line.startswith("Metrics: http://"):
                    return int(line.split("/metrics", 1)[0].rsplit(":", 1)[1])
            time.sleep(0.05)
        raise AssertionError("no metrics line:\n" + "".join(self.stdout))

    def admin_token(self) -> str:
        """The admin token: ``ADMIN_TOKEN``, or the one ``--dev`` printed."""
        for line in self.stdout:
            parts = line.split()
            if len(parts) == 2 and parts[0] == "admin":
                return parts[1]
        return ADMIN_TOKEN

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        return self.process.returncode


@contextlib.contextmanager
def serving(store: str, keys: Keys, folder: Path, *args: str) -> Iterator[Served]:
    served = Served(store, keys, folder, *args)
    try:
        served.wait_listening()
        yield served
    finally:
        served.stop()
