"""A whole shoe through the API, with four players and every kind of stake command, on both
stores: the money of every movement adds up to each player's balance, the deal is the published
shuffle of the revealed seed, and the recall shows each coup step by step."""

from __future__ import annotations

from collections import Counter
from typing import Any
from uuid import UUID, uuid5

import grpc

from domain.cards import DeckKind
from domain.shuffle import commitment, load_sabot
from domain.trente_et_quarante.deal import deal_shoe
from domain.trente_et_quarante.outcome import Outcome, judge
from domain.trente_et_quarante.rules import CutCardRule
from services.api.client import new_request_id
from services.api.gen.sabot.v1 import (
    betting_pb2,
    cashier_pb2,
    common_pb2,
    events_pb2,
    table_pb2,
)

from .conftest import SEED
from .support import Api, balance, failure, money, open_table

NOIR, ROUGE = common_pb2.CHANCE_NOIR, common_pb2.CHANCE_ROUGE
COULEUR, INVERSE = common_pb2.CHANCE_COULEUR, common_pb2.CHANCE_INVERSE
PARTAGE, PRISON = common_pb2.REFAIT31_CHOICE_PARTAGE, common_pb2.REFAIT31_CHOICE_PRISON
CHANCES = {"anne": (NOIR, COULEUR), "bruno": (ROUGE, INVERSE), "chiara": (NOIR, INVERSE),
           "dora": (ROUGE, COULEUR)}


def plan(shoe_id: UUID) -> tuple[int, list[Outcome]]:
    """A cut that brings a refait at 31 early in the shoe, and every outcome of that shoe."""
    for position in range(1, 312):
        cards = load_sabot(SEED, shoe_id, DeckKind.FRENCH_52, 6, position).cards
        outcomes = [judge(d) for d in deal_shoe(cards, CutCardRule.VOID_COUP)]
        refaits = [i for i, o in enumerate(outcomes) if o.is_refait31]
        if refaits and 1 <= refaits[0] <= 4 and len(outcomes) > refaits[0] + 4:
            return position, outcomes
    raise AssertionError("no cut gives an early refait at 31")


def signed(movements: Any, account: str) -> int:
    total = 0
    for m in movements:
        if m.credit_account == account:
            total += m.amount.amount_minor
        if m.debit_account == account:
            total -= m.amount.amount_minor
    return total


def test_a_whole_shoe_with_every_kind_of_stake(api: Api) -> None:
    croupier = api.as_("croupier").tables
    table = open_table(api, "francaise", {"half_withdrawal": "true", "move_imprisoned": "true"})
    shoe_id = uuid5(UUID(int=7), f"{api.store}:full-shoe")  # fixed: the same shoe every run
    cut, outcomes = plan(shoe_id)
    before = {p: balance(api, p) for p in CHANCES}
    moved: list[Any] = []
    ops: Counter[str] = Counter()

    shoe = croupier.OpenShoe(table_pb2.OpenShoeRequest(
        request_id=new_request_id(), parent=table.name, shoe_id=str(shoe_id)))
    published = shoe.commitment
    shoe = croupier.CutShoe(table_pb2.CutShoeRequest(
        request_id=new_request_id(), name=shoe.name, cut_position=cut, cut_by="anne"))

    for number, expected in enumerate(outcomes, start=1):
        coup = croupier.OpenCoup(table_pb2.OpenCoupRequest(
            request_id=new_request_id(), parent=shoe.name))
        assert coup.number_in_shoe == number and coup.phase == "betting"
        for player, chances in CHANCES.items():
            moved.extend(_bet(api, player, chances, coup, ops))
        croupier.CloseBetting(table_pb2.CloseBettingRequest(
            request_id=new_request_id(), name=coup.name))
        dealt = croupier.DealCoup(table_pb2.DealCoupRequest(
            request_id=new_request_id(), name=coup.name))
        assert dealt.result == expected.result.value
        assert dealt.announcement == expected.announcement
        settled = croupier.SettleCoup(table_pb2.SettleCoupRequest(
            request_id=new_request_id(), name=coup.name))
        assert settled.phase == "settled"
        moved.extend(settled.movements)
        ops.update(f"fate:{f.fate}" for f in settled.fates)
        if dealt.cut_card_reached:
            assert number == len(outcomes)
            break

    closed = croupier.CloseShoe(table_pb2.CloseShoeRequest(
        request_id=new_request_id(), name=shoe.name))
    moved.extend(closed.returned)
    assert closed.seed == SEED.hex()
    assert commitment(bytes.fromhex(closed.seed), shoe_id) == published == closed.commitment

    for op in ("place", "place_with_choice", "raise", "withdraw", "insure", "insure_refused",
               "choose_partage",
               "choose_prison", "move", "half_withdraw", "fate:won", "fate:lost"):
        assert ops[op] > 0, (op, ops)
    for player in CHANCES:
        assert balance(api, player) - before[player] == signed(moved, player), player
    sheet = api.as_("back_office").reports.GetBalanceSheet(cashier_pb2.GetBalanceSheetRequest())
    assert sheet.total_minor == 0

    recall = api.as_("regulator").recall.ListRecalledCoups(
        events_pb2.ListRecalledCoupsRequest(parent=table.name, page_size=10))
    assert [c.coup.number_in_shoe for c in recall.coups] == list(
        range(len(outcomes), max(len(outcomes) - 10, 0), -1))
    for recalled in recall.coups:
        versions = [s.aggregate_version for s in recalled.steps]
        assert versions == sorted(versions) and len(set(versions)) == len(versions)
        assert recalled.steps[0].type == "sabot.ledger:Coup.Opened"
        assert "sabot.ledger:Coup.Resolved" in {s.type for s in recalled.steps}


