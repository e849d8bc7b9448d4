-- Sabot, development only (`make run-postgres`): the owner and server roles and a database owned
-- by the owner, on a local cluster with trust authentication. Idempotent. Run as a superuser:
--   psql -v db=sabot_run -f ops/postgres/dev_roles.sql
-- A real deployment creates its roles with passwords (docs/postgres.md).
DO $$ BEGIN CREATE ROLE sabot_owner LOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
DO $$ BEGIN CREATE ROLE sabot_server LOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
SELECT format('CREATE DATABASE %I OWNER sabot_owner', :'db')
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'db')\gexec
