"""Seed escrow in the ledger's own event: ``Shoe.Shuffled`` v2 records ``escrowed_seed``; a v1
event (before escrow) is upcast with ``escrowed_seed = ""``; the legacy side table still reads."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from uuid import UUID

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from domain.errors import InvalidArgument
from domain.shuffle import commitment
from services.bootstrap import REGULATOR_GAMES
from services.ledger.api import Ledger, LedgerConfig
from services.ledger.config import regulator_public_key
from services.ledger.shoe import Shoe
from services.regulator.escrow import open_sealed, seal_to_regulator
from services.regulator.escrow_table import NO_SHOE, EscrowTable
from services.regulator.replay import Replayer, verdict
from services.regulator.source import Database, EventTable

from .conftest import regulator_key
from .play import SEAL_KEY, Player, make_ledger

SEED = bytes(range(7, 39))


def _shuffled_row(path: Path) -> tuple[int, dict[str, object]]:
    with sqlite3.connect(path) as conn:
        rowid, state = conn.execute(
            "SELECT rowid, state FROM stored_events WHERE topic = 'sabot.ledger:Shoe.Shuffled'"
        ).fetchone()
    return int(rowid), json.loads(state)


def _ledger(url: str, key: bytes | None, evidence: bool = True) -> Ledger:
    ledger, _ = make_ledger(url, 3, new_seed=lambda: SEED, regulator_key=key,
                            evidence=evidence)
    return ledger


def test_the_ledger_escrows_each_seed_in_shoe_shuffled(tmp_path: Path) -> None:
    reg = regulator_key()
    pub = reg.public_key().public_bytes_raw()
    states = []
    for name in ("a", "b"):  # equal inputs give equal events, escrow included
        path = tmp_path / f"{name}.db"
        ledger = _ledger(f"sqlite:///{path}", pub)
        ledger.open_table("r1", "t1", "francaise")
        opened = ledger.open_shoe("r2", "t1")
        ledger.close()
        _, state = _shuffled_row(path)
        states.append(state)
    a, b = states
    assert a == b and a["class_version"] == 2
    sid = UUID(opened.shoe_id)
    sealed = bytes.fromhex(str(a["escrowed_seed"]))
    assert sealed == seal_to_regulator(SEED, sid, pub)
    seed = open_sealed(sealed, sid, reg)
    assert seed == SEED and commitment(seed, sid) == a["commitment"]
    with pytest.raises(ValueError):
        open_sealed(sealed, sid, X25519PrivateKey.generate())


def test_without_a_regulator_key_the_escrow_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    ledger = _ledger(f"sqlite:///{path}", None)
    ledger.open_table("r1", "t1", "francaise")
    ledger.open_shoe("r2", "t1")
    ledger.close()
    assert _shuffled_row(path)[1]["escrowed_seed"] == ""


def test_a_version_1_shuffled_event_is_upcast(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    url = f"sqlite:///{path}"
    # a store from before the evidence chain (the writer checks what the chain covers)
    ledger = _ledger(url, regulator_key().public_key().public_bytes_raw(), evidence=False)
    ledger.open_table("r1", "t1", "italiana")
    opened = ledger.open_shoe("r2", "t1")
    ledger.close()
    # rewrite the stored event as version 1 wrote it: no class_version, no escrowed_seed
    rowid, state = _shuffled_row(path)
    del state["class_version"], state["escrowed_seed"]
    with sqlite3.connect(path) as conn:  # past the append-only guard, as an old store had none
        conn.execute("DROP TRIGGER sabot_stored_events_no_update")
        conn.execute("UPDATE stored_events SET state = ? WHERE rowid = ?",
                     (json.dumps(state).encode(), rowid))
    ledger = _ledger(url, None)
    try:
        shoe: Shoe = ledger.app.repository.get(UUID(opened.shoe_id))
        assert isinstance(shoe, Shoe)
        assert shoe.escrowed_seed == "" and shoe.commitment == opened.commitment
        # the v1 shoe still plays: cut, a coup, close
        ledger.cut("r3", opened.shoe_id, 50, "anne")
        assert ledger.get_shoe(opened.shoe_id).cut_position == 50
        assert ledger.close_shoe("r4", opened.shoe_id).seed == SEED.hex()
    finally:
        ledger.close()
    assert Shoe.Shuffled.class_version == 2
    upcast: dict[str, object] = {"table_id": "t1"}
    Shoe.Shuffled.upcast_v1_v2(upcast)
    assert upcast == {"table_id": "t1", "escrowed_seed": ""}


def test_the_regulator_key_setting() -> None:
    pub = regulator_key().public_key().public_bytes_raw()
    assert regulator_public_key("") is None
    assert regulator_public_key(pub.hex()) == pub
    for bad in ("zz", "00" * 31):
        with pytest.raises(InvalidArgument) as err:
            regulator_public_key(bad)
        assert err.value.field == "SABOT_REGULATOR_KEY"
    env = {"SABOT_SEAL_KEY": SEAL_KEY.hex(), "SABOT_REGULATOR_KEY": pub.hex()}
    assert LedgerConfig.from_environ(env).regulator_key == pub
    assert LedgerConfig.from_environ({"SABOT_SEAL_KEY": SEAL_KEY.hex()}).regulator_key is None


def test_legacy_escrow_table_still_opens(tmp_path: Path) -> None:
    """A store from before v2: seeds sealed beside the ledger (nil shoe id), found by
    commitment; the regulator replays a shoe in play from it."""
    path = tmp_path / "legacy.db"
    url = f"sqlite:///{path}"
    reg = regulator_key()
    pub = reg.public_key().public_bytes_raw()
    assert EscrowTable(url).sealed() == []  # no table: nothing, and nothing created
    ledger, rng = make_ledger(url, 5, new_seed=lambda: SEED)  # no escrow in the event
    player = Player(ledger, rng, "t-legacy", "francaise")
    sid = player.open_shoe()
    cid = player.coup()[0]
    ledger.close()
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE regulator_escrow (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                     "sealed BLOB)")
        for seed in (bytes(32), SEED):
            conn.execute("INSERT INTO regulator_escrow (sealed) VALUES (?)",
                         (seal_to_regulator(seed, NO_SHOE, pub),))
    escrow = EscrowTable(url)
    shuffled = commitment(SEED, UUID(sid))
    assert escrow.find(UUID(sid), shuffled, reg) == SEED
    events = EventTable(Database(url))
    v = verdict(Replayer(events, regulator_key=reg, escrow=escrow, games=REGULATOR_GAMES).coup(cid))
    assert v.identical, str(v)
