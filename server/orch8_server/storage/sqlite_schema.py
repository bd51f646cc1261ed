"""SQLite schema and its versioned migrations (PRAGMA user_version).

MIGRATIONS[i] takes a database from version i to i + 1, each in its own transaction; a
new database runs them all. A file written by a newer server (a higher version than
len(MIGRATIONS)) is refused rather than guessed at. Add a step, never edit a released one.

The claim indexes are partial (`WHERE status = 'pending'`) and lead with the claim's
filter and ORDER BY columns, so a claim reads only claimable rows however many finished
rows accumulate.
"""

from __future__ import annotations

import sqlite3

from orch8_server.storage.schema import not_ready

_V1 = """
CREATE TABLE IF NOT EXISTS tasks (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    handler_name TEXT NOT NULL,
    queue_name TEXT NOT NULL,
    status TEXT NOT NULL,
    priority INTEGER NOT NULL,
    params TEXT NOT NULL,
    context TEXT NOT NULL,
    headers TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    max_attempts INTEGER NOT NULL,
    retry TEXT NOT NULL,
    run_at INTEGER NOT NULL,
    good_until INTEGER,
    idempotency_key TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    started_at INTEGER,
    finished_at INTEGER,
    worker_id TEXT,
    lease_id TEXT,
    lease_expires_at INTEGER,
    lease_ms INTEGER,
    lease_started_at INTEGER,
    output TEXT,
    error TEXT,
    checkpoint TEXT,
    progress TEXT,
    cancel_reason TEXT
);
CREATE INDEX IF NOT EXISTS tasks_claim_handler
    ON tasks (queue_name, handler_name, priority, seq, run_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS tasks_claim_any
    ON tasks (queue_name, priority, seq) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS tasks_scheduled ON tasks (run_at) WHERE status = 'scheduled';
CREATE INDEX IF NOT EXISTS tasks_leases ON tasks (lease_expires_at) WHERE status = 'running';
CREATE INDEX IF NOT EXISTS tasks_good_until ON tasks (good_until)
    WHERE good_until IS NOT NULL AND status IN ('pending', 'scheduled');
CREATE INDEX IF NOT EXISTS tasks_status_seq ON tasks (status, seq);
CREATE INDEX IF NOT EXISTS tasks_worker_seq ON tasks (worker_id, seq) WHERE worker_id IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS tasks_idempotency_key
    ON tasks (idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE IF NOT EXISTS attempts (
    task_id TEXT NOT NULL,
    lease_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    worker_id TEXT,
    started_at INTEGER NOT NULL,
    ended_at INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    error TEXT,
    reply TEXT,
    PRIMARY KEY (task_id, lease_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS workers (
    worker_id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    directive TEXT NOT NULL,
    hostname TEXT,
    pid INTEGER,
    handlers TEXT NOT NULL,
    queues TEXT NOT NULL,
    concurrency INTEGER,
    labels TEXT NOT NULL,
    sdk TEXT,
    registered_at INTEGER NOT NULL,
    last_heartbeat_at INTEGER NOT NULL
);
"""

# Queue controls, label routing and queue history (contract 1.2.0).
_V2 = """
ALTER TABLE tasks ADD COLUMN required_labels TEXT;
CREATE INDEX IF NOT EXISTS tasks_running_queue
    ON tasks (queue_name, handler_name) WHERE status = 'running';
CREATE TABLE IF NOT EXISTS queue_controls (
    queue_name TEXT PRIMARY KEY,
    paused INTEGER NOT NULL DEFAULT 0,
    paused_at INTEGER,
    max_running INTEGER,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS handler_controls (
    handler_name TEXT PRIMARY KEY,
    max_running INTEGER,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS queue_minutes (
    queue_name TEXT NOT NULL,
    minute INTEGER NOT NULL,
    enqueued INTEGER NOT NULL DEFAULT 0,
    completed INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    depth INTEGER,
    wait_hist TEXT,
    PRIMARY KEY (queue_name, minute)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS queue_minutes_minute ON queue_minutes (minute);
"""

