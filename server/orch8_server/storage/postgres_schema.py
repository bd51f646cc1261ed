"""PostgreSQL schema as versioned migrations, applied at start-up (or by `orch8-server
migrate` alone, schema.py).

Every replica runs `migrate` when it starts; a session advisory lock serialises them, so
replicas starting together apply each migration once, and a database already at the
latest version is only read (no lock, no CREATE, so a role without CREATE rights may
start on it). A database newer than this server is refused.
"""

from __future__ import annotations

import asyncpg

from orch8_server.storage.schema import not_ready

# pg_advisory_lock key: any constant shared by every replica ("orch8" in ASCII).
MIGRATION_LOCK = 0x6F72636838

_V1 = """
CREATE TABLE tasks (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id text NOT NULL UNIQUE,
    handler_name text NOT NULL,
    queue_name text NOT NULL,
    status text NOT NULL,
    priority integer NOT NULL,
    params json NOT NULL,
    context json NOT NULL,
    headers json NOT NULL,
    attempt integer NOT NULL,
    max_attempts integer NOT NULL,
    retry json NOT NULL,
    run_at bigint NOT NULL,
    good_until bigint,
    idempotency_key text,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    started_at bigint,
    finished_at bigint,
    worker_id text,
    lease_id text,
    lease_expires_at bigint,
    lease_ms bigint,
    lease_started_at bigint,
    output json,
    error json,
    checkpoint json,
    progress json,
    cancel_reason text
) WITH (fillfactor = 90, autovacuum_vacuum_scale_factor = 0.01,
        autovacuum_vacuum_cost_delay = 0);

-- The claim indexes are partial (pending rows only) and lead with the claim's equality
-- filters followed by its ORDER BY (priority, seq): a claim reads only claimable rows in
-- claim order however many finished rows pile up (P-ORDER-1).
CREATE INDEX tasks_claim_handler ON tasks (queue_name, handler_name, priority, seq)
    WHERE status = 'pending';
CREATE INDEX tasks_claim_any ON tasks (queue_name, priority, seq) WHERE status = 'pending';
CREATE INDEX tasks_scheduled ON tasks (run_at) WHERE status = 'scheduled';
CREATE INDEX tasks_leases ON tasks (lease_expires_at) WHERE status = 'running';
CREATE INDEX tasks_good_until ON tasks (good_until)
    WHERE good_until IS NOT NULL AND status IN ('pending', 'scheduled');
CREATE INDEX tasks_status_seq ON tasks (status, seq);
CREATE INDEX tasks_worker_seq ON tasks (worker_id, seq) WHERE worker_id IS NOT NULL;
CREATE UNIQUE INDEX tasks_idempotency_key ON tasks (idempotency_key)
    WHERE idempotency_key IS NOT NULL;

CREATE TABLE attempts (
    task_id text NOT NULL,
    lease_id text NOT NULL,
    attempt integer NOT NULL,
    worker_id text,
    started_at bigint NOT NULL,
    ended_at bigint NOT NULL,
    outcome text NOT NULL,
    error json,
    reply json,
    PRIMARY KEY (task_id, lease_id)
);

CREATE TABLE workers (
    worker_id text PRIMARY KEY,
    state text NOT NULL,
    directive text NOT NULL,
    hostname text,
    pid bigint,
    handlers json NOT NULL,
    queues json NOT NULL,
    concurrency integer,
    labels json NOT NULL,
    sdk text,
    registered_at bigint NOT NULL,
    last_heartbeat_at bigint NOT NULL
);

-- Cross-replica wake-ups (P-POLL-3): whenever a task becomes pending (enqueue, retry,
-- release, reclaim, scheduled time reached) the writing transaction NOTIFYs; PostgreSQL
-- delivers on commit and folds duplicates within one transaction. The payload names the
-- writing replica so it can skip its own wake-ups (it already woke its waiters in-process).
CREATE FUNCTION orch8_notify_pending() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('orch8_wake', json_build_array(
        current_setting('orch8.replica', true), NEW.queue_name, NEW.handler_name)::text);
    RETURN NULL;
END $$;
CREATE TRIGGER tasks_pending_insert AFTER INSERT ON tasks
    FOR EACH ROW WHEN (NEW.status = 'pending') EXECUTE FUNCTION orch8_notify_pending();
CREATE TRIGGER tasks_pending_update AFTER UPDATE OF status ON tasks
    FOR EACH ROW WHEN (NEW.status = 'pending' AND OLD.status <> 'pending')
    EXECUTE FUNCTION orch8_notify_pending();
"""

