#!/bin/sh
# Makes ./secrets/ for compose.yaml: the store's passwords and pgpass files, the seal, chain and
# checkpoint keys, a credentials file with one admin token (printed once), and a self-signed
# TLS pair for trying (use your CA's certificate in production). The regulator's public key is
# the regulator's to give: put its NAME.pub in secrets/regulator.pub (a key pair made here
# only for trying is written if none is there). Needs the image (docker compose build) and
# openssl. Files are 0600, owned by uid 10001 (the image's user) or, for the passwords the
# database reads at its first start, uid 999 (the postgres image's).
set -eu
cd "$(dirname "$0")"
mkdir -p secrets
umask 077
run() { docker run --rm --user 10001 -v "$PWD/secrets:/out" --entrypoint sabot sabot:latest "$@"; }
password() { openssl rand -hex 24; }
[ -s secrets/pg_superuser_password ] || password > secrets/pg_superuser_password
[ -s secrets/pg_owner_password ] || password > secrets/pg_owner_password
[ -s secrets/pg_server_password ] || password > secrets/pg_server_password
[ -s secrets/pg_auditor_password ] || password > secrets/pg_auditor_password
echo "postgres:5432:sabot:sabot_owner:$(cat secrets/pg_owner_password)" > secrets/pgpass_owner
echo "postgres:5432:sabot:sabot_server:$(cat secrets/pg_server_password)" > secrets/pgpass_server
[ -s secrets/seal.key ] || openssl rand -hex 32 > secrets/seal.key
chown 10001 secrets
[ -s secrets/chain.key ] || run keys chain --out /out/chain
[ -s secrets/checkpoint.key ] || run keys checkpoint --out /out/checkpoint
if [ ! -s secrets/regulator.pub ]; then
  run keys regulator --out /out/regulator-for-trying
  cp secrets/regulator-for-trying.pub secrets/regulator.pub
fi
if [ ! -s secrets/credentials.toml ]; then
  echo "the admin token (shown once):"
  run credentials issue --credentials /out/credentials.toml --principal admin-1 --role admin --days 30
fi
if [ ! -s secrets/server.key ]; then
  # ECDSA P-256: gRPC's TLS completes no handshake with an Ed25519 certificate
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj "/CN=sabot" \
    -addext "subjectAltName=DNS:sabot,DNS:localhost,IP:127.0.0.1" \
    -keyout secrets/server.key -out secrets/server.crt
fi
chown -R 10001 secrets
chown 999 secrets/pg_*_password  # read by the postgres image's user (uid 999) at its first start
chmod 0600 secrets/*
