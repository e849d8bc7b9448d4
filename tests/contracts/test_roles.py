"""The role table (who may call which RPC) is today's exactly: ``frozen.RPC_ROLES``, every row,
no more, no fewer (a change of a permission fails here first).

Its rows of the RPCs that call a game's commands come from the commands' declarations
(``services.ledger.methods.command(..., roles=..., rpcs=...)``), handed to the server by the
composition root (``Served.commands``; ``services.bootstrap.ROLE_TABLE``); the rest, the core's
RPCs and the read-only ones, from ``services.api.roles.CORE_ROLES``. A declaration the table
cannot take (an RPC calling commands of different roles, an RPC in both sources, a role that is
none) fails at start: ``role_table`` refuses it, and ``bootstrap`` builds the table when
imported, ``server.start`` before anything starts.
"""

from __future__ import annotations

from typing import Any

import pytest

from services.api.config import Config
from services.api.game import Served
from services.api.roles import CORE_ROLES, Role, RoleError, role_table
from services.bootstrap import GAMES, ROLE_TABLE, SERVED
from services.ledger.methods import COMMAND, Declared, Face, command, query
from tests.contracts import frozen
from tests.contracts.test_frozen_names import _served_methods


def _sorted(rows: Any) -> dict[str, tuple[bool, tuple[str, ...]]]:
    return {method: (writes, tuple(sorted(str(r) for r in roles)))
            for method, (writes, roles) in rows.items()}


def test_the_role_table_is_the_frozen_one_exactly() -> None:
    assert _sorted(ROLE_TABLE.rows) == _sorted(frozen.RPC_ROLES)


def _declared_rpcs() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for declared in SERVED.commands:
        for rpc in declared.rpcs:
            found.setdefault(rpc, []).append(declared.stored)
    return found


def test_every_game_command_declares_who_calls_it_through_which_rpcs() -> None:
    """Each command of the three games names its roles and the RPCs that call it; each of
    those RPCs is served, writes, and is not also a row of the core's table."""
    served = _served_methods()
    for game in GAMES:
        commands = [d for d in game.ledger.face.declared().values() if d.kind == COMMAND]
        assert commands, game.name
        for declared in commands:
            assert declared.roles and declared.rpcs, (game.name, declared.stored)
            for rpc in declared.rpcs:
                assert rpc in served, (declared.stored, rpc)
                assert rpc not in CORE_ROLES, (declared.stored, rpc)
                assert ROLE_TABLE.rows[rpc] == (True, frozenset(map(Role, declared.roles)))
    assert SERVED.commands == tuple(
        d for game in GAMES for d in game.ledger.face.declared().values())


def test_every_game_write_rpc_row_comes_from_a_declaration() -> None:
    """The frozen table's writing rows that are not the core's are exactly the declared
    RPCs: no game write row is written by hand."""
    declared = _declared_rpcs()
    writes = {m for m, (w, _) in frozen.RPC_ROLES.items() if w and m not in CORE_ROLES}
    assert set(declared) == writes
    assert len(writes) == 12 + 8 + 4  # Trente et Quarante's, Treinta y Una's, Cuarenta's
    assert not {m for m, (w, _) in CORE_ROLES.items() if w} & set(declared)


# --- declarations the table refuses ----------------------------------------------------------


class _Commands:
    def one(self, request_id: str, round_id: str, *, actor: Any) -> str:
        return round_id

    def two(self, request_id: str, round_id: str, *, actor: Any) -> str:
        return round_id

    def look(self, round_id: str) -> str:
        return round_id


RPC = "/sabot.toy.v1.ToyService/"


def _face(one: dict[str, Any], two: dict[str, Any]) -> type[Face]:
    class ToyLedger(Face):
        first = command("toy_one", _Commands.one, **one)
        second = command("toy_two", _Commands.two, **two)
        looked = query("toy_look", _Commands.look)

    return ToyLedger


def _table(face: type[Face]) -> Any:
    return role_table(tuple(face.declared().values()))


def test_an_rpc_calling_commands_of_one_role_takes_it() -> None:
    face = _face({"roles": (Role.CROUPIER,), "rpcs": (RPC + "Play",)},
                 {"roles": (Role.CROUPIER,), "rpcs": (RPC + "Play", RPC + "Again")})
    table = _table(face)
    assert table.rows[RPC + "Play"] == (True, frozenset({Role.CROUPIER}))
    assert table.rows[RPC + "Again"] == (True, frozenset({Role.CROUPIER}))
    assert table.allowed(RPC + "Play", Role.CROUPIER)
    assert not table.allowed(RPC + "Play", Role.PLAYER)
    assert not table.allowed(RPC + "Play", Role.REGULATOR)  # a write
    assert table.allowed(RPC + "Play", Role.ADMIN)
    assert {**CORE_ROLES, RPC + "Play": table.rows[RPC + "Play"],
            RPC + "Again": table.rows[RPC + "Again"]} == table.rows


def test_an_rpc_calling_commands_of_different_roles_is_refused() -> None:
    face = _face({"roles": (Role.CROUPIER,), "rpcs": (RPC + "Play",)},
                 {"roles": (Role.CROUPIER, Role.PLAYER), "rpcs": (RPC + "Play",)})
    with pytest.raises(RoleError, match=r"toy_one.*toy_two.*commands of different roles"):
        _table(face)


def test_a_declaration_disagreeing_with_the_core_table_is_refused() -> None:
    """A declared RPC that the core's table holds (even with the same roles): one source."""
    for roles in ((Role.CROUPIER,), (Role.PLAYER,)):
        face = _face({"roles": roles, "rpcs": ("/sabot.v1.TableService/OpenTable",)}, {})
        with pytest.raises(RoleError, match="OpenTable: its row is the core's"):
            _table(face)


@pytest.mark.parametrize("roles", [("croupierr",), (Role.ADMIN,), (Role.REGULATOR,)])
def test_a_role_that_is_not_one_a_command_may_declare_is_refused(roles: tuple[str, ...]) -> None:
    with pytest.raises(RoleError, match="toy_one"):
        _table(_face({"roles": roles, "rpcs": (RPC + "Play",)}, {}))


@pytest.mark.parametrize("declared", [
    lambda: command("toy_one", _Commands.one, roles=(Role.CROUPIER,)),
    lambda: command("toy_one", _Commands.one, rpcs=(RPC + "Play",)),
    lambda: command("toy_one", _Commands.one, roles=(Role.PLAYER,),
                    rpcs=(RPC + "Play", RPC + "Play")),
    lambda: Declared("query", "toy_look", _Commands.look, (Role.PLAYER,), (RPC + "Look",)),
])
def test_roles_go_with_rpcs_and_a_query_declares_neither(declared: Any) -> None:
    with pytest.raises(TypeError, match="toy_"):
        declared()


def test_a_server_handed_declarations_the_table_refuses_does_not_start() -> None:
    """``server.start`` builds the table first: it refuses before serving anything (the
    ledger is not even looked at)."""
    from services.api import server

    face = _face({"roles": (Role.CROUPIER,), "rpcs": (RPC + "Play",)},
                 {"roles": (Role.PLAYER,), "rpcs": (RPC + "Play",)})
    games = Served(api=SERVED.api, read=SERVED.read, regulator=SERVED.regulator,
                   commands=(*SERVED.commands, *face.declared().values()))
    with pytest.raises(RoleError, match="commands of different roles"):
        server.start(Config(listen="127.0.0.1:0"), None, games=games)  # type: ignore[arg-type]
