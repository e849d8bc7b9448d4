"""Two sites side by side on one machine (issue 23 item 5): two stores (two SQLite files, or two
PostgreSQL schemas), a ledger of each site on its own store, both sites with the same keys;
a little play at each; then the head office's gaming day against the sites' own reports, each
site's regulator's export against its site and the other's, and every way a store or an
export of one site could be taken for the other's."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sabot_verify.__main__ import main as verify_main
from sabot_verify.__main__ import run as verify_run

from services.cli import main as sabot_main
from services.ledger.evidence import WrongSite
from tests.conftest import PG_HOST, PG_PORT, PG_USER
from tests.regulator.play import CHAIN_PUBLIC, Player, make_ledger

DAY = "2026-01-01"  # the play's clock starts at 2026-01-01 12:00 UTC (tests/regulator/play.py)
CHECKPOINT_KEY = bytes([0x33]) * 32  # the notary's key, the same at both sites
SITES = ("lyon", "nice")


@dataclass
class Site:
    name: str
    url: str
    export: Path | None = None


def _play(site: Site, seed: int) -> None:
    """A shoe of a few coups, closed, at the site's table (the site named in every link)."""
    ledger, rng = make_ledger(site.url, seed, site=site.name)
    try:
        player = Player(ledger, rng, f"t-{site.name}", "francaise")
        shoe = player.open_shoe()
        for _ in range(3 + seed % 2):
            player.coup()
        ledger.close_shoe(player.rid(), shoe)
    finally:
        ledger.close()


