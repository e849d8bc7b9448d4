"""The role table (who may call which RPC) is today's exactly: ``frozen.RPC_ROLES``, every row,
no more, no fewer (a change of a permission fails here first)."""

from __future__ import annotations

from tests.contracts import frozen


def _sorted(rows: dict[str, tuple[bool, frozenset[str]]] | dict[str, tuple[bool, tuple[str, ...]]]
            ) -> dict[str, tuple[bool, tuple[str, ...]]]:
    return {method: (writes, tuple(sorted(roles))) for method, (writes, roles) in rows.items()}


def test_the_role_table_is_the_frozen_one_exactly() -> None:
    from services.api.roles import RPC_ROLES

    table = {m: (w, frozenset(r.value for r in roles)) for m, (w, roles) in RPC_ROLES.items()}
    assert _sorted(table) == _sorted(frozen.RPC_ROLES)