# Tenants (contract 1.4.0, P-TEN-1..3): every row gets a tenant, existing rows `default`.
# Names that were unique become unique per tenant, so the tables keyed by them are rebuilt
# (SQLite cannot change a primary key in place). The claim indexes lead with tenant, then
# the claim's equality filters and its ORDER BY, as before: a claim still reads only the
# claimable rows of one tenant's queue, in claim order.
_V3 = """
ALTER TABLE tasks ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';
DROP INDEX IF EXISTS tasks_claim_handler;
CREATE INDEX tasks_claim_handler
    ON tasks (tenant, queue_name, handler_name, priority, seq, run_at) WHERE status = 'pending';
DROP INDEX IF EXISTS tasks_claim_any;
CREATE INDEX tasks_claim_any
    ON tasks (tenant, queue_name, priority, seq) WHERE status = 'pending';
DROP INDEX IF EXISTS tasks_status_seq;
CREATE INDEX tasks_status_seq ON tasks (tenant, status, seq);
CREATE INDEX tasks_tenant_seq ON tasks (tenant, seq);
DROP INDEX IF EXISTS tasks_worker_seq;
CREATE INDEX tasks_worker_seq ON tasks (tenant, worker_id, seq) WHERE worker_id IS NOT NULL;
DROP INDEX IF EXISTS tasks_idempotency_key;
CREATE UNIQUE INDEX tasks_idempotency_key
    ON tasks (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL;
DROP INDEX IF EXISTS tasks_running_queue;
CREATE INDEX tasks_running_queue
    ON tasks (tenant, queue_name, handler_name) WHERE status = 'running';

CREATE TABLE workers_v3 (
    tenant TEXT NOT NULL DEFAULT 'default',
    worker_id TEXT NOT NULL,
    state TEXT NOT NULL,
    directive TEXT NOT NULL,
    hostname TEXT,
    pid INTEGER,
    handlers TEXT NOT NULL,
    queues TEXT NOT NULL,
    concurrency INTEGER,
    labels TEXT NOT NULL,
    sdk TEXT,
    registered_at INTEGER NOT NULL,
    last_heartbeat_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, worker_id)
);
INSERT INTO workers_v3 (worker_id, state, directive, hostname, pid, handlers, queues,
    concurrency, labels, sdk, registered_at, last_heartbeat_at)
    SELECT worker_id, state, directive, hostname, pid, handlers, queues, concurrency, labels,
    sdk, registered_at, last_heartbeat_at FROM workers;
DROP TABLE workers;
ALTER TABLE workers_v3 RENAME TO workers;

CREATE TABLE queue_controls_v3 (
    tenant TEXT NOT NULL DEFAULT 'default',
    queue_name TEXT NOT NULL,
    paused INTEGER NOT NULL DEFAULT 0,
    paused_at INTEGER,
    max_running INTEGER,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, queue_name)
);
INSERT INTO queue_controls_v3 (queue_name, paused, paused_at, max_running, updated_at)
    SELECT queue_name, paused, paused_at, max_running, updated_at FROM queue_controls;
DROP TABLE queue_controls;
ALTER TABLE queue_controls_v3 RENAME TO queue_controls;

CREATE TABLE handler_controls_v3 (
    tenant TEXT NOT NULL DEFAULT 'default',
    handler_name TEXT NOT NULL,
    max_running INTEGER,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, handler_name)
);
INSERT INTO handler_controls_v3 (handler_name, max_running, updated_at)
    SELECT handler_name, max_running, updated_at FROM handler_controls;
DROP TABLE handler_controls;
ALTER TABLE handler_controls_v3 RENAME TO handler_controls;

CREATE TABLE queue_minutes_v3 (
    tenant TEXT NOT NULL DEFAULT 'default',
    queue_name TEXT NOT NULL,
    minute INTEGER NOT NULL,
    enqueued INTEGER NOT NULL DEFAULT 0,
    completed INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    depth INTEGER,
    wait_hist TEXT,
    PRIMARY KEY (tenant, queue_name, minute)
) WITHOUT ROWID;
INSERT INTO queue_minutes_v3 (queue_name, minute, enqueued, completed, failed, depth, wait_hist)
    SELECT queue_name, minute, enqueued, completed, failed, depth, wait_hist FROM queue_minutes;
DROP TABLE queue_minutes;
ALTER TABLE queue_minutes_v3 RENAME TO queue_minutes;
CREATE INDEX IF NOT EXISTS queue_minutes_minute ON queue_minutes (minute);
"""