def _bet(api: Api, player: str, chances: tuple[int, int], coup: Any,
         ops: Counter[str]) -> list[Any]:
    """One player's turn: answer a refait, act on prisoners, place, raise, insure, withdraw."""
    betting = api.as_(player).betting
    moved: list[Any] = []

    def call(method: str, request: Any, op: str) -> Any:
        result = getattr(betting, method)(request)
        ops[op] += 1
        moved.extend(result.movements)
        return result

    mine = [s for s in coup.layout if s.account == f"accounts/{player}"]
    for stake in mine:
        common = {"request_id": new_request_id(), "name": stake.name, "coup": coup.name}
        if stake.awaiting_choice:
            choice = PARTAGE if player == "anne" else PRISON
            result = call("ChooseRefait31", betting_pb2.ChooseRefait31Request(
                **common, refait31_choice=choice),
                "choose_partage" if choice == PARTAGE else "choose_prison")
            if result.stake.status == "prison" and player == "bruno":
                call("MoveStake", betting_pb2.MoveStakeRequest(
                    request_id=new_request_id(), name=stake.name, coup=coup.name,
                    chance=INVERSE), "move")
            elif result.stake.status == "prison" and player == "dora":
                call("HalfWithdrawStake", betting_pb2.HalfWithdrawStakeRequest(
                    request_id=new_request_id(), name=stake.name, coup=coup.name),
                    "half_withdraw")
        elif stake.status == "free" and player == "anne" and stake.chance == NOIR:
            call("RaiseStake", betting_pb2.RaiseStakeRequest(**common, amount=money(100)),
                 "raise")
    on = {s.chance for s in mine}
    for index, chance in enumerate(chances):
        if chance in on:
            continue
        amount = 1_000 * (1 + index) + 100 * coup.number_in_shoe
        choice = PARTAGE if player == "anne" and chance == COULEUR else 0
        result = call("PlaceStake", betting_pb2.PlaceStakeRequest(
            request_id=new_request_id(), coup=coup.name, account=f"accounts/{player}",
            chance=chance, amount=money(amount), refait31_choice=choice),  # type: ignore[arg-type]
            "place_with_choice" if choice else "place")
        name = result.stake.name
        if player == "chiara" and chance == INVERSE:  # a 31 returns it (francaise): not sold
            code, field, reason = failure(betting.InsureStake, betting_pb2.InsureStakeRequest(
                request_id=new_request_id(), name=name, coup=coup.name))
            assert (code, field, reason) == (
                grpc.StatusCode.FAILED_PRECONDITION, "name", "NOTHING_TO_INSURE")
            ops["insure_refused"] += 1
        elif player == "chiara":
            call("InsureStake", betting_pb2.InsureStakeRequest(
                request_id=new_request_id(), name=name, coup=coup.name), "insure")
        if player == "bruno" and index == 1 and coup.number_in_shoe % 2 == 0:
            call("WithdrawStake", betting_pb2.WithdrawStakeRequest(
                request_id=new_request_id(), name=name, coup=coup.name), "withdraw")
    return moved
