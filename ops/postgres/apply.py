"""Apply the append-only schema setup to a PostgreSQL database (idempotent).

Usage: python ops/postgres/apply.py postgresql://user@host:port/db [table ...]
(the default table is ``sabot_events``; the ledger applies it itself at start).
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
    print(f"append-only triggers in place on {', '.join(tables)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