# Workflows (contract 1.5.0, P-WF-1..10). A task of a workflow step that reaches a final
# state records an instance event in the same transaction (the trigger, dropped in _V6), whichever path
# finished it (complete, fail, cancel, manual, expiry, the reaper); the engine consumes
# the event and advances the instance in one transaction (P-WF-5). Sleep timers are
# events with a future fire_at. The trigger body holds a ";", so this migration is a
# tuple of statements rather than one text split on ";".
_V4 = (
    """CREATE TABLE sequences (
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    definition TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, name, version)
) WITHOUT ROWID""",
    """CREATE TABLE instances (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    sequence TEXT NOT NULL,
    version INTEGER NOT NULL,
    status TEXT NOT NULL,
    input TEXT NOT NULL,
    output TEXT,
    error TEXT,
    state TEXT NOT NULL,
    idempotency_key TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    finished_at INTEGER
)""",
    "CREATE UNIQUE INDEX instances_idempotency_key ON instances (tenant, idempotency_key) "
    "WHERE idempotency_key IS NOT NULL",
    "CREATE INDEX instances_tenant_seq ON instances (tenant, seq)",
    "CREATE INDEX instances_sequence_seq ON instances (tenant, sequence, seq)",
    """CREATE TABLE instance_events (
    id INTEGER PRIMARY KEY,
    tenant TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    task_id TEXT,
    step_id TEXT,
    run INTEGER,
    fire_at INTEGER NOT NULL
)""",
    "CREATE INDEX instance_events_due ON instance_events (fire_at)",
    """CREATE TRIGGER tasks_instance_event AFTER UPDATE OF status ON tasks
    WHEN NEW.status IN ('completed', 'failed', 'cancelled', 'expired')
        AND OLD.status <> NEW.status
        AND json_extract(NEW.context, '$.step_id') IS NOT NULL
        AND json_extract(NEW.context, '$.instance_id') IS NOT NULL
BEGIN
    INSERT INTO instance_events (tenant, instance_id, task_id, fire_at)
    VALUES (NEW.tenant, json_extract(NEW.context, '$.instance_id'), NEW.id, 0);
END""",
)

# P-WF-5: a step task's end consumes its own events in the same transaction.
_V5 = "CREATE INDEX instance_events_task ON instance_events (task_id)"

# Issue 15: the trigger made every status change of every task pay (~9 us of a task's
# ~48 us of SQL over enqueue, claim and complete, measured with and without it), for
# workflow steps only. Result paths advance their rows' instances inline (P-WF-5); the
# two expiry statements, which no result path reaches, record the event themselves
# (sqlite_claim.EXPIRY_EVENTS).
_V6 = "DROP TRIGGER IF EXISTS tasks_instance_event"

# P-AUTH-7: a worker belongs to the key that registered it.
_V7 = "ALTER TABLE workers ADD COLUMN key_id TEXT"

# Concurrency keys and rate limits (contract 1.10.0, P-KEY-1..6, P-RATE-1..5). A task over
# its key's limit, or waiting for a token, is stored as status `held` (the wire says
# `pending`): the claim indexes cover `pending` rows only, so a claim never reads a held
# task (P-KEY-2). tasks_held / tasks_rate_held are each key's queue in claim order;
# tasks_key_slots counts a key's slot holders, tasks_rate_ready a rate key's admitted and
# unclaimed tasks (P-RATE-2). A held task still expires (P-KEY-6).
_V8 = """
ALTER TABLE tasks ADD COLUMN concurrency_key TEXT;
ALTER TABLE tasks ADD COLUMN max_concurrency INTEGER;
ALTER TABLE tasks ADD COLUMN rate_limit_key TEXT;
CREATE INDEX tasks_held ON tasks (tenant, concurrency_key, priority, seq)
    WHERE status = 'held' AND concurrency_key IS NOT NULL;
CREATE INDEX tasks_key_slots ON tasks (tenant, concurrency_key)
    WHERE concurrency_key IS NOT NULL AND status IN ('pending', 'running');
CREATE INDEX tasks_rate_held ON tasks (tenant, rate_limit_key, priority, seq)
    WHERE status = 'held' AND rate_limit_key IS NOT NULL;
CREATE INDEX tasks_rate_ready ON tasks (tenant, rate_limit_key)
    WHERE status = 'pending' AND rate_limit_key IS NOT NULL;
CREATE TABLE rate_limits (
    tenant TEXT NOT NULL,
    key TEXT NOT NULL,
    lim INTEGER NOT NULL,
    period_ms INTEGER NOT NULL,
    burst INTEGER NOT NULL,
    tokens REAL NOT NULL,
    refilled_at INTEGER NOT NULL,
    ready INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, key)
) WITHOUT ROWID;
CREATE INDEX rate_limits_next ON rate_limits (next_at) WHERE next_at IS NOT NULL;
DROP INDEX IF EXISTS tasks_good_until;
CREATE INDEX tasks_good_until ON tasks (good_until)
    WHERE good_until IS NOT NULL AND status IN ('pending', 'scheduled', 'held');
"""

