"""The bytes a read model holds: every row of every table of a view, as text."""

from __future__ import annotations

from services.projections.store import ReadStore
from services.projections.view import View


def view_bytes(store: ReadStore, view: View) -> bytes:
    out = []
    with store.read() as tx:
        for table in view.tables:
            for row in tx.query(f"SELECT * FROM {{s}}{table.name}"):
                out.append("\t".join(str(v) for v in row))
    return "\n".join(out).encode()
