-- Sabot: the save's table lock, fenced by the writer's lease. Idempotent.
-- Applied with append_only.sql (services.ledger.schema.apply_schema), owned by the tables' owner.
-- {schema}: the schema; {events}: the events table's qualified name; {lease_class} and
-- {lease_key}: the two halves of the writer lease's advisory lock key (services/ledger/lease.py).
--
-- Every save of the ledger's writer calls sabot_lock_events(<the backend pid of its lease
-- connection>) first, in the save's transaction:
--   * LOCK TABLE ... IN EXCLUSIVE MODE, as the eventsourcing library does (insert order = commit
--     order, so readers following the log never skip a late commit). A role that may only
--     INSERT cannot take that lock itself (PostgreSQL asks for UPDATE, DELETE or TRUNCATE
--     rights): this function takes it with its owner's rights (SECURITY DEFINER) and does
--     nothing else.
--   * then, under that lock, checks that the given backend still holds the writer lease. A writer
--     that lost its lease (its lease connection died, or was idle past its timeout) cannot commit
--     anything; and since the next writer takes this same lock once when it takes over, every
--     save of the previous one has ended (committed or not) before the next writer decides.

CREATE OR REPLACE FUNCTION {schema}.sabot_lock_events(writer integer) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    LOCK TABLE {events} IN EXCLUSIVE MODE;
    IF NOT EXISTS (
        SELECT 1 FROM pg_catalog.pg_locks
        WHERE locktype = 'advisory'
          AND database = (SELECT oid FROM pg_catalog.pg_database
                          WHERE datname = pg_catalog.current_database())
          AND classid = {lease_class}::bigint::oid AND objid = {lease_key}::bigint::oid  -- unsigned
          AND objsubid = 2 AND pid = writer AND granted
    ) THEN
        RAISE EXCEPTION 'sabot: backend % does not hold the writer lease of %: another server '
            'writes this store now', writer, '{schema_text}'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END;
$$;

REVOKE ALL ON FUNCTION {schema}.sabot_lock_events(integer) FROM PUBLIC;
