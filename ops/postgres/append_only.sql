-- Sabot: the event tables are append-only IN THE DATABASE.
-- Idempotent: safe to run at every start. Applied by services.ledger.schema.apply_schema
-- (or `python ops/postgres/apply.py postgresql://user@host:port/db`).
-- {events} is replaced by each events table's name (e.g. public.sabot_events).

CREATE OR REPLACE FUNCTION sabot_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'sabot: % on %.% is forbidden: the event log is append-only',
        TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE OR REPLACE TRIGGER sabot_append_only_rows
    BEFORE UPDATE OR DELETE ON {events}
    FOR EACH ROW EXECUTE FUNCTION sabot_refuse_change();

CREATE OR REPLACE TRIGGER sabot_append_only_truncate
    BEFORE TRUNCATE ON {events}
    FOR EACH STATEMENT EXECUTE FUNCTION sabot_refuse_change();
