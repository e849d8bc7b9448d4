"""The servicer of the frozen ``sabot.v1.TableService``: its game-neutral RPCs in
``services/api/tables.py``, each game's own (Trente et Quarante's shoes and coups) plugged in
through the game's API port (``ApiGame.table_rpcs``, handed in by the composition root), every
RPC of the proto served."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from services.api import tables
from services.api.gen.sabot.v1 import table_pb2, table_pb2_grpc
from services.bootstrap import SERVED
from services.trente_et_quarante.tables import CoupRpcs

ROOT = Path(__file__).resolve().parents[2]
NEUTRAL = {"OpenTable", "GetTable", "ListTables", "CloseTable"}


def _rpcs() -> set[str]:
    return set(table_pb2.DESCRIPTOR.services_by_name["TableService"].methods_by_name)


def test_the_neutral_servicer_knows_no_game() -> None:
    tree = ast.parse((ROOT / "services/api/tables.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m and "trente_et_quarante" in m}
    own = {n for n in vars(tables.TableServicer) if n[:1].isupper()}
    assert own == NEUTRAL


def test_every_rpc_of_the_service_is_served_by_the_neutral_part_or_a_game() -> None:
    cls = tables.servicer_class(tuple(m for g in SERVED.api if g.table_rpcs is not None
                                      for m in g.table_rpcs()))
    base = table_pb2_grpc.TableServiceServicer
    served = {name for name in _rpcs() if getattr(cls, name) is not getattr(base, name)}
    assert served == _rpcs()
    tq = next(g for g in SERVED.api if g.name == "trente-et-quarante")
    assert tq.table_rpcs is not None and tq.table_rpcs() == (CoupRpcs,)
    assert {n for n in vars(CoupRpcs) if n[:1].isupper()} == _rpcs() - NEUTRAL
    assert issubclass(cls, tables.TableServicer) and issubclass(cls, CoupRpcs)


def test_an_rpc_two_games_define_is_refused() -> None:
    class Other:
        def OpenCoup(self) -> None:
            raise AssertionError

    with pytest.raises(ValueError, match="OpenCoup"):
        tables.servicer_class((CoupRpcs, Other))
    assert tables.servicer_class(()) is tables.TableServicer