_V2 = """
-- Cluster-wide active pollers (P-OBS-1): each replica upserts what its pollers asked for
-- at most once per second per poller, so GET /queues counts pollers on every replica.
CREATE TABLE pollers (
    queue_name text NOT NULL,
    handler_name text NOT NULL,
    poller text NOT NULL,
    seen_at bigint NOT NULL,
    PRIMARY KEY (queue_name, handler_name, poller)
);
CREATE INDEX pollers_seen ON pollers (seen_at);
"""

# Queue controls, label routing and queue history (contract 1.2.0). required_labels is
# NULL for a task without labels, so the claim's label test costs nothing for them.
_V3 = """
ALTER TABLE tasks ADD COLUMN required_labels jsonb;
CREATE INDEX tasks_running_queue ON tasks (queue_name, handler_name) WHERE status = 'running';
CREATE TABLE queue_controls (
    queue_name text PRIMARY KEY,
    paused boolean NOT NULL DEFAULT false,
    paused_at bigint,
    max_running integer,
    updated_at bigint NOT NULL
);
CREATE TABLE handler_controls (
    handler_name text PRIMARY KEY,
    max_running integer,
    updated_at bigint NOT NULL
);
CREATE TABLE queue_minutes (
    queue_name text NOT NULL,
    minute bigint NOT NULL,
    enqueued bigint NOT NULL DEFAULT 0,
    completed bigint NOT NULL DEFAULT 0,
    failed bigint NOT NULL DEFAULT 0,
    depth bigint,
    wait_hist jsonb,
    PRIMARY KEY (queue_name, minute)
);
CREATE INDEX queue_minutes_minute ON queue_minutes (minute);
"""

# Tenants (contract 1.4.0, P-TEN-1..3). ADD COLUMN with a constant default rewrites
# nothing (PostgreSQL 11+): existing rows read as tenant `default`. Unique names become
# unique per tenant; the claim indexes lead with tenant, then the claim's equality filters
# and its ORDER BY (priority, seq), as before. Wake-ups name the tenant.
_V4 = """
ALTER TABLE tasks ADD COLUMN tenant text NOT NULL DEFAULT 'default';
DROP INDEX tasks_claim_handler;
CREATE INDEX tasks_claim_handler ON tasks (tenant, queue_name, handler_name, priority, seq)
    WHERE status = 'pending';
DROP INDEX tasks_claim_any;
CREATE INDEX tasks_claim_any ON tasks (tenant, queue_name, priority, seq)
    WHERE status = 'pending';
DROP INDEX tasks_status_seq;
CREATE INDEX tasks_status_seq ON tasks (tenant, status, seq);
CREATE INDEX tasks_tenant_seq ON tasks (tenant, seq);
DROP INDEX tasks_worker_seq;
CREATE INDEX tasks_worker_seq ON tasks (tenant, worker_id, seq) WHERE worker_id IS NOT NULL;
DROP INDEX tasks_idempotency_key;
CREATE UNIQUE INDEX tasks_idempotency_key ON tasks (tenant, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
DROP INDEX tasks_running_queue;
CREATE INDEX tasks_running_queue ON tasks (tenant, queue_name, handler_name)
    WHERE status = 'running';

ALTER TABLE workers ADD COLUMN tenant text NOT NULL DEFAULT 'default';
ALTER TABLE workers DROP CONSTRAINT workers_pkey, ADD PRIMARY KEY (tenant, worker_id);
ALTER TABLE queue_controls ADD COLUMN tenant text NOT NULL DEFAULT 'default';
ALTER TABLE queue_controls DROP CONSTRAINT queue_controls_pkey,
    ADD PRIMARY KEY (tenant, queue_name);
ALTER TABLE handler_controls ADD COLUMN tenant text NOT NULL DEFAULT 'default';
ALTER TABLE handler_controls DROP CONSTRAINT handler_controls_pkey,
    ADD PRIMARY KEY (tenant, handler_name);
ALTER TABLE queue_minutes ADD COLUMN tenant text NOT NULL DEFAULT 'default';
ALTER TABLE queue_minutes DROP CONSTRAINT queue_minutes_pkey,
    ADD PRIMARY KEY (tenant, queue_name, minute);
ALTER TABLE pollers ADD COLUMN tenant text NOT NULL DEFAULT 'default';
ALTER TABLE pollers DROP CONSTRAINT pollers_pkey,
    ADD PRIMARY KEY (tenant, queue_name, handler_name, poller);

CREATE OR REPLACE FUNCTION orch8_notify_pending() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('orch8_wake', json_build_array(
        current_setting('orch8.replica', true), NEW.tenant || '/' || NEW.queue_name,
        NEW.handler_name)::text);
    RETURN NULL;
END $$;
"""

