"""Transcodings of Trente et Quarante's value types for the event store (exact types, as
stored): the game's ``LedgerGame.transcodings``, registered by every ledger application that
reads or writes its events (``services.ledger.application.LedgerApplication``)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from eventsourcing.persistence import JSONTranscoder, Transcoding

from domain.trente_et_quarante.chances import Chance, Row
from domain.trente_et_quarante.layout import Fate, MovementKind, Refait31Choice, Stake, StakeStatus
from domain.trente_et_quarante.outcome import Result


class StakeAsDict(Transcoding):
    type = Stake
    name = "sabot_stake"

    def encode(self, obj: Stake) -> dict[str, Any]:
        return {
            "stake_id": obj.stake_id,
            "player": obj.player,
            "chance": obj.chance.value,
            "amount": obj.amount,
            "status": obj.status.value,
            "insured": obj.insured,
            "choice": obj.choice.value if obj.choice is not None else None,
            "awaiting_choice": obj.awaiting_choice,
        }

    def decode(self, data: dict[str, Any]) -> Stake:
        choice = data["choice"]
        return Stake(
            stake_id=data["stake_id"],
            player=data["player"],
            chance=Chance(data["chance"]),
            amount=int(data["amount"]),
            status=StakeStatus(data["status"]),
            insured=bool(data["insured"]),
            choice=Refait31Choice(choice) if choice is not None else None,
            awaiting_choice=bool(data["awaiting_choice"]),
        )


def _enum_transcoding(enum_type: type[StrEnum], name: str) -> Transcoding:
    class EnumAsText(Transcoding):
        type = enum_type

        def encode(self, obj: StrEnum) -> str:
            return obj.value

        def decode(self, data: str) -> StrEnum:
            return enum_type(data)

    EnumAsText.name = name
    return EnumAsText()


ENUMS: tuple[tuple[type[StrEnum], str], ...] = (
    (Chance, "sabot_chance"),
    (Row, "sabot_row"),
    (StakeStatus, "sabot_stake_status"),
    (Refait31Choice, "sabot_refait31_choice"),
    (Fate, "sabot_fate"),
    (MovementKind, "sabot_movement_kind"),
    (Result, "sabot_result"),
)


TRANSCODINGS: tuple[Transcoding, ...] = (
    StakeAsDict(), *(_enum_transcoding(enum_type, name) for enum_type, name in ENUMS))


def register(transcoder: JSONTranscoder) -> None:
    for transcoding in TRANSCODINGS:
        transcoder.register(transcoding)
