"""Trente et Quarante's RPC of ``sabot.v1.RegulatorService``: ReplayCoup (one coup replayed
beside its recorded events).

The service is a frozen contract; its game-neutral part (a shoe's replay, checkpoints, proofs,
export) is ``services/api/regulator.py``. This mixin is plugged in through the game's registry
entry (``Game.regulator_rpcs`` in ``services/trente_et_quarante/game.py``): the server mixes it
into the one servicer of the service (``services.api.regulator.servicer``).
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc

from services.api import names
from services.api.gen.sabot.v1 import regulator_pb2
from services.api.regulator import RegulatorServicer, replay_answers


class CoupReplay(RegulatorServicer):
    """ReplayCoup of ``sabot.v1.RegulatorService``."""

    def ReplayCoup(
        self, request: regulator_pb2.ReplayCoupRequest, context: grpc.ServicerContext
    ) -> Iterator[regulator_pb2.ReplayResponse]:
        table_id, shoe_id, coup_id = names.coup_name("name", request.name)
        self.check_round(table_id, shoe_id, coup_id, "name", "coup")
        self._catch_up()
        with self._tree() as notary:
            replayer = self._replayer(notary)
            yield from replay_answers(replayer.coup(coup_id), request.differences_only, context)
