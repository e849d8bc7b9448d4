-- Sabot: the event store's tables are append-only IN THE DATABASE.
-- Idempotent: safe to run again. Applied by services.ledger.schema.apply_schema (at every start
-- by a ledger whose role owns the tables, and by `sabot store init` run as the owner role), to
-- the events table and to the snapshots table beside it, with search_path = pg_catalog, pg_temp.
-- {schema} is replaced by the tables' schema (e.g. "public"), {table} by each table's qualified
-- name (e.g. "public"."sabot_events").
--
-- The triggers guard against a mistake and against a role that is not the tables' owner; the
-- owner can switch them off (ALTER TABLE ... DISABLE TRIGGER): that is why the server connects as
-- a role that owns nothing here (docs/postgres.md), and why the writer's evidence is the real
-- defence.

CREATE OR REPLACE FUNCTION {schema}.sabot_refuse_change() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'sabot: % on %.% is forbidden: the event log is append-only',
        TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE OR REPLACE TRIGGER sabot_append_only_rows
    BEFORE UPDATE OR DELETE ON {table}
    FOR EACH ROW EXECUTE FUNCTION {schema}.sabot_refuse_change();

CREATE OR REPLACE TRIGGER sabot_append_only_truncate
    BEFORE TRUNCATE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.sabot_refuse_change();
