"""The composition root (``services/bootstrap.py``): the ledger, its log, the read models and the
notary built from ``Settings`` (the one settings reader), on both stores."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from services import bootstrap
from services.ledger.evidence import ChainKey
from services.settings import SettingError, Settings

SEAL = "11" * 32
CHAIN = "22" * 32
CHECKPOINT = "33" * 32
REGULATOR_PUBLIC = "44" * 32


def settings(store_url: str, tmp_path: Path, **env: str) -> Settings:
    return Settings.load(env={"SABOT_STORE": store_url, **env}, env_file=None)


def test_the_ledger_its_log_and_read_models_from_settings(store_url: str, tmp_path: Path
                                                          ) -> None:
    given = settings(store_url, tmp_path, SABOT_SEAL_KEY=SEAL, SABOT_CHAIN_KEY=CHAIN,
                     SABOT_REGULATOR_PUBLIC_KEY=REGULATOR_PUBLIC)
    config = bootstrap.ledger_config(given)
    assert (config.store_url, config.seal_key, config.chain_key, config.regulator_key) == (
        store_url, bytes.fromhex(SEAL), bytes.fromhex(CHAIN), bytes.fromhex(REGULATOR_PUBLIC))
    ledger = bootstrap.open_ledger(given)
    try:
        ledger.open_table("t", "t1", "francaise")
        shoe = ledger.open_shoe("s", "t1")
        ledger.cut("c", shoe.shoe_id, 50, "ana")
        coup = ledger.open_coup("oc", "t1")  # a registered game's command on the built ledger
        assert coup.table_id == "t1"
        # the seed escrowed to the regulator's key from the settings
        stored = ledger.app.repository.get(UUID(shoe.shoe_id))
        assert stored.escrowed_seed != ""
        # the evidence links signed by the settings' chain key
        assert ledger.app.evidence is not None
        assert ledger.app.evidence.key.key_id == ChainKey.from_raw(bytes.fromhex(CHAIN)).key_id
        # a reader (standby) needs no seal key and reads what the writer stored
        reader = bootstrap.open_ledger(settings(store_url, tmp_path), standby=True)
        try:
            assert reader.get_table("t1").coup_id == coup.coup_id
        finally:
            reader.close()
        log = bootstrap.open_log(given)
        try:
            models = bootstrap.read_models(given, log)
            assert models.catch_up() > 0
        finally:
            log.close()
    finally:
        ledger.close()


def test_a_missing_seal_key_names_its_setting(store_url: str, tmp_path: Path) -> None:
    with pytest.raises(SettingError, match="SABOT_SEAL_KEY") as missing:
        bootstrap.open_ledger(settings(store_url, tmp_path))
    assert "--seal-key" in str(missing.value)
    with pytest.raises(SettingError, match="SABOT_SEAL_KEY"):
        bootstrap.open_ledger_process(settings(store_url, tmp_path))


def test_the_notary_from_settings(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/n.db"
    assert bootstrap.notary(settings(url, tmp_path)) is None
    follower = bootstrap.notary(settings(url, tmp_path, SABOT_CHECKPOINT_KEY=CHECKPOINT,
                                         SABOT_CHAIN_KEY=CHAIN))
    assert follower is not None
    expected = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(CHECKPOINT)).public_key()
    assert follower.key.public_key().public_bytes_raw() == expected.public_bytes_raw()


def test_the_ledger_process_gets_the_config_its_parent_built(tmp_path: Path) -> None:
    """The child end of the pipe (``services.ledger.remote``) reads back every field the
    parent's ``ledger_config`` set (``LedgerConfig.to_pipe``/``from_pipe``), through JSON."""
    import json

    from services.ledger.config import LedgerConfig

    given = settings(f"sqlite:///{tmp_path}/p.db", tmp_path, SABOT_SEAL_KEY=SEAL,
                     SABOT_CHAIN_KEY=CHAIN, SABOT_REGULATOR_PUBLIC_KEY=REGULATOR_PUBLIC,
                     SABOT_CHAIN_HEAD=str(tmp_path / "head.json"), SABOT_SITE="lyon")
    config = bootstrap.ledger_config(given, pool_size=7, writer_name="w:1", store_timeout=2.5)
    assert config.extra_env == {"STORE_TIMEOUT": "2.5"}
    back = LedgerConfig.from_pipe(json.loads(json.dumps(config.to_pipe())))
    fields = ("store_url", "seal_key", "pool_size", "regulator_key", "writer_name", "chain_key",
              "chain_head", "extra_env", "evidence", "site")
    assert [getattr(back, f) for f in fields] == [getattr(config, f) for f in fields]
    bare = LedgerConfig.from_pipe(LedgerConfig(f"sqlite:///{tmp_path}/q.db", bytes(32)).to_pipe())
    assert config.site == "lyon"
    assert (bare.regulator_key, bare.chain_key, bare.chain_head, bare.extra_env, bare.site) == (
        None, None, None, {}, None)


