#!/usr/bin/env bash
# One Cuarenta match over grpcurl, each role with its own token: the croupier opens a Cuarenta
# table and a match and deals; each player, with its own token, reads its own hand and legal
# plays and plays (the capture worth most, else its lowest card left on the table) until the
# match is won (MAX_PLAYS=N: after N plays the side to play abandons); the regulator replays it.
#   CROUPIER_TOKEN=… REGULATOR_TOKEN=… ANNE_TOKEN=… BRUNO_TOKEN=… [ANNE=anne BRUNO=bruno] \
#   SABOT_TARGET=HOST:PORT examples/grpcurl/cuarenta_match.sh
source "$(dirname "$0")/_lib.sh"
S=sabot.cuarenta.v1.CuarentaService
A="${ANNE:-anne}" B="${BRUNO:-bruno}"
TOKENS=("$ANNE_TOKEN" "$BRUNO_TOKEN")
table="cu-$(rid | cut -c1-8)"
call "$CROUPIER_TOKEN" sabot.v1.TableService/OpenTable "{\"request_id\":\"$(rid)\",
  \"table_id\":\"$table\",\"game\":\"cuarenta\",\"overrides\":{\"commission_rate\":\"5%\"}}" >/dev/null
m=$(call "$CROUPIER_TOKEN" $S/OpenMatch "{\"request_id\":\"$(rid)\",\"table\":\"tables/$table\",
  \"seats\":[\"accounts/$A\",\"accounts/$B\"],\"stake\":{\"amount_minor\":\"1000\"}}" | jq .match)
match=$(jq -r .name <<<"$m")
echo "$match: $A against $B"
plays=0
while [ "$(jq -r .phase <<<"$m")" != over ]; do
  if [ "$(jq -r .phase <<<"$m")" = awaiting_deal ]; then
    m=$(call "$CROUPIER_TOKEN" $S/Deal "{\"request_id\":\"$(rid)\",\"match\":\"$match\"}" | jq .match)
    continue
  fi
  seat=$(jq -r '.to_act // 0' <<<"$m"); token="${TOKENS[$((seat % 2))]}"
  if [ -n "${MAX_PLAYS:-}" ] && [ "$plays" -ge "$MAX_PLAYS" ]; then
    m=$(call "$token" $S/Forfeit "{\"request_id\":\"$(rid)\",\"match\":\"$match\",\"seat\":$seat,
      \"reason\":\"abandoned\"}" | jq .match)
    break
  fi
  play=$(call "$token" $S/GetHand "{\"match\":\"$match\",\"seat\":$seat}" | jq -c '
    .legal | (max_by([(.points // 0), (.capture // [] | length)])) as $best
    | if ($best.capture // []) | length > 0 then $best
      else (map(select((.capture // []) | length == 0)) | min_by(.card)) end')
  body=$(jq -c --arg rid "$(rid)" --arg m "$match" --argjson seat "$seat" '{request_id: $rid,
    match: $m, seat: $seat, card: .card, capture: (.capture // []),
    leave_on_table: ((.capture // []) | length == 0)}' <<<"$play")
  m=$(call "$token" $S/PlayCard "$body" | jq .match)
  plays=$((plays + 1))
done
echo "over ($(jq -r .end_reason <<<"$m")): side $(jq -r '.winner // 0' <<<"$m") wins"
verdict=$(call "$REGULATOR_TOKEN" sabot.v1.RegulatorService/ReplayMatch \
  "{\"name\":\"$match\",\"differences_only\":true}" | jq -s -c 'map(.verdict // empty) | last')
echo "replay: $verdict"
[ "$(jq -r .identical <<<"$verdict")" = true ]
