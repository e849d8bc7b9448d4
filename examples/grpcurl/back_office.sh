#!/usr/bin/env bash
# The back office over grpcurl: the balance sheet (the sum is zero), the read models' lag, and a
# game's reconciliation of a table (TYU_TABLE: Treinta y Una's, CU_TABLE: Cuarenta's).
#   OFFICE_TOKEN=… [TYU_TABLE=t] [CU_TABLE=t] SABOT_TARGET=HOST:PORT examples/grpcurl/back_office.sh
source "$(dirname "$0")/_lib.sh"
sheet=$(call "$OFFICE_TOKEN" sabot.v1.ReportService/GetBalanceSheet '{}')
echo "balance sheet: $(jq '.balances | length' <<<"$sheet") accounts, sum $(jq -r '.total_minor // "0"' <<<"$sheet")"
call "$OFFICE_TOKEN" sabot.v1.ReadModelService/GetProjectionLag '{}' | jq -c .
ok=true
[ "$(jq -r '.total_minor // "0"' <<<"$sheet")" = 0 ] || ok=false
if [ -n "${TYU_TABLE:-}" ]; then
  r=$(call "$OFFICE_TOKEN" sabot.treinta_y_una.v1.TreintaYUnaService/GetReconciliation \
      "{\"table\":\"tables/$TYU_TABLE\"}")
  echo "$TYU_TABLE: balanced $(jq -r '.balanced // false' <<<"$r")"
  [ "$(jq -r '.balanced // false' <<<"$r")" = true ] || ok=false
fi
if [ -n "${CU_TABLE:-}" ]; then
  r=$(call "$OFFICE_TOKEN" sabot.cuarenta.v1.CuarentaService/GetReconciliation \
      "{\"table\":\"tables/$CU_TABLE\"}")
  echo "$CU_TABLE: balanced $(jq -r '.balanced // false' <<<"$r")"
  [ "$(jq -r '.balanced // false' <<<"$r")" = true ] || ok=false
fi
$ok
