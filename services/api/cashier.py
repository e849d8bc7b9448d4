"""CashierService and ReportService: accounts, the cage, statements, the balance sheet."""

from __future__ import annotations

import base64

import grpc

from domain.errors import RuleViolation
from services.api import batch, convert, errors, names
from services.api.base import Base
from services.api.gen.sabot.v1 import cashier_pb2, cashier_pb2_grpc, common_pb2
from services.api.roles import Role

_KINDS = {cashier_pb2.CAGE_MOVEMENT_KIND_DEPOSIT: "deposit",
          cashier_pb2.CAGE_MOVEMENT_KIND_WITHDRAWAL: "withdrawal"}
_MOVEMENT = {"account_id": "name", "amount": "amount.amount_minor", "kind": "kind"}
_ACCOUNT = {"account_id": "name", "amount": "amount.amount_minor", "currency": "amount"}


class CashierServicer(Base, cashier_pb2_grpc.CashierServiceServicer):
    def OpenAccount(
        self, request: cashier_pb2.OpenAccountRequest, context: grpc.ServicerContext
    ) -> cashier_pb2.Account:
        rid = names.check_request_id(request.request_id)
        account_id = names.check_id("account_id", request.account_id)
        currency = names.check_currency("currency_code", request.currency_code) or "EUR"
        view = self.write(
            {"account_id": "account_id", "currency": "currency_code"},
            self.ledger.open_account,
            rid,
            account_id,
            currency,
            actor=self.actor(context),
        )
        return convert.account(view)

    def _money(self, request_amount: common_pb2.Money, has: bool, account_id: str) -> int:
        if not has:
            raise errors.invalid("amount", "required")
        names.check_amount("amount.amount_minor", request_amount.amount_minor)
        currency = self.account_currency(account_id, "name")
        if request_amount.currency_code and request_amount.currency_code != currency:
            raise errors.invalid("amount.currency_code", f"the account is in {currency}")
        return request_amount.amount_minor

    def Deposit(
        self, request: cashier_pb2.DepositRequest, context: grpc.ServicerContext
    ) -> cashier_pb2.Account:
        rid = names.check_request_id(request.request_id)
        account_id = names.account_name("name", request.name)
        amount = self._money(request.amount, request.HasField("amount"), account_id)
        view = self.write(_ACCOUNT, self.ledger.deposit, rid, account_id, amount,
                          actor=self.actor(context))
        return convert.account(view)

    def Withdraw(
        self, request: cashier_pb2.WithdrawRequest, context: grpc.ServicerContext
    ) -> cashier_pb2.Account:
        rid = names.check_request_id(request.request_id)
        account_id = names.account_name("name", request.name)
        amount = self._money(request.amount, request.HasField("amount"), account_id)
        view = self.write(_ACCOUNT, self.ledger.withdraw, rid, account_id, amount,
                          actor=self.actor(context))
        return convert.account(view)

    def BatchMovements(
        self, request: cashier_pb2.BatchMovementsRequest, context: grpc.ServicerContext
    ) -> cashier_pb2.BatchMovementsResponse:
        """Several deposits and withdrawals in one command (the ledger's ``cash_batch``)."""
        rid = names.check_request_id(request.request_id)
        batch.check_count("movements", len(request.movements))
        items: list[dict[str, object]] = []
        for i, m in enumerate(request.movements):
            at = f"movements[{i}]"
            names.check_enum(f"{at}.kind", m.kind, _KINDS)
            account_id = names.account_name(f"{at}.name", m.name)
            if not m.HasField("amount"):
                raise errors.invalid(f"{at}.amount", "required")
            names.check_amount(f"{at}.amount.amount_minor", m.amount.amount_minor)
            currency = self.account_currency(account_id, f"{at}.name")
            if m.amount.currency_code and m.amount.currency_code != currency:
                raise errors.invalid(f"{at}.amount.currency_code", f"the account is in {currency}")
            items.append({"kind": _KINDS[m.kind], "account_id": account_id,
                          "amount": m.amount.amount_minor})
        try:
            result = self.write({}, self.ledger.cash_batch, rid, items, request.atomic,
                                actor=self.actor(context))
        except RuleViolation as exc:
            raise batch.renamed(exc, "movements", lambda i: _MOVEMENT, {}) from None
        out = cashier_pb2.BatchMovementsResponse(accepted=result.accepted)
        for i, one in enumerate(result.items):
            if one.error is not None:
                key = one.error.field
                field = f"movements[{i}]" + (f".{_MOVEMENT.get(key, key)}" if key else "")
                out.results.append(cashier_pb2.CageMovementResult(
                    error=batch.item_error(one.error, field)))
            elif one.account is not None:
                out.results.append(cashier_pb2.CageMovementResult(
                    account=convert.account(one.account)))
        return out

    def GetAccount(
        self, request: cashier_pb2.GetAccountRequest, context: grpc.ServicerContext
    ) -> cashier_pb2.Account:
        who = self.caller(context)
        account_id = names.account_name("name", request.name, house=who.role is not Role.PLAYER)
        self.own(who, account_id, "name")
        return convert.account(self.read(_ACCOUNT, self.ledger.get_account, account_id))

    def ListStatementEntries(
        self, request: cashier_pb2.ListStatementEntriesRequest, context: grpc.ServicerContext
    ) -> cashier_pb2.ListStatementEntriesResponse:
        who = self.caller(context)
        account_id = names.account_name("parent", request.parent, house=who.role is not Role.PLAYER)
        self.own(who, account_id, "parent")
        after, size = names.page(request.page_size, request.page_token, default=100)
        statement = self.read(
            {"account_id": "parent", "after": "page_token", "limit": "page_size"},
            self.ledger.statement,
            account_id,
            after,
            size,
        )
        entries = statement.entries
        last = entries[-1].number if entries else after
        more = bool(entries) and len(entries) == size and last < statement.account.entries
        token = base64.urlsafe_b64encode(f"o:{last}".encode()).decode() if more else ""
        return cashier_pb2.ListStatementEntriesResponse(
            entries=[convert.entry(e, statement.account.currency, convert.viewer_of(who))
                     for e in entries],
            next_page_token=token,
        )


class ReportServicer(Base, cashier_pb2_grpc.ReportServiceServicer):
    def GetBalanceSheet(
        self, request: cashier_pb2.GetBalanceSheetRequest, context: grpc.ServicerContext
    ) -> cashier_pb2.BalanceSheet:
        balances = self.ledger.balances()
        currency = {k: self.account_currency(k, "account_id") for k in balances}
        totals: dict[str, int] = {}
        for k, v in balances.items():
            totals[currency[k]] = totals.get(currency[k], 0) + v
        return cashier_pb2.BalanceSheet(
            balances=[
                cashier_pb2.AccountBalance(account_id=k, balance_minor=v,
                                           currency_code=currency[k])
                for k, v in sorted(balances.items())
            ],
            total_minor=sum(balances.values()),
            totals=[common_pb2.Money(currency_code=c, amount_minor=totals[c])
                    for c in sorted(totals)],
        )