# Workflows (contract 1.5.0, P-WF-1..10): see sqlite_schema.py _V4. A step task reaching a
# final state records an instance event in its own transaction (the trigger); replicas
# take events with FOR UPDATE SKIP LOCKED and lock the instance row while advancing it.
_V5 = """
CREATE TABLE sequences (
    tenant text NOT NULL,
    name text NOT NULL,
    version integer NOT NULL,
    definition jsonb NOT NULL,
    created_at bigint NOT NULL,
    PRIMARY KEY (tenant, name, version)
);
CREATE TABLE instances (
    seq bigserial PRIMARY KEY,
    id text NOT NULL UNIQUE,
    tenant text NOT NULL,
    sequence text NOT NULL,
    version integer NOT NULL,
    status text NOT NULL,
    input jsonb NOT NULL,
    output jsonb,
    error jsonb,
    state jsonb NOT NULL,
    idempotency_key text,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    finished_at bigint
);
CREATE UNIQUE INDEX instances_idempotency_key ON instances (tenant, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX instances_tenant_seq ON instances (tenant, seq);
CREATE INDEX instances_sequence_seq ON instances (tenant, sequence, seq);
CREATE TABLE instance_events (
    id bigserial PRIMARY KEY,
    tenant text NOT NULL,
    instance_id text NOT NULL,
    task_id text,
    step_id text,
    run integer,
    fire_at bigint NOT NULL
);
CREATE INDEX instance_events_due ON instance_events (fire_at);
CREATE FUNCTION orch8_instance_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO instance_events (tenant, instance_id, task_id, fire_at)
    VALUES (NEW.tenant, NEW.context->>'instance_id', NEW.id, 0);
    RETURN NULL;
END $$;
CREATE TRIGGER tasks_instance_event AFTER UPDATE OF status ON tasks FOR EACH ROW
    WHEN (NEW.status IN ('completed', 'failed', 'cancelled', 'expired')
        AND OLD.status IS DISTINCT FROM NEW.status
        AND (NEW.context->>'step_id') IS NOT NULL
        AND (NEW.context->>'instance_id') IS NOT NULL)
    EXECUTE FUNCTION orch8_instance_event();
"""

# P-WF-5: a step task's end consumes its own events in the same transaction.
_V6 = "CREATE INDEX instance_events_task ON instance_events (task_id);"

# P-AUTH-7: a worker belongs to the key that registered it.
_V7 = "ALTER TABLE workers ADD COLUMN key_id text;"

# Fewer index entries per row version (issue 30; bench/results/2026-11-27-pg-statements-*).
# Every task version (enqueue, claim, completion: none of them HOT, `status` is indexed)
# wrote an entry into both unique indexes, seq's and id's. `id` is now the only key: rows
# are found by id (claims pick ids, promotions and expiries too), and seq stays what it
# always was besides, the FIFO order inside the claim and list indexes. The status list
# index covered every row, so each completion wrote an entry nobody reads on the hot path;
# it is split in two partial indexes: the open statuses, and the rare ended ones. Lists of
# `completed` tasks walk tasks_tenant_seq (finished rows are mostly completed ones).
_V8 = """
ALTER TABLE tasks DROP CONSTRAINT tasks_pkey;
ALTER TABLE tasks DROP CONSTRAINT tasks_id_key;
ALTER TABLE tasks ADD CONSTRAINT tasks_pkey PRIMARY KEY (id);
DROP INDEX tasks_status_seq;
CREATE INDEX tasks_open_seq ON tasks (tenant, status, seq)
    WHERE status IN ('pending', 'scheduled', 'running');
CREATE INDEX tasks_ended_seq ON tasks (tenant, status, seq)
    WHERE status IN ('failed', 'cancelled', 'expired');
"""

# P-WF-5: a batch completion that comes first in its unit commits by itself (one round
# trip); its steps advance in the unit's next transaction, which takes the step's event.
# The workflow pump took those events too, at once (fire_at 0): it raced every inline
# advance, and the advance's DELETE waited on the pump's row locks (19% of PostgreSQL's
# time in a workflow run, `orch8bench.pgstat --workflows`). A task event is now due one
# second after its task ended: the pump is the safety net (a crash between the two
# commits, an end no result path reaches), not a competitor.
_V9 = """
CREATE OR REPLACE FUNCTION orch8_instance_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO instance_events (tenant, instance_id, task_id, fire_at)
    VALUES (NEW.tenant, NEW.context->>'instance_id', NEW.id,
            (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 1000);
    RETURN NULL;
END $$;
"""

