"""A rebuild (big batches: each view applies thousands of events at once) gives row for row the
read models the live path gives (the projector applying one event per transaction, as a
follower just behind a quiet log does), on both stores, from the same mixed log: Trente et
Quarante shoes (seeded stakes, insurance), a Treinta y Una round and a Cuarenta match."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.bootstrap import READ_GAMES
from services.ledger.api import Ledger
from services.projections import default_views
from services.projections.projector import Projector
from tests.cuarenta.support import Game as Cuarenta
from tests.cuarenta.support import Referee, fund
from tests.treinta_y_una.support import Croupier, table_ledger

CHANCES = ("noir", "rouge", "couleur", "inverse")
TQ_PLAYERS = ("tq-a", "tq-b", "tq-c")


def _trente_et_quarante(ledger: Ledger, seed: int, coups: int) -> None:
    """Seeded play at one table: each player stakes on a chance each coup, some insured."""
    rng = random.Random(seed)
    n = 0

    def rid() -> str:
        nonlocal n
        n += 1
        return f"tq{seed}-{n}"

    table, players = f"tq-{seed}", [f"{p}-{seed}" for p in TQ_PLAYERS]
    ledger.open_table(rid(), table, "francaise")
    for p in players:
        ledger.open_account(rid(), p)
        ledger.deposit(rid(), p, 10**8)
    shoe = ledger.open_shoe(rid(), table)
    ledger.cut(rid(), shoe.shoe_id, rng.randint(1, 311), players[0])
    for _ in range(coups):
        coup = ledger.open_coup(rid(), table)
        for p in players:
            if any(s.account_id == p for s in ledger.get_coup(coup.coup_id).layout):
                continue  # a stake carried over (a prisoner) is still there
            chance = rng.choice(CHANCES)
            r = ledger.place_stake(rid(), coup.coup_id, p, chance, rng.randint(1, 50) * 100)
            if rng.random() < 0.3 and r.stake is not None and chance in ("noir", "rouge"):
                ledger.insure(rid(), coup.coup_id, r.stake.stake_id)
        ledger.deal(rid(), coup.coup_id)
        if ledger.settle(rid(), coup.coup_id).cut_card_reached:
            break


def _tables(p: Projector) -> dict[str, list[tuple[str, ...]]]:
    """Every row of every read-model table (and the tracking rows but their event time), as
    text, sorted."""
    out: dict[str, list[tuple[str, ...]]] = {}
    with p.store.read() as tx:
        for view in p.views:
            for table in view.tables:
                rows = tx.query(f"SELECT * FROM {{s}}{table.name}")
                out[table.name] = sorted(tuple(_text(v) for v in r) for r in rows)
        out["rm_tracking"] = sorted(
            (str(r[0]), str(r[1]), str(r[2]))
            for r in tx.query("SELECT view, position, schema FROM {s}rm_tracking"))
    return out


def _text(value: Any) -> str:
    return "\\N" if value is None else str(value)


def _empty(p: Projector) -> None:
    with p.store.transaction() as tx:
        for v in p.views:
            v.drop(tx)
            tx.execute("DELETE FROM {s}rm_tracking WHERE view = ?", (v.name,))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def mixed(request: pytest.FixtureRequest) -> Any:
    """A ledger holding the three games' play (the store given by ``store_url``)."""
    url = str(request.getfixturevalue(f"{request.param}_store_url"))
    with table_ledger(url) as (ledger, tyu):
        _trente_et_quarante(ledger, seed=7, coups=12)
        Croupier(ledger, tyu).play()
        ledger.open_table("table-mesa", "mesa-1", None, None, game="cuarenta")
        fund(ledger, ["eva", "fede"])
        cuarenta = Cuarenta(ledger)
        Referee(cuarenta, cuarenta.open_match("o", "mesa-1", ["eva", "fede"], stake=100).match
                ).finish()
        _trente_et_quarante(ledger, seed=8, coups=6)  # a second table's, after the others
        yield ledger


def test_rebuild_gives_the_rows_of_the_event_by_event_path(mixed: Ledger) -> None:
    live = Projector(mixed.app, default_views(games=READ_GAMES))
    _empty(live)
    live = Projector(mixed.app, default_views(games=READ_GAMES))
    assert live.catch_up(batch_size=1) == live.head()
    expected_rows, expected_digests = _tables(live), live.digests()
    assert all(expected_rows[t] for t in ("rm_coup", "rm_coup_step", "rm_statement",
                                          "rm_shoe", "rm_recon"))
    rebuilt = Projector(mixed.app, default_views(games=READ_GAMES))
    assert rebuilt.rebuild() == rebuilt.head()
    assert _tables(rebuilt) == expected_rows
    assert rebuilt.digests() == expected_digests
    rebuilt.rebuild(drop=True, batch_size=10**6)  # one batch: the whole log at once
    assert _tables(rebuilt) == expected_rows
    assert rebuilt.digests() == expected_digests


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(batch=st.integers(2, 600), stop=st.integers(0, 400))
def test_any_batches_give_the_rows_of_the_event_by_event_path(
    sqlite_store_url: str, batch: int, stop: int
) -> None:
    """SQLite, hypothesis: a catch-up stopped anywhere, then a rebuild at any batch size."""
    with table_ledger(sqlite_store_url.replace(".db", f"-{batch}-{stop}.db")) as (ledger, tyu):
        _trente_et_quarante(ledger, seed=batch, coups=4)
        Croupier(ledger, tyu).play()
        live = Projector(ledger.app, default_views(games=READ_GAMES))
        live.catch_up(batch_size=1)
        expected = _tables(live)
        rebuilt = Projector(ledger.app, default_views(games=READ_GAMES))
        rebuilt.rebuild(batch_size=batch)
        assert _tables(rebuilt) == expected
        _empty(rebuilt)
        partial = Projector(ledger.app, default_views(games=READ_GAMES))
        partial.catch_up(batch_size=batch, max_events=stop)
        Projector(ledger.app, default_views(games=READ_GAMES)).catch_up(batch_size=batch)
        assert _tables(partial) == expected
