"""``BettingService.BatchStakes``: a terminal's places, raises and withdrawals of one coup in one
call (the ledger's ``stake_batch``: ``services/trente_et_quarante/stake_batch.py``).

Each item's fields are checked here as its unary RPC checks them (INVALID_ARGUMENT naming
``stakes[i].<field>``: the whole call refused, nothing stored); everything that needs the
state is the ledger's, after the batch's request id is looked up. A refused item's answer is its
``ItemError`` (its field named as the request names it); an ``atomic`` batch's refusal is the
call's status, naming the item's field."""

from __future__ import annotations

import grpc

from domain.errors import RuleViolation
from services.api import batch, convert, errors, names
from services.api.base import Base, check_uuid
from services.api.gen.sabot.v1 import betting_pb2, common_pb2
from services.trente_et_quarante import convert as tq_convert
from services.trente_et_quarante.commands import TrenteEtQuaranteLedger
from services.trente_et_quarante.stake_batch import PLACE, RAISE, WITHDRAW, StakeBatchResult

_ACTIONS = {
    betting_pb2.STAKE_ACTION_PLACE: PLACE,
    betting_pb2.STAKE_ACTION_RAISE: RAISE,
    betting_pb2.STAKE_ACTION_WITHDRAW: WITHDRAW,
}
# an item's ledger fields -> the request's (its action's)
_PLACE = {"account_id": "account", "stake_id": "stake_id", "amount": "amount.amount_minor",
          "choice": "refait31_choice", "chance": "chance", "action": "action"}
_ON_STAKE = {"stake_id": "name", "amount": "amount.amount_minor", "action": "action"}
_OUTSIDE = {"coup_id": "coup", "items": "stakes", "request_id": "request_id"}


class StakeBatchRpc(Base):
    """BatchStakes of ``sabot.v1.BettingService`` (mixed into ``BettingServicer``)."""

    def _batch_amount(self, field: str, item: betting_pb2.StakeItem, currency: str) -> int:
        if not item.HasField("amount"):
            raise errors.invalid(field, "required")
        names.check_amount(f"{field}.amount_minor", item.amount.amount_minor)
        if item.amount.currency_code and item.amount.currency_code != currency:
            raise errors.invalid(f"{field}.currency_code", f"the table plays in {currency}")
        return item.amount.amount_minor

    def BatchStakes(
        self, request: betting_pb2.BatchStakesRequest, context: grpc.ServicerContext
    ) -> betting_pb2.BatchStakesResponse:
        rid = names.check_request_id(request.request_id)
        table_id, shoe_id, coup_id = names.coup_name("coup", request.coup)
        batch.check_count("stakes", len(request.stakes))
        currency = self.table_currency(table_id, "coup")
        items: list[dict[str, object]] = []
        for i, item in enumerate(request.stakes):
            at = f"stakes[{i}]"
            names.check_enum(f"{at}.action", item.action, _ACTIONS)
            action = _ACTIONS[item.action]
            if action == PLACE:
                items.append({
                    "action": PLACE,
                    "account_id": names.account_name(f"{at}.account", item.account),
                    "chance": _chance(f"{at}.chance", item.chance),
                    "amount": self._batch_amount(f"{at}.amount", item, currency),
                    "stake_id": check_uuid(f"{at}.stake_id", item.stake_id),
                    "choice": _choice(f"{at}.refait31_choice", item.refait31_choice),
                })
                continue
            stake_table, stake_id = names.stake_name(f"{at}.name", item.name)
            if stake_table != table_id:
                raise errors.invalid(f"{at}.name", "not a stake of the coup's table")
            one: dict[str, object] = {"action": action, "stake_id": check_uuid(
                f"{at}.name", stake_id) or stake_id}
            if action == RAISE:
                one["amount"] = self._batch_amount(f"{at}.amount", item, currency)
            items.append(one)
        self.check_round(table_id, shoe_id, coup_id, "coup", "coup")
        try:
            result: StakeBatchResult = self.write(
                {}, self.ledger.game(TrenteEtQuaranteLedger).stake_batch, rid, coup_id, items,
                request.atomic, actor=self.actor(context))
        except RuleViolation as exc:
            raise batch.renamed(exc, "stakes", lambda i: _fields(items[i]), _OUTSIDE) from None
        return _answer(table_id, shoe_id, currency, items, result)


def _fields(item: dict[str, object]) -> dict[str, str]:
    return _PLACE if item["action"] == PLACE else _ON_STAKE


def _answer(table_id: str, shoe_id: str, currency: str, items: list[dict[str, object]],
            result: StakeBatchResult) -> betting_pb2.BatchStakesResponse:
    out = betting_pb2.BatchStakesResponse(coup=names.coup(table_id, shoe_id, result.coup_id),
                                          accepted=result.accepted)
    for i, one in enumerate(result.items):
        if one.error is not None:
            key = one.error.field
            field = f"stakes[{i}]" + (f".{_fields(items[i]).get(key, key)}" if key else "")
            out.results.append(betting_pb2.StakeItemResult(
                error=batch.item_error(one.error, field)))
        elif one.result is not None:
            out.results.append(betting_pb2.StakeItemResult(
                result=tq_convert.stake_result(table_id, one.result, currency, shoe_id)))
    return out


def _chance(field: str, value: int) -> str:
    names.check_enum(field, value, convert.CHANCE_NAMES)
    return convert.CHANCE_NAMES[value]  # type: ignore[index]


def _choice(field: str, value: int) -> str | None:
    if value == common_pb2.REFAIT31_CHOICE_UNSPECIFIED:
        return None
    names.check_enum(field, value, convert.CHOICE_NAMES)
    return convert.CHOICE_NAMES[value]  # type: ignore[index]
