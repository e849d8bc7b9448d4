"""Cuarenta's RPC of ``sabot.v1.RegulatorService``: ReplayMatch (one match replayed beside its
recorded events, online).

The replay is ``services.cuarenta.replay.replay_match`` (the offline ``sabot store replay
--match``'s) on the server's own connection to the store, each hand's seed revealed, else the
operator's sealed seed (the server's seal key; the regulator's escrow key never comes here).
Mixed into the service's one servicer through the game's registry entry
(``Game.regulator_rpcs``), as Trente et Quarante's ReplayCoup.
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc

from services.api import errors
from services.api.gen.sabot.v1 import regulator_pb2
from services.api.regulator import RegulatorServicer, replay_answers
from services.cuarenta.commands import CuarentaLedger


class MatchReplay(RegulatorServicer):
    """ReplayMatch of ``sabot.v1.RegulatorService``."""

    def ReplayMatch(
        self, request: regulator_pb2.ReplayMatchRequest, context: grpc.ServicerContext
    ) -> Iterator[regulator_pb2.ReplayResponse]:
        from services.cuarenta.replay import replay_match
        from services.cuarenta.servicer import parse_match

        table_id, match_id = parse_match("name", request.name)
        if not match_id:
            raise errors.invalid("name", "required")
        view = self.read({"match_id": "name"}, self.ledger.game(CuarentaLedger).get_match,
                         match_id)
        if view.table_id != table_id:
            raise errors.ApiError(grpc.StatusCode.NOT_FOUND, "name", "UNKNOWN_MATCH",
                                  f"no match {match_id} at table {table_id}")
        self._catch_up()
        with self._tree() as notary:
            steps = replay_match(notary.events, match_id, seal_key=self.seal_key)
            yield from replay_answers(steps, request.differences_only, context)


def regulator_rpcs() -> tuple[type, ...]:
    """``Game.regulator_rpcs``: the game's RPCs of ``sabot.v1.RegulatorService``."""
    return (MatchReplay,)