# Concurrency keys and rate limits (contract 1.10.0, P-KEY-1..6, P-RATE-1..5), as in
# SQLite's version 8: a task over its key's limit or waiting for a token is stored `held`,
# outside the claim indexes (P-KEY-2); tasks_held / tasks_rate_held are each key's queue
# in claim order, tasks_key_slots counts a key's slot holders, tasks_rate_ready a rate
# key's admitted and unclaimed tasks (P-RATE-2). The open-status list index and the expiry
# index take `held` in, so lists of `pending` (which include held tasks, P-KEY-6) and the
# expiry sweep keep using them.
_V10 = """
ALTER TABLE tasks ADD COLUMN concurrency_key text;
ALTER TABLE tasks ADD COLUMN max_concurrency integer;
ALTER TABLE tasks ADD COLUMN rate_limit_key text;
CREATE INDEX tasks_held ON tasks (tenant, concurrency_key, priority, seq)
    WHERE status = 'held' AND concurrency_key IS NOT NULL;
CREATE INDEX tasks_key_slots ON tasks (tenant, concurrency_key)
    WHERE concurrency_key IS NOT NULL AND status IN ('pending', 'running');
CREATE INDEX tasks_rate_held ON tasks (tenant, rate_limit_key, priority, seq)
    WHERE status = 'held' AND rate_limit_key IS NOT NULL;
CREATE INDEX tasks_rate_ready ON tasks (tenant, rate_limit_key)
    WHERE status = 'pending' AND rate_limit_key IS NOT NULL;
CREATE TABLE rate_limits (
    tenant text NOT NULL,
    key text NOT NULL,
    lim integer NOT NULL,
    period_ms bigint NOT NULL,
    burst integer NOT NULL,
    tokens double precision NOT NULL,
    refilled_at bigint NOT NULL,
    ready integer NOT NULL DEFAULT 0,
    next_at bigint,
    updated_at bigint NOT NULL,
    PRIMARY KEY (tenant, key)
);
CREATE INDEX rate_limits_next ON rate_limits (next_at) WHERE next_at IS NOT NULL;

-- P-KEY-3/4: admission of held tasks to their keys' free slots, every key of a unit in one
-- call (a statement pair per key was 2 round trips per key per unit: 3-4x the CPU per task
-- at 1,000 keys, bench/results/2026-11-27-concurrency-keys.md). Per key, in the order given
-- (the caller sorts: one lock order): a transaction lock on the key, then the head of its
-- held tasks (none: done), then its slot holders counted by a new statement (READ
-- COMMITTED: it sees every admission that committed before the lock was granted), then the
-- head's room admitted in claim order. Held rows locked elsewhere are skipped (SKIP
-- LOCKED): their transaction changes them and admits their key itself.
-- P-KEY-1: the free slots of keys that have no held task, for new keyed tasks about to be
-- inserted (stored pending at once: one row version instead of held, then pending). Per
-- key, in the order given: its lock (kept to the end of the transaction, as orch8_admit's),
-- then 0 if it has a held task (those go first, P-KEY-3), else its cap - holders.
CREATE FUNCTION orch8_room(p_tenants text[], p_keys text[], p_caps integer[])
RETURNS TABLE (r_tenant text, r_key text, r_room bigint) LANGUAGE plpgsql AS $$
DECLARE
    i integer;
BEGIN
    FOR i IN 1 .. coalesce(array_length(p_keys, 1), 0) LOOP
        PERFORM pg_advisory_xact_lock(4932953, hashtext(p_tenants[i] || chr(31) || p_keys[i]));
        r_tenant := p_tenants[i];
        r_key := p_keys[i];
        IF EXISTS (SELECT 1 FROM tasks t WHERE t.tenant = p_tenants[i]
                   AND t.concurrency_key = p_keys[i] AND t.status = 'held') THEN
            r_room := 0;
        ELSE
            SELECT greatest(0, p_caps[i] - count(*)) INTO r_room FROM tasks t
                WHERE t.tenant = p_tenants[i] AND t.concurrency_key = p_keys[i]
                AND t.status IN ('pending', 'running');
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;

CREATE FUNCTION orch8_admit(p_tenants text[], p_keys text[], p_now bigint)
RETURNS TABLE (a_tenant text, a_queue text, a_handler text) LANGUAGE plpgsql AS $$
DECLARE
    i integer;
    cap integer;
    taken bigint;
BEGIN
    FOR i IN 1 .. coalesce(array_length(p_keys, 1), 0) LOOP
        PERFORM pg_advisory_xact_lock(4932953, hashtext(p_tenants[i] || chr(31) || p_keys[i]));
        SELECT t.max_concurrency INTO cap FROM tasks t
            WHERE t.tenant = p_tenants[i] AND t.concurrency_key = p_keys[i] AND t.status = 'held'
            ORDER BY t.priority, t.seq LIMIT 1;
        CONTINUE WHEN cap IS NULL;
        SELECT count(*) INTO taken FROM tasks t
            WHERE t.tenant = p_tenants[i] AND t.concurrency_key = p_keys[i]
            AND t.status IN ('pending', 'running');
        CONTINUE WHEN taken >= cap;
        RETURN QUERY
            WITH h AS (
                SELECT q.id, q.max_concurrency,
                       row_number() OVER (ORDER BY q.priority, q.seq) - 1 AS ahead
                FROM (SELECT t.id, t.max_concurrency, t.priority, t.seq FROM tasks t
                      WHERE t.tenant = p_tenants[i] AND t.concurrency_key = p_keys[i]
                      AND t.status = 'held' ORDER BY t.priority, t.seq
                      LIMIT cap - taken FOR UPDATE SKIP LOCKED) q)
            UPDATE tasks t SET status = 'pending', updated_at = p_now FROM h
            WHERE t.id = h.id AND taken + h.ahead < h.max_concurrency
            RETURNING t.tenant, t.queue_name, t.handler_name;
    END LOOP;
END $$;
DROP INDEX tasks_good_until;
CREATE INDEX tasks_good_until ON tasks (good_until)
    WHERE good_until IS NOT NULL AND status IN ('pending', 'scheduled', 'held');
DROP INDEX tasks_open_seq;
CREATE INDEX tasks_open_seq ON tasks (tenant, status, seq)
    WHERE status IN ('pending', 'scheduled', 'running', 'held');
"""

