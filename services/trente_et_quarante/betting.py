"""BettingService: stakes on the layout. A player token acts on its own account's stakes only:
the ledger decides it, from the command's actor (PERMISSION_DENIED naming ``account`` or
``name``); nothing here remembers who owns a stake."""

from __future__ import annotations

from functools import cached_property
from typing import Any, Protocol

import grpc

from domain.errors import NotFound
from services.api import convert, errors, names
from services.api.base import Base, check_uuid
from services.api.gen.sabot.v1 import betting_pb2, betting_pb2_grpc, common_pb2
from services.api.roles import Role
from services.ledger.actor import Actor
from services.trente_et_quarante import convert as tq_convert
from services.trente_et_quarante.batch_rpc import StakeBatchRpc
from services.trente_et_quarante.commands import TrenteEtQuaranteLedger
from services.trente_et_quarante.views import StakeResult

_PLACE = {
    "coup_id": "coup",
    "account_id": "account",
    "stake_id": "stake_id",
    "amount": "amount.amount_minor",
    "choice": "refait31_choice",
    "chance": "chance",
}
_STAKE = {
    "coup_id": "coup",
    "stake_id": "name",
    "amount": "amount.amount_minor",
    "choice": "refait31_choice",
    "chance": "chance",
}


def _chance(field: str, value: int) -> str:
    names.check_enum(field, value, convert.CHANCE_NAMES)
    return convert.CHANCE_NAMES[value]  # type: ignore[index]


def _choice(field: str, value: int, *, required: bool) -> str | None:
    if value == 0 and not required:
        return None
    names.check_enum(field, value, convert.CHOICE_NAMES)
    return convert.CHOICE_NAMES[value]  # type: ignore[index]


class _OnStake(Protocol):
    """A ledger command on one stake of a coup (the ledger's: ``TrenteEtQuaranteLedger``)."""

    def __call__(self, request_id: str, coup_id: str, stake_id: str, *, actor: Actor
                 ) -> StakeResult: ...


