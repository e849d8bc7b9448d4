"""Treinta y Una's RPC of ``sabot.v1.RegulatorService``: ReplayRound (one round replayed beside
its recorded events, online).

A round plays its own shoe, so its replay is the shoe's (``services.regulator.replay.Replayer``:
the notarised leaves over the span checked first, the commitment, then the game's ``replay``,
``services/treinta_y_una/replay.py``), named by the round. Mixed into the service's one servicer
through the game's registry entry (``Game.regulator_rpcs``), as Trente et Quarante's ReplayCoup
(``services/trente_et_quarante/regulator.py``).
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc

from services.api import errors
from services.api.gen.sabot.v1 import regulator_pb2
from services.api.regulator import RegulatorServicer, replay_answers
from services.treinta_y_una.commands import TreintaYUnaLedger


class RoundReplay(RegulatorServicer):
    """ReplayRound of ``sabot.v1.RegulatorService``."""

    def ReplayRound(
        self, request: regulator_pb2.ReplayRoundRequest, context: grpc.ServicerContext
    ) -> Iterator[regulator_pb2.ReplayResponse]:
        from services.treinta_y_una.servicer import round_name

        table_id, round_id = round_name("name", request.name)
        view = self.read({"round_id": "name"},
                         self.ledger.game(TreintaYUnaLedger).get_round, round_id)
        if view.table_id != table_id:
            raise errors.ApiError(grpc.StatusCode.NOT_FOUND, "name", "NOT_FOUND",
                                  "no such round at this table")
        self._catch_up()
        with self._tree() as notary:
            replayer = self._replayer(notary)
            yield from replay_answers(replayer.shoe(view.shoe_id), request.differences_only,
                                      context)


def regulator_rpcs() -> tuple[type, ...]:
    """``Game.regulator_rpcs``: the game's RPCs of ``sabot.v1.RegulatorService``."""
    return (RoundReplay,)