# Instance concurrency keys (contract 1.11.0, P-KEY-7): an instance waiting for a slot is
# stored `held` (`running` on the wire); instances_key counts a key's running instances and
# orders its held ones by start.
_V9 = """
ALTER TABLE instances ADD COLUMN concurrency_key TEXT;
ALTER TABLE instances ADD COLUMN max_concurrency INTEGER;
CREATE INDEX instances_key ON instances (tenant, concurrency_key, status, seq)
    WHERE concurrency_key IS NOT NULL AND status IN ('running', 'held');
"""

# Heartbeats write no index (issue 30), as PostgreSQL's version 12: tasks_leases was the
# only index on lease_expires_at, which every heartbeat changes. The lease sweep reads the
# running rows through tasks_running_queue (partial: running rows only) and sorts them.
_V10 = "DROP INDEX IF EXISTS tasks_leases"

# One index entry less per task (issue 30: ~3 us of server CPU per task at batch 100).
# tasks_tenant_seq served a tenant's list of every status in seq order; it is read now one
# stored status at a time through tasks_status_seq (tenant, status, seq), each branch in
# seq order and bounded by the page size, merged (SqliteStorage.list_tasks), as
# PostgreSQL's lists read its per-status indexes. The tenant skip scan (P-TEN-4) probes
# tasks_status_seq, which leads with the tenant too.
_V11 = "DROP INDEX IF EXISTS tasks_tenant_seq"

# One index entry less per task again: tasks_claim_any (tenant, queue_name, priority, seq)
# served only polls that name no handler. Such a poll now finds the queue's handlers with
# pending tasks by a skip scan of tasks_claim_handler and reads each in claim order, as a
# poll naming them does (sqlite_claim._candidates); the depth check (P-BP-2) counts
# pending rows through tasks_claim_handler.
_V12 = "DROP INDEX IF EXISTS tasks_claim_any"

MIGRATIONS: tuple[str | tuple[str, ...], ...] = (
    _V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8, _V9, _V10, _V11, _V12,
)  # fmt: skip
SCHEMA_VERSION = len(MIGRATIONS)


def _version(conn: sqlite3.Connection, path: str) -> int:
    version: int = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise RuntimeError(
            f"{path} has schema version {version}; this server knows {SCHEMA_VERSION}"
        )
    return version


def require_current(conn: sqlite3.Connection, path: str) -> None:
    """--no-migrate: refuse a schema older than SCHEMA_VERSION instead of migrating it."""
    version = _version(conn, path)
    if version < SCHEMA_VERSION:
        raise not_ready(version, SCHEMA_VERSION)


def migrate(conn: sqlite3.Connection, path: str) -> int:
    """Bring the database to SCHEMA_VERSION; returns the number of steps applied."""
    version = _version(conn, path)
    for step in range(version, SCHEMA_VERSION):
        conn.execute("BEGIN IMMEDIATE")
        try:
            step_sql = MIGRATIONS[step]
            statements = step_sql.split(";") if isinstance(step_sql, str) else step_sql
            for statement in statements:
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {step + 1}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    return SCHEMA_VERSION - version