class BettingServicer(StakeBatchRpc, Base, betting_pb2_grpc.BettingServiceServicer):
    @cached_property
    def coups(self) -> TrenteEtQuaranteLedger:
        """The game's typed commands on the ledger (``commands.TrenteEtQuaranteLedger``)."""
        return self.ledger.game(TrenteEtQuaranteLedger)

    def _amount(self, money: common_pb2.Money, currency: str) -> int:
        names.check_amount("amount.amount_minor", money.amount_minor)
        if money.currency_code and money.currency_code != currency:
            raise errors.invalid("amount.currency_code", f"the table plays in {currency}")
        return money.amount_minor

    def _answer(self, table_id: str, shoe_id: str, result: StakeResult) -> betting_pb2.StakeResult:
        return tq_convert.stake_result(
            table_id, result, self.table_currency(table_id, "coup"), shoe_id
        )

    def PlaceStake(
        self, request: betting_pb2.PlaceStakeRequest, context: grpc.ServicerContext
    ) -> betting_pb2.StakeResult:
        rid = names.check_request_id(request.request_id)
        table_id, shoe_id, coup_id = names.coup_name("coup", request.coup)
        account_id = names.account_name("account", request.account)
        stake_id = check_uuid("stake_id", request.stake_id)
        chance = _chance("chance", request.chance)
        choice = _choice("refait31_choice", request.refait31_choice, required=False)
        if not request.HasField("amount"):
            raise errors.invalid("amount", "required")
        currency = self.table_currency(table_id, "coup")
        amount = self._amount(request.amount, currency)
        self.check_round(table_id, shoe_id, coup_id, "coup", "coup")
        result = self.write(
            _PLACE,
            self.coups.place_stake,
            rid,
            coup_id,
            account_id,
            chance,
            amount,
            stake_id,
            choice,
            actor=self.actor(context),
        )
        return tq_convert.stake_result(table_id, result, currency, shoe_id)  # currency: immutable

    def _command(
        self,
        request: Any,
        context: grpc.ServicerContext,
        call: _OnStake,
    ) -> betting_pb2.StakeResult:
        """A command on an existing stake: checks the names and the coup, then calls the ledger
        as the caller's actor (the ledger decides the owner)."""
        rid = names.check_request_id(request.request_id)
        table_id, stake_id = names.stake_name("name", request.name)
        coup_table, shoe_id, coup_id = names.coup_name("coup", request.coup)
        if coup_table != table_id:
            raise errors.invalid("coup", "not a coup of the stake's table")
        self.check_round(table_id, shoe_id, coup_id, "coup", "coup")
        result = self.write(_STAKE, call, rid, coup_id, stake_id,
                          actor=self.actor(context))
        return self._answer(table_id, shoe_id, result)

    def RaiseStake(
        self, request: betting_pb2.RaiseStakeRequest, context: grpc.ServicerContext
    ) -> betting_pb2.StakeResult:
        if not request.HasField("amount"):
            raise errors.invalid("amount", "required")
        table_id, _ = names.stake_name("name", request.name)
        amount = self._amount(request.amount, self.table_currency(table_id, "name"))
        return self._command(
            request,
            context,
            lambda rid, coup, stake, *, actor: self.coups.raise_stake(rid, coup, stake, amount,
                                                                    actor=actor),
        )

    def WithdrawStake(
        self, request: betting_pb2.WithdrawStakeRequest, context: grpc.ServicerContext
    ) -> betting_pb2.StakeResult:
        return self._command(request, context, self.coups.withdraw_stake)

    def InsureStake(
        self, request: betting_pb2.InsureStakeRequest, context: grpc.ServicerContext
    ) -> betting_pb2.StakeResult:
        return self._command(request, context, self.coups.insure)

    def ChooseRefait31(
        self, request: betting_pb2.ChooseRefait31Request, context: grpc.ServicerContext
    ) -> betting_pb2.StakeResult:
        choice = _choice("refait31_choice", request.refait31_choice, required=True)
        assert choice is not None
        return self._command(
            request,
            context,
            lambda rid, coup, stake, *, actor: self.coups.choose_refait31(rid, coup, stake, choice,
                                                                        actor=actor),
        )

    def MoveStake(
        self, request: betting_pb2.MoveStakeRequest, context: grpc.ServicerContext
    ) -> betting_pb2.StakeResult:
        chance = _chance("chance", request.chance)
        return self._command(
            request,
            context,
            lambda rid, coup, stake, *, actor: self.coups.move_imprisoned(rid, coup, stake, chance,
                                                                        actor=actor),
        )

    def HalfWithdrawStake(
        self, request: betting_pb2.HalfWithdrawStakeRequest, context: grpc.ServicerContext
    ) -> betting_pb2.StakeResult:
        return self._command(request, context, self.coups.half_withdraw)

    def GetStake(
        self, request: betting_pb2.GetStakeRequest, context: grpc.ServicerContext
    ) -> common_pb2.Stake:
        table_id, stake_id = names.stake_name("name", request.name)
        view = self.read({"table_id": "name"}, self.ledger.get_table, table_id)
        for stake in view.layout:
            if stake.stake_id == stake_id:
                self.own(self.caller(context), stake.account_id, "name")
                return convert.stake(table_id, stake, view.currency)
        raise NotFound("name", "NOT_FOUND", "no such stake on the layout")

    def ListStakes(
        self, request: betting_pb2.ListStakesRequest, context: grpc.ServicerContext
    ) -> betting_pb2.ListStakesResponse:
        table_id = names.table_name("parent", request.parent)
        offset, size = names.page(request.page_size, request.page_token)
        view = self.read({"table_id": "parent"}, self.ledger.get_table, table_id)
        who = self.caller(context)
        stakes = [
            s for s in view.layout if who.role is not Role.PLAYER or s.account_id == who.account
        ]
        return betting_pb2.ListStakesResponse(
            stakes=[
                convert.stake(table_id, s, view.currency) for s in stakes[offset : offset + size]
            ],
            next_page_token=names.next_token(offset, size, len(stakes)),
        )
