"""The servicer of the frozen ``sabot.v1.RegulatorService``: its game-neutral RPCs in
``services/api/regulator.py``, each game's own (Trente et Quarante's ReplayCoup, Treinta y
Una's ReplayRound, Cuarenta's ReplayMatch) plugged in through the game's API port
(``ApiGame.regulator_rpcs``, handed in by the composition root), every RPC of the proto
served."""

from __future__ import annotations

import pytest

from services.api import regulator
from services.api.game import Played
from services.api.gen.sabot.v1 import regulator_pb2, regulator_pb2_grpc
from services.bootstrap import SERVED
from services.cuarenta.regulator import MatchReplay
from services.treinta_y_una.regulator import RoundReplay
from services.trente_et_quarante.regulator import CoupReplay

NEUTRAL = {"ReplayShoe", "GetLatestCheckpoint", "GetInclusionProof", "GetConsistencyProof",
           "ExportEvents"}


def _rpcs() -> set[str]:
    return set(regulator_pb2.DESCRIPTOR.services_by_name["RegulatorService"].methods_by_name)


def test_the_neutral_servicer_serves_no_game_rpc() -> None:
    own = {n for n in vars(regulator.RegulatorServicer) if n[:1].isupper()}
    assert own == NEUTRAL


def test_every_rpc_of_the_service_is_served_by_the_neutral_part_or_a_game() -> None:
    played = Played(SERVED.api)
    cls = regulator.servicer_class(tuple(m for g in played.games if g.regulator_rpcs is not None
                                         for m in g.regulator_rpcs()))
    base = regulator_pb2_grpc.RegulatorServiceServicer
    served = {name for name in _rpcs() if getattr(cls, name) is not getattr(base, name)}
    assert served == _rpcs()
    tq = played.named("trente-et-quarante")
    assert tq.regulator_rpcs is not None and tq.regulator_rpcs() == (CoupReplay,)
    assert {n for n in vars(CoupReplay) if n[:1].isupper()} == {"ReplayCoup"}
    tyu, cu = played.named("treinta-y-una"), played.named("cuarenta")
    assert tyu.regulator_rpcs is not None and tyu.regulator_rpcs() == (RoundReplay,)
    assert cu.regulator_rpcs is not None and cu.regulator_rpcs() == (MatchReplay,)
    assert {n for n in vars(RoundReplay) if n[:1].isupper()} == {"ReplayRound"}
    assert {n for n in vars(MatchReplay) if n[:1].isupper()} == {"ReplayMatch"}
    assert _rpcs() - NEUTRAL == {"ReplayCoup", "ReplayRound", "ReplayMatch"}  # issue 22's two
    assert issubclass(cls, regulator.RegulatorServicer) and issubclass(cls, CoupReplay)
    assert issubclass(cls, RoundReplay) and issubclass(cls, MatchReplay)


def test_an_rpc_two_games_define_is_refused() -> None:
    class Other:
        def ReplayCoup(self) -> None:
            raise AssertionError

    with pytest.raises(ValueError, match=r"ReplayCoup of sabot\.v1\.RegulatorService"):
        regulator.servicer_class((CoupReplay, Other))
    assert regulator.servicer_class(()) is regulator.RegulatorServicer
