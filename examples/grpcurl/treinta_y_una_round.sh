#!/usr/bin/env bash
# One Treinta y Una round over grpcurl, each role with its own token: the croupier opens a table
# and a round, each punter stakes, the croupier deals, each player in turn reads its own hand and
# says "carta" or "me planto", the croupier settles; the regulator replays the round.
#   CROUPIER_TOKEN=… REGULATOR_TOKEN=… ANNE_TOKEN=… BRUNO_TOKEN=… [ANNE=anne BRUNO=bruno] \
#   SABOT_TARGET=HOST:PORT examples/grpcurl/treinta_y_una_round.sh
source "$(dirname "$0")/_lib.sh"
S=sabot.treinta_y_una.v1.TreintaYUnaService
A="${ANNE:-anne}" B="${BRUNO:-bruno}"
declare -A TOKEN=(["$A"]="$ANNE_TOKEN" ["$B"]="$BRUNO_TOKEN")
table="tyu-$(rid | cut -c1-8)"
call "$CROUPIER_TOKEN" $S/OpenTable "{\"request_id\":\"$(rid)\",\"table_id\":\"$table\"}" >/dev/null
r=$(call "$CROUPIER_TOKEN" $S/OpenRound "{\"request_id\":\"$(rid)\",\"parent\":\"tables/$table\",
  \"seats\":[\"accounts/$A\",\"accounts/$B\"],\"bank\":{\"amount_minor\":\"20000\"}}")
round=$(jq -r .name <<<"$r"); banker=$(jq -r .banker <<<"$r")
echo "$round: $banker holds the bank"
for p in "$A" "$B"; do
  [ "$p" = "$banker" ] && continue
  call "${TOKEN[$p]}" $S/PlaceStake "{\"request_id\":\"$(rid)\",\"round\":\"$round\",
    \"player\":\"accounts/$p\",\"amount\":{\"amount_minor\":\"1000\"}}" >/dev/null
done
r=$(call "$CROUPIER_TOKEN" $S/Deal "{\"request_id\":\"$(rid)\",\"round\":\"$round\"}")
while [ "$(jq -r .phase <<<"$r")" = playing ]; do
  who=$(jq -r .whose_turn <<<"$r")
  total=$(call "${TOKEN[$who]}" $S/GetMyHand "{\"round\":\"$round\",\"player\":\"accounts/$who\"}" |
          jq -r '.total // 0')
  limit=21; [ "$who" = "$banker" ] && limit=25
  if [ "$total" -lt "$limit" ]; then say=Carta; else say=MePlanto; fi
  echo "  $who ($total): $say"
  r=$(call "${TOKEN[$who]}" $S/$say "{\"request_id\":\"$(rid)\",\"round\":\"$round\",
    \"player\":\"accounts/$who\"}")
done
call "$CROUPIER_TOKEN" $S/SettleRound "{\"request_id\":\"$(rid)\",\"round\":\"$round\"}" |
  jq -c '.results[] | {player, outcome, paid}'
verdict=$(call "$REGULATOR_TOKEN" sabot.v1.RegulatorService/ReplayRound \
  "{\"name\":\"$round\",\"differences_only\":true}" | jq -s -c 'map(.verdict // empty) | last')
echo "replay: $verdict"
[ "$(jq -r .identical <<<"$verdict")" = true ]
