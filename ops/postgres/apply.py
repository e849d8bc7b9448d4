"""Apply the append-only guards to a PostgreSQL database (idempotent), as the tables' owner.

Usage: python ops/postgres/apply.py postgresql://owner@host:port/db [schema.table ...]
(the default table is ``sabot_events``; the snapshots table beside it and the writer lease's lock
function come with it). A ledger whose role owns the tables applies them itself at start;
``sabot store init`` applies them and the roles' grants (docs/postgres.md).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from services.ledger.schema import EVENT_TABLES, apply_schema

    args = sys.argv[1:] if argv is None else argv
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    tables = tuple(args[1:]) or EVENT_TABLES
    apply_schema(args[0], tables)
    print(f"append-only guards in place on {', '.join(tables)} and their snapshots")
    return 0


if __name__ == "__main__":
    sys.exit(main())
