"""Trente et Quarante's views -> sabot.v1 messages: its coups (cards, layout, movements and the
stakes' fates), a stake command's result and the steps of a recalled coup. The game-neutral
conversions they use (stakes and movements of the core's views, money, times, actors, the
redaction for a player's viewer) are ``services/api/convert.py``'s; the bytes on the wire are
the same as when that module held these too."""

from __future__ import annotations

from services.api import names
from services.api.convert import (
    CHANCES,
    account_name,
    actor,
    data_json,
    money,
    movement,
    redact,
    stake,
    timestamp,
)
from services.api.gen.sabot.v1 import betting_pb2, common_pb2, events_pb2, table_pb2
from services.ledger import views
from services.trente_et_quarante.views import CoupView, FateView, StakeResult


def fate(table_id: str, view: FateView, viewer: str | None = None) -> common_pb2.StakeFate:
    return common_pb2.StakeFate(
        stake=names.stake(table_id, view.stake_id),
        account=account_name(view.account_id, viewer),
        chance=CHANCES.get(view.chance, common_pb2.CHANCE_UNSPECIFIED),
        fate=view.fate,
        amount_before_minor=view.amount_before,
        amount_after_minor=view.amount_after,
        status_after=view.status_after or "",
    )


def coup(view: CoupView, currency: str, viewer: str | None = None) -> table_pb2.Coup:
    t = view.table_id
    colour = "" if view.couleur is None else ("couleur" if view.couleur else "inverse")
    return table_pb2.Coup(
        name=names.coup(t, view.shoe_id, view.coup_id),
        phase=view.phase,
        number=view.number,
        number_in_shoe=view.number_in_shoe,
        start_position=view.start_position,
        cards=[
            table_pb2.DealtCard(
                row=c.row, card=c.code, position=c.position, running_total=c.running_total
            )
            for c in view.cards
        ],
        noir_total=view.noir_total or 0,
        rouge_total=view.rouge_total or 0,
        result=view.result or "",
        refait_total=view.refait_total or 0,
        colour_result=colour,
        winning_chances=[CHANCES[c] for c in view.winning_chances if c in CHANCES],
        announcement=view.announcement or "",
        cut_card_reached=view.cut_card_reached,
        layout=[stake(t, s, currency, viewer) for s in view.layout],
        movements=[movement(t, m, currency, viewer) for m in view.movements],
        fates=[fate(t, f, viewer) for f in view.fates],
        create_time=timestamp(view.create_time),
        betting_close_time=timestamp(view.betting_close_time),
        deal_time=timestamp(view.deal_time),
        settle_time=timestamp(view.settle_time),
    )


def stake_result(table_id: str, result: StakeResult, currency: str,
                 shoe_id: str) -> betting_pb2.StakeResult:
    return betting_pb2.StakeResult(
        coup=names.coup(table_id, shoe_id, result.coup_id),
        stake=stake(table_id, result.stake, currency) if result.stake else None,
        movements=[movement(table_id, m, currency) for m in result.movements],
        balance=money(result.balance, currency),
    )


def step(
    table_id: str, shoe_id: str, coup_id: str, view: views.StepView, viewer: str | None = None
) -> events_pb2.Event:
    return events_pb2.Event(
        position=view.position,
        type=view.topic,
        aggregate_id=coup_id,
        aggregate_version=view.version,
        time=timestamp(view.timestamp),
        table=names.table(table_id),
        shoe=names.shoe(table_id, shoe_id),
        coup=names.coup(table_id, shoe_id, coup_id),
        data_json=data_json(redact(view.state, viewer)),
        actor=actor(view.actor, viewer),
    )
