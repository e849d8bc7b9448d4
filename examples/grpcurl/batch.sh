#!/usr/bin/env bash
# The batch calls over grpcurl: the cashier funds ANNE's account and ACCOUNT's in one
# BatchMovements call; the croupier opens a coup; anne sends her layout in one BatchStakes call
# (each item its own answer: the opposed stake refused in its answer); the same request id again
# returns the first answer; an atomic batch with an opposed stake is refused whole.
#   CROUPIER_TOKEN=… CASHIER_TOKEN=… ANNE_TOKEN=… ACCOUNT=dora SABOT_TARGET=HOST:PORT \
#     examples/grpcurl/batch.sh
source "$(dirname "$0")/_lib.sh"
C=sabot.v1.CashierService T=sabot.v1.TableService B=sabot.v1.BettingService
guest="${ACCOUNT:?ACCOUNT=another account}"
call "$CASHIER_TOKEN" $C/OpenAccount "{\"request_id\":\"$(rid)\",\"account_id\":\"$guest\",
  \"currency_code\":\"EUR\"}" >/dev/null 2>&1 || true  # ALREADY_EXISTS: kept
call "$CASHIER_TOKEN" $C/BatchMovements "{\"request_id\":\"$(rid)\",\"movements\":[
  {\"kind\":\"CAGE_MOVEMENT_KIND_DEPOSIT\",\"name\":\"accounts/anne\",
   \"amount\":{\"currency_code\":\"EUR\",\"amount_minor\":\"50000\"}},
  {\"kind\":\"CAGE_MOVEMENT_KIND_DEPOSIT\",\"name\":\"accounts/$guest\",
   \"amount\":{\"currency_code\":\"EUR\",\"amount_minor\":\"20000\"}}]}" |
  jq -c '{accepted, balances: [.results[].account | {name, balance}]}'
table=$(call "$CROUPIER_TOKEN" $T/OpenTable "{\"request_id\":\"$(rid)\",
  \"table_id\":\"tq-$(rid | cut -c1-8)\"}" | jq -r .name)
shoe=$(call "$CROUPIER_TOKEN" $T/OpenShoe "{\"request_id\":\"$(rid)\",\"parent\":\"$table\"}" |
  jq -r .name)
call "$CROUPIER_TOKEN" $T/CutShoe "{\"request_id\":\"$(rid)\",\"name\":\"$shoe\",
  \"cut_position\":150,\"cut_by\":\"anne\"}" >/dev/null
coup=$(call "$CROUPIER_TOKEN" $T/OpenCoup "{\"request_id\":\"$(rid)\",\"parent\":\"$shoe\"}" |
  jq -r .name)
place() {  # CHANCE MINOR: a place item of anne's
  echo "{\"action\":\"STAKE_ACTION_PLACE\",\"account\":\"accounts/anne\",\"chance\":\"$1\",
    \"amount\":{\"currency_code\":\"EUR\",\"amount_minor\":\"$2\"}}"
}
id=$(rid)
layout="{\"request_id\":\"$id\",\"coup\":\"$coup\",\"stakes\":[$(place CHANCE_NOIR 1000),
  $(place CHANCE_ROUGE 500),$(place CHANCE_COULEUR 700)]}"
first=$(call "$ANNE_TOKEN" $B/BatchStakes "$layout")
echo "$first" | jq -c '{accepted, results: [.results[] | (.result.stake.name // .error.reason)]}'
again=$(call "$ANNE_TOKEN" $B/BatchStakes "$layout")  # the same request id: the first answer
[ "$(echo "$first" | jq -S -c .)" = "$(echo "$again" | jq -S -c .)" ] && echo "retry: the first answer"
if call "$ANNE_TOKEN" $B/BatchStakes "{\"request_id\":\"$(rid)\",\"coup\":\"$coup\",
  \"atomic\":true,\"stakes\":[$(place CHANCE_NOIR 100),$(place CHANCE_ROUGE 100)]}" \
  2>/dev/null; then
  echo "atomic: ACCEPTED (unexpected)"; exit 1
fi
echo "atomic: refused, nothing stored"
