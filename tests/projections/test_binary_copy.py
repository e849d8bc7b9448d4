"""A plain INSERT of many rows (``Tx.executemany``): on PostgreSQL a ``COPY`` in the binary
format when every column's type is known; the rows read back exactly as the same rows written
one statement per batch through ``unnest`` (``ON CONFLICT``), and as on SQLite."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.projections.store import ReadStore, _copy_types
from services.projections.view import Table

from .fakeapp import Tills

COLUMNS = (("k", "BIGINT"), ("t", "TEXT"), ("n", "BIGINT"), ("e", "TEXT"))
COPIED = Table("rm_copy_check", COLUMNS, ("k",))
UPSERTED = Table("rm_copy_upsert", COLUMNS, ("k",))


class Kind(StrEnum):  # the domain's enums (a chance, a stake's status) are StrEnums
    NOIR = "noir"
    ROUGE = "rouge"


# text as stored: no NUL (PostgreSQL's text has none), no lone surrogates (not UTF-8)
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
               max_size=40)
ROW = st.tuples(
    st.one_of(st.none(), TEXT),
    st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
    st.one_of(st.none(), TEXT, st.sampled_from(list(Kind))),
)


def test_the_binary_format_only_where_every_column_type_is_known() -> None:
    assert _copy_types("rm_copy_check", "k, t, n, e") == ["int8", "text", "int8", "text"]
    assert _copy_types("rm_copy_check", "k,e") == ["int8", "text"]
    assert _copy_types("rm_copy_check", "k, nope") is None
    assert _copy_types("rm_not_a_view_table", "k") is None


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=st.lists(ROW, max_size=60))
def test_copied_rows_read_back_as_upserted_ones(
    store_env: dict[str, str], rows: list[tuple[Any, Any, Any]]
) -> None:
    app = Tills(env=store_env)
    try:
        copied, upserted = _write_both(ReadStore.of(app), [(k, *r) for k, r in enumerate(rows)])
    finally:
        app.close()
    assert copied == upserted
    assert copied == [(k, t, n, None if e is None else str(e))
                      for k, (t, n, e) in enumerate(rows)]
    assert all(type(r[3]) is str for r in copied if r[3] is not None)


def _write_both(store: ReadStore, keyed: list[tuple[Any, ...]]
                ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    with store.transaction() as tx:
        for table in (COPIED, UPSERTED):
            tx.script([f"DROP TABLE IF EXISTS {{s}}{table.name}", *table.create_sql()])
        tx.executemany("INSERT INTO {s}rm_copy_check (k, t, n, e) VALUES (?, ?, ?, ?)", keyed)
        tx.executemany("INSERT INTO {s}rm_copy_upsert (k, t, n, e) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT (k) DO NOTHING", keyed)
    with store.read() as tx:
        copied = tx.query("SELECT k, t, n, e FROM {s}rm_copy_check ORDER BY k")
        upserted = tx.query("SELECT k, t, n, e FROM {s}rm_copy_upsert ORDER BY k")
    return copied, upserted