# Instance concurrency keys (contract 1.11.0, P-KEY-7), as SQLite's version 9: an instance
# waiting for a slot is stored `held` (`running` on the wire); instances_key counts a key's
# running instances and orders its held ones by start.
_V11 = """
ALTER TABLE instances ADD COLUMN concurrency_key text;
ALTER TABLE instances ADD COLUMN max_concurrency integer;
CREATE INDEX instances_key ON instances (tenant, concurrency_key, status, seq)
    WHERE concurrency_key IS NOT NULL AND status IN ('running', 'held');
"""

# Heartbeats update in place (issue 30): a heartbeat changes lease_expires_at (and
# progress or a checkpoint), and tasks_leases was the only index on it, so every heartbeat
# wrote a new entry into each of a running row's six indexes. Without it no indexed column
# changes: the update is HOT (the page keeps fillfactor's room), and a claim writes one
# entry less. The lease sweep reads the running rows through tasks_running_queue (partial,
# running rows only: bounded by the workers' concurrency, not by history) and sorts them.
_V12 = "DROP INDEX tasks_leases;"

# No index over every row (issue 30): tasks_tenant_seq took an entry at every row version
# (enqueue, claim, completion; none is HOT), read only by lists without a status filter and
# the tenant skip scan. Those now read the three partial indexes that together hold every
# row (tasks_open_seq, tasks_ended_seq and this one, of completed rows: an entry at the
# completion only) and merge them by seq: two index entries less per task.
_V13 = """
CREATE INDEX tasks_completed_seq ON tasks (tenant, seq) WHERE status = 'completed';
DROP INDEX tasks_tenant_seq;
"""

# A claim writes no tasks_open_seq entry (issue 30): the running rows leave that index, and
# lists of running tasks read tasks_running_queue (running rows only, leading with tenant:
# bounded by the workers' concurrency) and sort them by seq, as the lease sweep does.
_V14 = """
CREATE INDEX tasks_waiting_seq ON tasks (tenant, status, seq)
    WHERE status IN ('pending', 'scheduled', 'held');
DROP INDEX tasks_open_seq;
"""

