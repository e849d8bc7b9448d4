"""Tampering with stored events in PostgreSQL, as a superuser past the append-only guard.

An edited, a deleted and two swapped events: the standalone verifier and the replay both name
the first tampered position.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from sabot_verify.__main__ import run

from services.bootstrap import REGULATOR_GAMES
from services.regulator.export import write_export
from services.regulator.replay import Replayer, verdict

from .conftest import Played
from .play import CHAIN_PUBLIC

pytestmark = pytest.mark.postgres


def superuser(url: str, *sql: tuple[str, tuple[Any, ...]]) -> None:
    """Run statements with the triggers off (session_replication_role = replica)."""
    with psycopg.connect(url) as conn:
        conn.execute("SET session_replication_role = replica")
        for statement, params in sql:
            conn.execute(statement, params)
        conn.commit()


def positions(url: str, topic: str) -> list[int]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT notification_id FROM sabot_events WHERE topic = %s ORDER BY notification_id",
            (topic,),
        ).fetchall()
    return [int(r[0]) for r in rows]


def check_first_tampered(p: Played, first: int) -> None:
    buf = io.StringIO()
    write_export(buf, p.events(), p.notary(), p.public_key, shoe_ids=p.shoes)
    out = io.StringIO()
    code = run(buf.getvalue().splitlines(), checkpoint_key=p.public_key, out=out,
               chain_keys=[CHAIN_PUBLIC])
    text = out.getvalue()
    assert code == 1, text
    assert text.strip().endswith(f"NOT VERIFIED; first tampered position {first}"), text
    v = verdict(Replayer(p.events(), p.notary(), games=REGULATOR_GAMES).shoe(p.shoes[0]))
    assert not v.identical
    assert v.first_difference is not None and v.first_difference.position == first, str(v)


def test_untouched_store_verifies(played_pg: Played) -> None:
    p = played_pg
    buf = io.StringIO()
    write_export(buf, p.events(), p.notary(), p.public_key)
    out = io.StringIO()
    assert run(buf.getvalue().splitlines(), checkpoint_key=p.public_key, out=out,
               chain_keys=[CHAIN_PUBLIC]) == 0
    assert verdict(Replayer(p.events(), p.notary(),
                            games=REGULATOR_GAMES).shoe(p.shoes[0])).identical
    # the guards hold for an ordinary session: the events and the Merkle log
    for statement in (
        "DELETE FROM sabot_events WHERE notification_id = 1",
        "UPDATE regulator_leaves SET hash = hash WHERE idx = 0",
        "DELETE FROM regulator_checkpoints",
    ):
        with pytest.raises(psycopg.Error), psycopg.connect(p.url) as conn:
            conn.execute(statement)


Tamper = Callable[[str], int]  # returns the first tampered position


def edit_a_card(url: str) -> int:
    pos = positions(url, "sabot.ledger:Coup.CardDealt")[40]
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT state FROM sabot_events WHERE notification_id = %s", (pos,)
        ).fetchone()
    assert row is not None
    state = json.loads(bytes(row[0]))
    state["code"] = "KH" if state["code"] != "KH" else "QS"
    edited = json.dumps(state, separators=(",", ":")).encode()
    superuser(url, ("UPDATE sabot_events SET state = %s WHERE notification_id = %s", (edited, pos)))
    return pos


def delete_a_movement(url: str) -> int:
    pos = positions(url, "sabot.ledger:Coup.MoneyMoved")[25]
    superuser(url, ("DELETE FROM sabot_events WHERE notification_id = %s", (pos,)))
    return pos


def swap_two_events(url: str) -> int:
    a, b = positions(url, "sabot.ledger:Coup.MoneyMoved")[30:32]
    superuser(
        url,
        ("UPDATE sabot_events SET notification_id = -1 WHERE notification_id = %s", (a,)),
        ("UPDATE sabot_events SET notification_id = %s WHERE notification_id = %s", (a, b)),
        ("UPDATE sabot_events SET notification_id = %s WHERE notification_id = -1", (b,)),
    )
    return min(a, b)


@pytest.mark.parametrize("tamper", [edit_a_card, delete_a_movement, swap_two_events])
def test_first_tampered_position(played_pg: Played, tamper: Tamper) -> None:
    first = tamper(played_pg.url)
    check_first_tampered(played_pg, first)


def shoe_closed_position(url: str) -> int:
    (pos,) = positions(url, "sabot.ledger:Shoe.Closed")
    return pos


def delete_shoe_closed(url: str) -> int:
    """The shoe's Shoe.Closed alone: the store then reads the shoe as still in play."""
    pos = shoe_closed_position(url)
    superuser(url, ("DELETE FROM sabot_events WHERE notification_id = %s", (pos,)))
    return pos


def delete_from_shoe_closed_on(url: str) -> int:
    """Shoe.Closed and everything stored after it (its shoe's last events, and the log's)."""
    pos = shoe_closed_position(url)
    superuser(url, ("DELETE FROM sabot_events WHERE notification_id >= %s", (pos,)))
    return pos


def delete_shoe_end(url: str) -> int:
    """Shoe.Closed and the shoe's own events after it, keeping the other events stored: the
    shoe's last stored event is then its last coup's Settled, with stored events between."""
    pos = shoe_closed_position(url)
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT notification_id FROM sabot_events WHERE notification_id >= %s AND ("
            "topic LIKE 'sabot.ledger:Shoe.%%' OR topic LIKE 'sabot.ledger:Coup.%%' "
            "OR topic = 'sabot.ledger:Table.ShoeEnded')",
            (pos,),
        ).fetchall()
    assert len(rows) > 2
    superuser(url, *[("DELETE FROM sabot_events WHERE notification_id = %s", (r[0],))
                     for r in rows])
    return pos


def default_export_fails_at(p: Played, first: int) -> str:
    buf = io.StringIO()
    write_export(buf, p.events(), p.notary(), p.public_key)  # `sabot export`, default arguments
    out = io.StringIO()
    code = run(buf.getvalue().splitlines(), checkpoint_key=p.public_key, out=out,
               chain_keys=[CHAIN_PUBLIC])
    text = out.getvalue()
    assert code == 1, text
    assert f"FAIL position {first} (leaf " in text, text
    assert "notarised event missing from the store (deleted?)" in text, text
    assert text.strip().endswith(f"NOT VERIFIED; first tampered position {first}"), text
    return buf.getvalue()


@pytest.mark.parametrize(
    "tamper", [delete_shoe_closed, delete_from_shoe_closed_on, delete_shoe_end]
)
def test_deleted_shoe_closed_is_reported(played_pg: Played, tamper: Tamper) -> None:
    p = played_pg
    first = tamper(p.url)
    # the shoe no longer reads as closed, so the default export selects no shoe ...
    exported = default_export_fails_at(p, first)
    assert json.loads(exported.splitlines()[0])["selection"] == {"shoes": []}
    # ... an export of the shoe by id, and its replay (with and without the regulator's key,
    # the seed being revealed by the deleted event), name the same position
    check_first_tampered(p, first)
    v = verdict(Replayer(p.events(), p.notary(), regulator_key=p.regulator,
                         games=REGULATOR_GAMES).shoe(p.shoes[0]))
    assert v.first_difference is not None and v.first_difference.position == first, str(v)
    assert v.first_difference.replayed is None  # the stored event is gone