def test_the_offline_commands_read_models_and_merkle_log(store_url: str, tmp_path: Path
                                                         ) -> None:
    """``projector`` (the read models of ``sabot store projections …``) and ``store_notary``
    (the Merkle log of ``sabot store checkpoint|export|replay|proof``) from the settings."""
    given = settings(store_url, tmp_path, SABOT_SEAL_KEY=SEAL, SABOT_CHECKPOINT_KEY=CHECKPOINT)
    ledger = bootstrap.open_ledger(given)
    try:
        ledger.open_table("t", "t1", "francaise")
    finally:
        ledger.close()
    projector = bootstrap.projector(given)
    try:
        assert projector.catch_up() > 0
    finally:
        projector.app.close()
    assert bootstrap.log_env(given)["PERSISTENCE_MODULE"].startswith("eventsourcing.")
    signer = bootstrap.store_notary(given, sign=True)
    try:
        assert signer.key is not None
        assert signer.hold(0.0)
        try:
            signer.sync()
        finally:
            signer.release()
        assert signer.size > 0
    finally:
        signer.db.close()
    reader = bootstrap.store_notary(settings(store_url, tmp_path))  # no key: only reads
    try:
        assert reader.key is None and reader.size > 0
    finally:
        reader.db.close()
    with pytest.raises(SettingError, match="SABOT_CHECKPOINT_KEY"):
        bootstrap.store_notary(settings(store_url, tmp_path), sign=True)


def test_the_following_notary_checks_the_chain_against_the_settings_keys(
        store_url: str, tmp_path: Path) -> None:
    """``sabot store checkpoint --follow`` notarises with ``store_notary``'s notary
    (``follow_with``): the evidence chain is checked against ``--chain-public-key``."""
    import threading

    from services.regulator.notary import follow_with
    from services.settings import public_of

    once = threading.Event()
    once.set()  # one sync, then stop
    found = {}
    for name, url, raw in (("wrong", store_url, bytes.fromhex("55" * 32)),
                           ("right", f"sqlite:///{tmp_path}/right.db", bytes.fromhex(CHAIN))):
        ledger = bootstrap.open_ledger(settings(url, tmp_path, SABOT_SEAL_KEY=SEAL,
                                                SABOT_CHAIN_KEY=CHAIN))
        try:
            ledger.open_table("t", "t1", "francaise")
        finally:
            ledger.close()
        given = settings(url, tmp_path, SABOT_CHECKPOINT_KEY=CHECKPOINT,
                         SABOT_CHAIN_PUBLIC_KEY=public_of(raw).hex())
        notary = bootstrap.store_notary(given, sign=True)
        try:
            follow_with(notary, once)
            found[name] = (notary.size, len(notary.chain_problems))
        finally:
            notary.db.close()
    assert found["right"][0] > 0 and found["right"][1] == 0
    assert found["wrong"][0] > 0 and found["wrong"][1] > 0