# An advance that leaves its instance running updates it in place (issue 30): it changes
# the state, `updated_at` and nothing indexed, but on pages filled to the brim the new
# version went to another page, with an entry in each of the instance's four or five
# indexes (`orch8bench.pgstat --workflows`: 4% of instance updates HOT). Half of each page
# is kept for the versions an advance writes, and pruning frees the dead ones. Pages
# written before keep their fill until their rows move.
_V15 = "ALTER TABLE instances SET (fillfactor = 50);"

# P-WF-5 without a second advancing mechanism (issue 30): a completion of workflow steps
# now commits in the transaction that advances their instances (PgTx.complete_running), as
# every other result path did, so the trigger's event per step end (an insert, a delete
# and three index entries per step, `orch8bench.pgstat --workflows`) guards nothing. The
# expiring statements record their own events (postgres_claim.expiry_events), as SQLite's
# do. Events stored before stay due, and the pump takes them.
_V16 = """
DROP TRIGGER tasks_instance_event ON tasks;
DROP FUNCTION orch8_instance_event();
"""

# One wake-up per enqueue statement, not per row (issue 30): a batch insert of 100 tasks
# ran the row trigger 100 times, each building the same payload for pg_notify to fold.
# The statement trigger reads the inserted rows from a transition table and notifies each
# distinct (tenant/queue, handler) once. Updates that make a task pending stay per row.
_V17 = """
CREATE FUNCTION orch8_notify_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('orch8_wake', w.payload) FROM (
        SELECT DISTINCT json_build_array(current_setting('orch8.replica', true),
            n.tenant || '/' || n.queue_name, n.handler_name)::text AS payload
        FROM inserted n WHERE n.status = 'pending') w;
    RETURN NULL;
END $$;
DROP TRIGGER tasks_pending_insert ON tasks;
CREATE TRIGGER tasks_pending_insert AFTER INSERT ON tasks REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION orch8_notify_inserted();
"""

# One index entry less per task (issue 30): tasks_claim_any (tenant, queue_name, priority,
# seq) served only polls that name no handler; every SDK worker names its handlers. Such a
# poll now reads the queue's handlers with pending tasks first (postgres_claim
# .PENDING_HANDLERS, a skip scan of tasks_claim_handler) and claims through them as a
# poll naming them does. The depth reads (P-BP-2) count pending rows through
# tasks_claim_handler, which leads with (tenant, queue_name) too.
_V18 = "DROP INDEX IF EXISTS tasks_claim_any;"

MIGRATIONS: list[tuple[int, str]] = [
    (1, _V1), (2, _V2), (3, _V3), (4, _V4), (5, _V5), (6, _V6), (7, _V7), (8, _V8), (9, _V9),
    (10, _V10), (11, _V11), (12, _V12), (13, _V13), (14, _V14), (15, _V15), (16, _V16),
    (17, _V17), (18, _V18),
]  # fmt: skip
LATEST = MIGRATIONS[-1][0]


async def _applied(conn: asyncpg.Connection) -> set[int] | None:
    """The versions applied (None: no schema yet); a database newer than this server is
    refused."""
    if await conn.fetchval("SELECT to_regclass('orch8_schema_migrations')") is None:
        return None
    done = {r[0] for r in await conn.fetch("SELECT version FROM orch8_schema_migrations")}
    if done and max(done) > LATEST:
        raise RuntimeError(f"database has schema version {max(done)}; this server knows {LATEST}")
    return done


def _current(done: set[int] | None) -> bool:
    return done is not None and all(version in done for version, _ in MIGRATIONS)


async def require_current(conn: asyncpg.Connection) -> None:
    """--no-migrate: refuse a missing or older schema instead of migrating it (read only,
    so a role without CREATE rights may run it)."""
    done = await _applied(conn)
    if not _current(done):
        raise not_ready(max(done or {0}), LATEST)


async def migrate(conn: asyncpg.Connection) -> int:
    """Bring the database to LATEST; returns the number of migrations applied."""
    if _current(await _applied(conn)):  # no lock, no CREATE: a role without the right starts
        return 0
    await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK)
    try:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS orch8_schema_migrations ("
            "version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = await _applied(conn) or set()
        applied = 0
        for version, sql in MIGRATIONS:
            if version in done:
                continue
            async with conn.transaction():
                await conn.execute(sql)
                await conn.execute(
                    "INSERT INTO orch8_schema_migrations (version) VALUES ($1)", version
                )
            applied += 1
        return applied
    except asyncpg.InsufficientPrivilegeError as exc:  # not retried: a role lacks a right
        raise RuntimeError(
            f"migrating the schema failed: {exc}; run `orch8-server migrate` as the schema's "
            "owner first"
        ) from exc
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK)
