"""A site in the evidence chain (issue 23 item 5): a writer of a site names it in every link it
signs; the store belongs to the site its last link names, from the first link a writer of that
site signed; a writer of another site, or of none, refuses it, at start or when it takes the
store over; a store of no site (a single site's, or one written before sites) is taken by the
first site that writes it, and its earlier links verify as they always did."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sabot_verify.__main__ import run as verify

from services.bootstrap import LEDGER_GAMES, ROUND_END
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.ledger.errors import NotTheWriter
from services.ledger.evidence import LINKED_TOPIC, EvidenceBroken, WrongSite
from services.regulator.checkpoint import checkpoint_origin, origin_site, public_key_bytes
from services.regulator.export import write_export
from services.regulator.notary import Notary
from services.regulator.source import Database, EventTable

from .play import KEY

CHAIN_KEY = bytes([0x71]) * 32
CHAIN_PUBLIC = Ed25519PrivateKey.from_private_bytes(CHAIN_KEY).public_key().public_bytes_raw()
NOTARY = Ed25519PrivateKey.from_private_bytes(bytes([0x72]) * 32)


def ledger(url: str, site: str | None, name: str = "w", standby: bool = False) -> Ledger:
    return Ledger(LedgerConfig(store_url=url, seal_key=KEY, chain_key=CHAIN_KEY, site=site,
                               writer_name=name), standby=standby, games=LEDGER_GAMES)


def links(url: str) -> list[dict[str, Any]]:
    db = Database(url)
    try:
        return [json.loads(e.state) for e in EventTable(db).by_topic(LINKED_TOPIC)]
    finally:
        db.close()


def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def export_and_verify(url: str, origin: str, site: str | None) -> tuple[int, str]:
    db = Database(url)
    try:
        notary = Notary(db, EventTable(db), NOTARY, origin, ROUND_END)
        notary.sync()
        notary.checkpoint_now()
        buf = io.StringIO()
        write_export(buf, EventTable(db), notary, public_key_bytes(NOTARY.public_key()))
    finally:
        db.close()
    out = io.StringIO()
    code = verify(buf.getvalue().splitlines(), checkpoint_key=public_key_bytes(
        NOTARY.public_key()), chain_keys=[CHAIN_PUBLIC], out=out, verbose=False, site=site)
    return code, out.getvalue().strip()


def test_the_origin_names_the_site() -> None:
    assert checkpoint_origin(None) == "sabot" and origin_site("sabot") is None
    assert checkpoint_origin("lyon") == "sabot/lyon" and origin_site("sabot/lyon") == "lyon"
    assert origin_site("sabot-test") is None and origin_site("sabot/") is None


def test_the_servers_notary_signs_for_its_site(sqlite_store_url: str) -> None:
    from services import bootstrap
    from services.settings import Settings

    flags = {"store": sqlite_store_url, "checkpoint_key": "72" * 32}
    for site, origin in ((None, "sabot"), ("lyon", "sabot/lyon")):
        settings = Settings.load({**flags, "site": site}, {}, None)
        follower = bootstrap.notary(settings)
        assert follower is not None and follower.origin == origin


def test_a_store_of_no_site_joins_a_site_and_stays_its(store_url: str) -> None:
    single = ledger(store_url, None)  # a single site (or a release before sites)
    single.open_account("o1", "ana")
    single.deposit("d1", "ana", 100)
    single.close()
    assert all("site" not in link for link in links(store_url))
    code, verdict = export_and_verify(store_url, checkpoint_origin(None), None)
    assert code == 0 and "site" not in verdict, verdict  # verified as before sites
    code, verdict = export_and_verify(store_url, checkpoint_origin(None), "lyon")
    assert code == 3 and "nothing signed in the export names a site" in verdict, verdict
    lyon = ledger(store_url, "lyon")  # the group's site lyon takes it: its links name it
    lyon.deposit("d2", "ana", 5)
    lyon.close()
    found = links(store_url)
    assert [link.get("site") for link in found][-1] == "lyon" and "site" not in found[0]
    code, verdict = export_and_verify(store_url, checkpoint_origin("lyon"), "lyon")
    assert code == 0 and "site lyon" in verdict, verdict  # its earlier links vouched for
    for other in ("nice", None):  # from now on it is lyon's
        with pytest.raises(WrongSite, match=r"belongs to site 'lyon'"):
            ledger(store_url, other)
    reader = ledger(store_url, None, standby=True)  # a reader (no site) reads it all the same
    try:
        assert reader.get_account("ana").balance == 105
    finally:
        reader.close()


def test_a_standby_of_another_site_stops_when_it_takes_over(sqlite_store_url: str) -> None:
    """Two servers of two sites started on one empty store (a configuration mistake): the
    first writes it for its site; the other, standing by, takes the store over and stops
    writing rather than sign a link of its site after theirs."""
    lyon = ledger(sqlite_store_url, "lyon", "lyon-1")
    nice = ledger(sqlite_store_url, "nice", "nice-1")
    try:
        with pytest.raises(NotTheWriter):
            nice.open_account("o0", "bob")
        lyon.open_account("o1", "ana")
        lyon.close()
        until(lambda: nice.writer_status()["active"])
        with pytest.raises(EvidenceBroken, match=r"belongs to site 'lyon'.*writing stopped"):
            nice.open_account("o2", "bob")
    finally:
        nice.close()
    assert {link.get("site") for link in links(sqlite_store_url)} == {"lyon"}
