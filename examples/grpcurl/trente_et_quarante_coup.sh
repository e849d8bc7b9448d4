#!/usr/bin/env bash
# One Trente et Quarante coup over grpcurl: the croupier opens a table and a shoe (commitment
# published), cuts it, opens a coup; a player stakes on noir with its own token; the croupier
# closes the betting, deals, settles and closes the shoe (seed revealed); the regulator replays
# the coup.
#   CROUPIER_TOKEN=… REGULATOR_TOKEN=… ANNE_TOKEN=… [ANNE=anne] SABOT_TARGET=HOST:PORT \
#   examples/grpcurl/trente_et_quarante_coup.sh
source "$(dirname "$0")/_lib.sh"
T=sabot.v1.TableService
A="${ANNE:-anne}"
table="tq-$(rid | cut -c1-8)"
call "$CROUPIER_TOKEN" $T/OpenTable "{\"request_id\":\"$(rid)\",\"table_id\":\"$table\"}" >/dev/null
shoe=$(call "$CROUPIER_TOKEN" $T/OpenShoe "{\"request_id\":\"$(rid)\",\"parent\":\"tables/$table\"}")
echo "$(jq -r .name <<<"$shoe"): commitment $(jq -r .commitment <<<"$shoe")"
shoe=$(jq -r .name <<<"$shoe")
call "$CROUPIER_TOKEN" $T/CutShoe "{\"request_id\":\"$(rid)\",\"name\":\"$shoe\",\"cut_position\":150,
  \"cut_by\":\"$A\"}" >/dev/null
coup=$(call "$CROUPIER_TOKEN" $T/OpenCoup "{\"request_id\":\"$(rid)\",\"parent\":\"$shoe\"}" | jq -r .name)
call "$ANNE_TOKEN" sabot.v1.BettingService/PlaceStake "{\"request_id\":\"$(rid)\",\"coup\":\"$coup\",
  \"account\":\"accounts/$A\",\"chance\":\"CHANCE_NOIR\",\"amount\":{\"amount_minor\":\"1000\"}}" >/dev/null
for step in CloseBetting DealCoup SettleCoup; do
  out=$(call "$CROUPIER_TOKEN" $T/$step "{\"request_id\":\"$(rid)\",\"name\":\"$coup\"}")
done
echo "$coup: $(jq -c '{noir_total, rouge_total, result}' <<<"$out")"
call "$CROUPIER_TOKEN" $T/CloseShoe "{\"request_id\":\"$(rid)\",\"name\":\"$shoe\"}" >/dev/null
verdict=$(call "$REGULATOR_TOKEN" sabot.v1.RegulatorService/ReplayCoup \
  "{\"name\":\"$coup\",\"differences_only\":true}" | jq -s -c 'map(.verdict // empty) | last')
echo "replay: $verdict"
[ "$(jq -r .identical <<<"$verdict")" = true ]