def _sabot(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = sabot_main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def _verify(path: Path, **kw: Any) -> tuple[int, str]:
    out = io.StringIO()
    with path.open(encoding="utf-8") as lines:
        code = verify_run(lines, checkpoint_key=_public(), out=out, chain_keys=[CHAIN_PUBLIC],
                          verbose=False, **kw)
    return code, out.getvalue().strip()


HEAD_OFFICE_ROLE = "sabot_test_head_office"  # cluster-wide, made if missing, never dropped


def _read_only(url: str) -> str:
    """``url`` as a role whose every transaction is read-only (PostgreSQL: as on a replica),
    given SELECT on the store's tables; a SQLite URL as it is."""
    if not url.startswith("postgresql:"):
        return url
    database, _, schema = url.rpartition("/")[2].partition("?schema=")
    with psycopg.connect(f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname={database}",
                         autocommit=True) as conn:
        conn.execute(f"DO $$ BEGIN CREATE ROLE {HEAD_OFFICE_ROLE} LOGIN; EXCEPTION WHEN "
                     "duplicate_object OR unique_violation THEN NULL; END $$")
        conn.execute(f"ALTER ROLE {HEAD_OFFICE_ROLE} SET default_transaction_read_only = on")
        conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO {HEAD_OFFICE_ROLE}')
        conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO {HEAD_OFFICE_ROLE}')
    return url.replace(f"//{PG_USER}@", f"//{HEAD_OFFICE_ROLE}@", 1)


def _public() -> bytes:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.from_private_bytes(CHECKPOINT_KEY).public_key().public_bytes_raw()


@pytest.fixture(scope="module",
                params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def two_sites(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
              ) -> list[Site]:
    """Both sites' stores, played at once per module (SQLite files, or two schemas of the
    session's database), and each site's regulator's export (the tests only read them)."""
    folder = tmp_path_factory.mktemp("sites")
    if request.param == "sqlite":
        urls = [f"sqlite:///{folder / name}.db" for name in SITES]
    else:
        database = str(request.getfixturevalue("postgres_database"))
        urls = []
        with psycopg.connect(f"host={PG_HOST} port={PG_PORT} user={PG_USER} "
                             f"dbname={database}", autocommit=True) as conn:
            for name in SITES:
                schema = f"site_{name}_{uuid.uuid4().hex[:8]}"
                conn.execute(f'CREATE SCHEMA "{schema}"')
                urls.append(f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{database}"
                            f"?schema={schema}")
    sites = [Site(name, url) for name, url in zip(SITES, urls, strict=True)]
    for seed, site in enumerate(sites, 3):
        _play(site, seed)
    key = folder / "checkpoint.key"
    key.write_text(CHECKPOINT_KEY.hex() + "\n")
    key.chmod(0o600)
    for site in sites:  # the regulator's export of each site, signed at its head
        site.export = folder / f"{site.name}.jsonl"
        code, _, err = _sabot("store", "export", "--store", site.url, "--checkpoint-private-key",
                              str(key), "--site", site.name, "-o", str(site.export), "--quiet")
        assert code == 0, err
    return sites


def test_the_head_office_adds_up_the_sites_own_reports(two_sites: list[Site],
                                                       tmp_path: Path) -> None:
    argv = ["store", "report", "head-office", "--day", DAY]
    for site in two_sites:
        argv += ["--site", f"{site.name}={site.url}"]
    code, text, err = _sabot(*argv, "--catch-up", "--format", "csv")  # read models built
    assert code == 0 and err == "", err
    rows = _rows(text)
    own: dict[str, list[dict[str, str]]] = {}
    for site in two_sites:  # each site's own report of the day
        code, mine, err = _sabot("store", "report", "day", "--store", site.url, "--day", DAY,
                                 "--format", "csv")
        assert code == 0, err
        own[site.name] = [r for r in _rows(mine) if r["table_id"] == "total"]
        assert any(r["game"] == "trente-et-quarante" and int(r["handle_minor"]) > 0
                   for r in own[site.name])
    for site in two_sites:  # each site's part is its own report's totals, row for row
        part = [{k: v for k, v in r.items() if k != "site"} for r in rows
                if r["site"] == site.name]
        assert part == own[site.name]
    group = {(r["game"], r["currency"]): r for r in rows if r["site"] == "all"}
    assert {(r["game"], r["currency"]) for rs in own.values() for r in rs} == set(group)
    for (game, currency), total in group.items():
        for column in ("units", "handle_minor", "house_win_minor", "deposits_minor",
                       "withdrawals_minor"):
            parts = [int(r[column] or 0) for rs in own.values() for r in rs
                     if (r["game"], r["currency"]) == (game, currency)]
            assert int(total[column] or 0) == sum(parts), (game, column)
    assert int(group[("all", "EUR")]["handle_minor"]) > 0
    sites = tmp_path / "sites.toml"  # the same sites from a file; read as they are, reading
    sites.write_text('format = "SABOT-SITES-1"\n' + "".join(  # only (PostgreSQL: a role
        f'[sites.{s.name}]\nstore = "{_read_only(s.url)}"\n' for s in two_sites))  # that may
    # not write, as on a replica)
    code, text, _ = _sabot("store", "report", "head-office", "--day", DAY, "--sites",
                           str(sites), "--format", "json")
    doc = json.loads(text)
    assert code == 0 and [s["site"] for s in doc["sites"]] == list(SITES)
    assert all(s["facts"]["events_behind"] == 0 for s in doc["sites"])
    assert [r["handle_minor"] for r in doc["totals"] if r["game"] == "all"] == [
        int(group[("all", "EUR")]["handle_minor"])]
    code, text, _ = _sabot(*argv)
    assert code == 0 and "site lyon: shift 1 06-14" in text and "Sites and group (EUR)" in text


def test_the_head_office_refuses_a_store_that_is_another_sites(two_sites: list[Site]) -> None:
    lyon, nice = two_sites
    code, _, err = _sabot("store", "report", "head-office", "--day", DAY,
                          "--site", f"lyon={nice.url}", "--site", f"nice={lyon.url}")
    assert code == 3 and err.count("\n") == 1
    assert "site lyon: its store belongs to site 'nice'" in err
    code, _, err = _sabot("store", "report", "head-office", "--day", DAY,
                          "--site", f"lyon={lyon.url}", "--site", f"paris={lyon.url}")
    assert code == 2 and "site paris: the same store as site lyon" in err


def test_one_store_one_site(two_sites: list[Site]) -> None:
    """A writer of one site refuses the other's store, as does a writer of no site; a reader
    of it (no site) reads it; its offline notary refuses to sign for another site."""
    lyon, _ = two_sites
    for wrong in ("nice", None):
        with pytest.raises(WrongSite, match=r"the store belongs to site 'lyon'"):
            make_ledger(lyon.url, 9, site=wrong)
    code, _, err = _sabot("store", "balance-sheet", "--store", lyon.url)
    assert code == 0, err
    code, _, err = _sabot("store", "export", "--store", lyon.url, "--site", "nice",
                          "--checkpoint-public-key", _public().hex(), "-o", "/dev/null")
    assert code == 3 and err.count("\n") == 1
    assert "the store belongs to site 'lyon'" in err and "not to site 'nice'" in err


def test_an_export_of_one_site_never_verifies_as_the_others(two_sites: list[Site],
                                                             tmp_path: Path) -> None:
    """Both sites sign with the same chain key and the same checkpoint key: the site their
    links and checkpoints name tells their logs apart."""
    for site, other in (two_sites, two_sites[::-1]):
        assert site.export is not None
        header = json.loads(site.export.read_text().split("\n", 1)[0])
        assert header["site"] == site.name and header["origin"] == f"sabot/{site.name}"
        code, verdict = _verify(site.export, site=site.name)
        assert code == 0 and verdict.startswith("VERIFIED") and f"site {site.name}" in verdict
        code, verdict = _verify(site.export, site=other.name)
        assert code == 1 and verdict.startswith("NOT VERIFIED"), verdict
        assert f"the log of site {site.name!r}" in verdict and repr(other.name) in verdict
        code, verdict = _verify(site.export)  # no site pinned: whose log is it?
        assert code == 3 and f"the export names site {site.name!r}" in verdict, verdict
    lyon = two_sites[0]
    assert lyon.export is not None
    lines = lyon.export.read_text().splitlines()
    header = json.loads(lines[0])
    header["site"] = "nice"  # relabelled as nice's: the header is not what is signed
    forged = tmp_path / "relabelled.jsonl"
    forged.write_text("\n".join([json.dumps(header, sort_keys=True, separators=(",", ":")),
                                 *lines[1:]]) + "\n")
    code, verdict = _verify(forged, site="nice")
    assert code == 1 and "'lyon'" in verdict, verdict
    trust = tmp_path / "nice.toml"  # nice's regulator's trust file: its keys and its site
    trust.write_text(f'format = "SABOT-TRUST-1"\ncheckpoint_public_key = "{_public().hex()}"\n'
                     f'chain_public_keys = ["{CHAIN_PUBLIC.hex()}"]\nsite = "nice"\n')
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert verify_main([str(lyon.export), "--trust", str(trust)]) == 1
        assert verify_main([str(two_sites[1].export), "--trust", str(trust)]) == 0
    assert "not of site 'nice' (pinned)" in out.getvalue()
