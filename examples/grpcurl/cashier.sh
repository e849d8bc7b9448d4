#!/usr/bin/env bash
# The cashier over grpcurl: open an account (kept if it exists), cash in (retried with the same
# request id: one deposit), cash out, the balance and the last entries.
#   CASHIER_TOKEN=… ACCOUNT=dora SABOT_TARGET=HOST:PORT examples/grpcurl/cashier.sh
source "$(dirname "$0")/_lib.sh"
C=sabot.v1.CashierService
name="accounts/${ACCOUNT:?ACCOUNT=the player account}"
call "$CASHIER_TOKEN" $C/OpenAccount "{\"request_id\":\"$(rid)\",\"account_id\":\"$ACCOUNT\",
  \"currency_code\":\"EUR\"}" >/dev/null 2>&1 || true  # ALREADY_EXISTS: kept
id=$(rid)
for attempt in 1 2; do  # the same request id twice: the first answer, one deposit
  call "$CASHIER_TOKEN" $C/Deposit "{\"request_id\":\"$id\",\"name\":\"$name\",
    \"amount\":{\"currency_code\":\"EUR\",\"amount_minor\":\"50000\"}}" >/dev/null
done
call "$CASHIER_TOKEN" $C/Withdraw "{\"request_id\":\"$(rid)\",\"name\":\"$name\",
  \"amount\":{\"currency_code\":\"EUR\",\"amount_minor\":\"20000\"}}" | jq -c '{name, balance}'
call "$CASHIER_TOKEN" $C/ListStatementEntries "{\"parent\":\"$name\"}" | jq -c '.entries[-3:][]'
