#!/bin/sh
# PostgreSQL's first start (docker-entrypoint-initdb.d): the three roles of docs/postgres.md and
# the database, owned by the owner role. Passwords come from the compose file's secrets.
set -eu
owner=$(cat /run/secrets/pg_owner_password)
server=$(cat /run/secrets/pg_server_password)
auditor=$(cat /run/secrets/pg_auditor_password)
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
     -v owner="$owner" -v server="$server" -v auditor="$auditor" <<'SQL'
CREATE ROLE sabot_owner LOGIN PASSWORD :'owner';
CREATE ROLE sabot_server LOGIN PASSWORD :'server';
CREATE ROLE sabot_auditor LOGIN PASSWORD :'auditor';
CREATE DATABASE sabot OWNER sabot_owner;
REVOKE ALL ON DATABASE sabot FROM PUBLIC;
GRANT CONNECT ON DATABASE sabot TO sabot_owner, sabot_server, sabot_auditor;
SQL
