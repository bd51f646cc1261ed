"""The stored-model candidates `python -m orch8bench.schemas` measures (issue 30): per
layout its DDL and the three statements of the batch loop, shaped like the server's
(postgres_schema.py V1..V9, postgres_claim.claim_sql, postgres_tx._COMPLETE_RUNNING,
postgres_bulk's json_to_recordset INSERT). Claim parameters, as the server's: $1 queue,
$2 limit, $3 now, $4 lease ms, $5 worker, $6 lease ids, $7 handlers, $8 tenant;
completion: $1 ids, $2 lease ids, $3 outputs, $4 now, $5 tenant.
"""

from __future__ import annotations

from dataclasses import dataclass

from orch8bench import minimal

GUARDS = (  # the plain claim's P-CTRL-1/2 guards (postgres_claim.py), $8 the tenant
    "NOT EXISTS (SELECT 1 FROM handler_controls hc WHERE hc.tenant = $8 "
    "AND hc.handler_name = h.name AND hc.max_running IS NOT NULL) AND NOT EXISTS "
    "(SELECT 1 FROM queue_controls qc WHERE qc.tenant = $8 AND qc.queue_name = $1 "
    "AND (qc.paused OR qc.max_running IS NOT NULL))"
)
CONTROLS = """
CREATE TABLE queue_controls (tenant text, queue_name text, paused boolean NOT NULL DEFAULT false,
    max_running integer, PRIMARY KEY (tenant, queue_name));
CREATE TABLE handler_controls (tenant text, handler_name text, max_running integer,
    PRIMARY KEY (tenant, handler_name));
CREATE TABLE attempts (task_id text NOT NULL, lease_id text NOT NULL, attempt integer NOT NULL,
    worker_id text, started_at bigint NOT NULL, ended_at bigint NOT NULL, outcome text NOT NULL,
    error json, reply json, PRIMARY KEY (task_id, lease_id));
"""
AUTOVACUUM = "autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_cost_delay = 0"
# Today's tasks table as V1..V9 leave it (column order included), without its triggers:
# the per-row NOTIFY (~7 us/task, pg-statements-after-v8) is the same for every layout,
# and the workflow-event trigger is what issue 30 removes.
TYPES = {
    "seq": "bigint GENERATED ALWAYS AS IDENTITY", "id": "text PRIMARY KEY",
    "handler_name": "text", "queue_name": "text", "status": "text", "priority": "integer",
    "params": "json", "context": "json", "headers": "json", "attempt": "integer",
    "max_attempts": "integer", "retry": "json", "run_at": "bigint", "good_until": "bigint",
    "idempotency_key": "text", "created_at": "bigint", "updated_at": "bigint",
    "started_at": "bigint", "finished_at": "bigint", "worker_id": "text", "lease_id": "text",
    "lease_expires_at": "bigint", "lease_ms": "bigint", "lease_started_at": "bigint",
    "output": "json", "error": "json", "checkpoint": "json", "progress": "json",
    "cancel_reason": "text", "required_labels": "jsonb", "tenant": "text",
}  # fmt: skip
# What an enqueue wrote until 2026-11-28; the server now binds only rows.INSERT_COLUMNS.
NEW = [c for c in TYPES if c != "seq"]
RECORDSET = (
    "json_to_recordset($1::json) AS r(" + ", ".join(f"{c} {TYPES[c].split()[0]}" for c in NEW) + ")"
)


def table(name: str, cols: list[str], fillfactor: int) -> str:
    body = ", ".join(f"{c} {TYPES[c]}" for c in cols)
    return f"CREATE TABLE {name} ({body}) WITH (fillfactor = {fillfactor}, {AUTOVACUUM});\n"


TASK_INDEXES = """
CREATE INDEX tasks_scheduled ON tasks (run_at) WHERE status = 'scheduled';
CREATE INDEX tasks_leases ON tasks (lease_expires_at) WHERE status = 'running';
CREATE INDEX tasks_good_until ON tasks (good_until)
    WHERE good_until IS NOT NULL AND status IN ('pending', 'scheduled');
CREATE INDEX tasks_open_seq ON tasks (tenant, status, seq)
    WHERE status IN ('pending', 'scheduled', 'running');
CREATE INDEX tasks_ended_seq ON tasks (tenant, status, seq)
    WHERE status IN ('failed', 'cancelled', 'expired');
CREATE INDEX tasks_tenant_seq ON tasks (tenant, seq);
CREATE INDEX tasks_worker_seq ON tasks (tenant, worker_id, seq) WHERE worker_id IS NOT NULL;
CREATE UNIQUE INDEX tasks_idempotency_key ON tasks (tenant, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX tasks_running_queue ON tasks (tenant, queue_name, handler_name)
    WHERE status = 'running';
"""


def claim_indexes(table: str, where: str) -> str:
    return (
        f"CREATE INDEX {table}_claim_handler ON {table} "
        f"(tenant, queue_name, handler_name, priority, seq){where};\n"
        f"CREATE INDEX {table}_claim_any ON {table} (tenant, queue_name, priority, seq){where};\n"
    )


PENDING = " WHERE status = 'pending'"
DDL_A = table("tasks", list(TYPES), 90) + TASK_INDEXES + claim_indexes("tasks", PENDING)
# T: today's tasks table as V1..V18 leave it (postgres_schema.py): A's, with the status
# list index split into partial ones a claim or completion writes once (V8, V13, V14), no
# lease index (V12), no by-queue claim index (V18), and the key and rate columns (V10;
# NULL here, so their partial indexes take no entry). Its completion writes no attempt
# row for a success (transitions.completed_attempt), as E's.
TODAY = """ALTER TABLE tasks ADD COLUMN concurrency_key text, ADD COLUMN max_concurrency integer,
    ADD COLUMN rate_limit_key text;
CREATE INDEX tasks_claim_handler ON tasks (tenant, queue_name, handler_name, priority, seq)
    WHERE status = 'pending';
CREATE INDEX tasks_scheduled ON tasks (run_at) WHERE status = 'scheduled';
CREATE INDEX tasks_good_until ON tasks (good_until)
    WHERE good_until IS NOT NULL AND status IN ('pending', 'scheduled', 'held');
CREATE INDEX tasks_waiting_seq ON tasks (tenant, status, seq)
    WHERE status IN ('pending', 'scheduled', 'held');
CREATE INDEX tasks_ended_seq ON tasks (tenant, status, seq)
    WHERE status IN ('failed', 'cancelled', 'expired');
CREATE INDEX tasks_completed_seq ON tasks (tenant, seq) WHERE status = 'completed';
CREATE INDEX tasks_worker_seq ON tasks (tenant, worker_id, seq) WHERE worker_id IS NOT NULL;
CREATE UNIQUE INDEX tasks_idempotency_key ON tasks (tenant, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX tasks_running_queue ON tasks (tenant, queue_name, handler_name)
    WHERE status = 'running';
CREATE INDEX tasks_held ON tasks (tenant, concurrency_key, priority, seq)
    WHERE status = 'held' AND concurrency_key IS NOT NULL;
CREATE INDEX tasks_key_slots ON tasks (tenant, concurrency_key)
    WHERE concurrency_key IS NOT NULL AND status IN ('pending', 'running');
CREATE INDEX tasks_rate_held ON tasks (tenant, rate_limit_key, priority, seq)
    WHERE status = 'held' AND rate_limit_key IS NOT NULL;
CREATE INDEX tasks_rate_ready ON tasks (tenant, rate_limit_key)
    WHERE status = 'pending' AND rate_limit_key IS NOT NULL;
"""
DDL_T = table("tasks", list(TYPES), 90) + TODAY
READY = ["tenant", "queue_name", "handler_name", "priority", "seq", "id", "required_labels"]
DDL_B = (
    table("tasks", list(TYPES), 90) + TASK_INDEXES
    + "CREATE TABLE ready (tenant text, queue_name text, handler_name text, priority integer, "
    f"seq bigint, id text, required_labels jsonb) WITH ({AUTOVACUUM});\n"
    + claim_indexes("ready", "")
)  # fmt: skip
# P: today's table partitioned by status (open / ended): a completion moves the row to the
# ended partition. A unique index must hold the partition key: the id's uniqueness (and the
# idempotency key's) would no longer span the partitions.
DDL_P = (
    "CREATE TABLE tasks ("
    + ", ".join(f"{c} {TYPES[c].replace(' PRIMARY KEY', '')}" for c in TYPES)
    + ", PRIMARY KEY (id, status)) PARTITION BY LIST (status);\n"
    "CREATE TABLE tasks_open PARTITION OF tasks FOR VALUES IN ('pending', 'scheduled', "
    f"'running') WITH (fillfactor = 90, {AUTOVACUUM});\n"
    "CREATE TABLE tasks_ended PARTITION OF tasks FOR VALUES IN ('completed', 'failed', "
    f"'cancelled', 'expired') WITH ({AUTOVACUUM});\n"
    + TASK_INDEXES.replace("(tenant, idempotency_key)", "(tenant, idempotency_key, status)")
    + claim_indexes("tasks", PENDING)
)
# C/D: the hot row of open work, its write-once body, and the finished record.
OPEN = ["id", "tenant", "queue_name", "handler_name", "priority", "seq", "status", "attempt",
        "max_attempts", "run_at", "good_until", "worker_id", "lease_id", "lease_expires_at",
        "lease_ms", "lease_started_at", "started_at", "required_labels", "created_at",
        "updated_at"]  # fmt: skip
BODY = ["id", "tenant", "params", "context", "headers", "retry", "checkpoint", "idempotency_key"]
DONE = ["id", "tenant", "queue_name", "handler_name", "priority", "seq", "status", "attempt",
        "max_attempts", "run_at", "worker_id", "lease_id", "lease_started_at", "created_at",
        "started_at", "finished_at", "output", "error", "cancel_reason"]  # fmt: skip
SIDE = (
    table("bodies", BODY, 100)
    + "CREATE UNIQUE INDEX bodies_idempotency_key ON bodies (tenant, idempotency_key) "
    "WHERE idempotency_key IS NOT NULL;\n"
    + table("done", DONE, 100).replace(" GENERATED ALWAYS AS IDENTITY", "")
    + "CREATE INDEX done_tenant_seq ON done (tenant, seq);\n"
    "CREATE INDEX done_ended_seq ON done (tenant, status, seq) WHERE status <> 'completed';\n"
)
# C: nothing a claim or a heartbeat changes is indexed (not even in a predicate): claims
# are HOT, and a claim scan steps over the running rows still in the claim index.
DDL_C = (
    table("open", OPEN, 30) + claim_indexes("open", "")
    + "CREATE INDEX open_run_at ON open (run_at);\n" + SIDE
)  # fmt: skip
# D: as C, but the claim indexes hold pending rows only: a claim is not HOT (one primary
# key entry), heartbeats (lease_expires_at) still are.
DDL_D = (
    table("open", OPEN, 70) + claim_indexes("open", PENDING)
    + "CREATE INDEX open_scheduled ON open (run_at) WHERE status = 'scheduled';\n" + SIDE
)  # fmt: skip
# G: E with the indexes the contract's other queries want on open work: lists by tenant
# (seq order), and the running rows by worker (held tasks; the lease sweep reads them all,
# as many as the workers' concurrency). Neither changes at a heartbeat: those stay HOT.
DDL_G = (
    DDL_D + "CREATE INDEX open_tenant_seq ON open (tenant, seq);\n"
    "CREATE INDEX open_running ON open (tenant, worker_id, seq) WHERE status = 'running';\n"
)
# H: F with the list index; the claim changes neither column, so it stays HOT. Running work
# cannot be indexed here (status and worker change at the claim).
DDL_H = DDL_C + "CREATE INDEX open_tenant_seq ON open (tenant, seq);\n"


def live(then: str, otherwise: str) -> str:  # a claimed row past good_until expires
    return f"CASE WHEN (t.good_until IS NULL OR t.good_until > $3) THEN {then} ELSE {otherwise} END"


RUNNING, EXPIRED = "'running'", "'expired'"
LEASE = (
    f"status = {live(RUNNING, EXPIRED)}, "
    f"attempt = {live('t.attempt + 1', 't.attempt')}, "
    f"lease_id = {live('($6::text[])[r.rn]', 't.lease_id')}, "
    f"lease_expires_at = {live('$3 + $4', 't.lease_expires_at')}, "
    f"lease_ms = {live('$4', 't.lease_ms')}, lease_started_at = {live('$3', 't.lease_started_at')}, "
    f"worker_id = {live('$5', 't.worker_id')}, "
    f"started_at = {live('COALESCE(t.started_at, $3)', 't.started_at')}, updated_at = $3"
)
CLAIMED = ("seq", "id", "handler_name", "queue_name", "priority", "params", "context",
           "headers", "attempt", "max_attempts", "checkpoint", "good_until", "created_at",
           "started_at", "run_at", "tenant", "status", "lease_id", "worker_id",
           "lease_expires_at", "lease_ms", "lease_started_at")  # fmt: skip
JSON_TEXT = ("params", "context", "headers", "checkpoint")


def returned(row: str, body: str) -> str:
    return ", ".join(
        f"{body}.{c}::text AS {c}" if c in JSON_TEXT else f"{row}.{c}" for c in CLAIMED
    )


def pick(table: str, filters: str, cols: str = "id, seq, priority") -> str:
    """postgres_claim.claim_sql's by-handler pick: one LATERAL scan per handler ($7)."""
    return (
        f"SELECT c.* FROM unnest($7::text[]) AS h(name), LATERAL (SELECT {cols} FROM {table} t "
        f"WHERE {filters}tenant = $8 AND queue_name = $1 AND handler_name = h.name "
        f"AND t.required_labels IS NULL AND {GUARDS} ORDER BY priority, seq LIMIT $2 "
        "FOR UPDATE SKIP LOCKED) c ORDER BY c.priority, c.seq LIMIT $2"
    )


RANKED = "ranked AS (SELECT id, row_number() OVER (ORDER BY priority, seq) AS rn FROM {src})"
CLAIM_A = (
    f"WITH pick AS ({pick('tasks', 'status = ' + repr('pending') + ' AND ')}), "
    + RANKED.format(src="pick")
    + f" UPDATE tasks t SET {LEASE}, finished_at = {live('t.finished_at', '$3')} "
    f"FROM ranked r WHERE t.id = r.id RETURNING {returned('t', 't')}"
)
CLAIM_B = (
    f"WITH pick AS ({pick('ready', '', 'ctid AS rid, id, seq, priority')}), "
    "gone AS (DELETE FROM ready WHERE ctid = ANY(ARRAY(SELECT rid FROM pick)) "
    "RETURNING id, priority, seq), "
    + RANKED.format(src="gone")
    + f" UPDATE tasks t SET {LEASE}, finished_at = {live('t.finished_at', '$3')} "
    f"FROM ranked r WHERE t.id = r.id RETURNING {returned('t', 't')}"
)
CLAIM_OPEN = (  # C and D: the hot row leased in place, the body joined for the answer
    f"WITH pick AS ({pick('open', 'status = ' + repr('pending') + ' AND ')}), "
    + RANKED.format(src="pick")
    + f", up AS (UPDATE open t SET {LEASE} FROM ranked r WHERE t.id = r.id RETURNING t.*) "
    f"SELECT {returned('u', 'b')} FROM up u JOIN bodies b ON b.id = u.id"
)
ITEMS = (
    "c AS MATERIALIZED (SELECT u.id, u.lease_id, u.output, 'running'::text AS live "
    "FROM unnest($1::text[], $2::text[], $3::text[]) AS u(id, lease_id, output))"
)
ATTEMPT = (
    "INSERT INTO attempts (task_id, lease_id, attempt, worker_id, started_at, ended_at, "
    "outcome, error, reply) SELECT id, lease_id, attempt, worker_id, lease_started_at, $4, "
    "'completed', NULL, json_build_object('task_id', id, 'status', 'completed', 'attempt', "
    "attempt, 'attempts_left', greatest(0, max_attempts - attempt), 'next_attempt_at', NULL, "
    "'error_code', NULL) FROM done_ ON CONFLICT (task_id, lease_id) DO UPDATE SET "
    "attempt = EXCLUDED.attempt, worker_id = EXCLUDED.worker_id, started_at = "
    "EXCLUDED.started_at, ended_at = EXCLUDED.ended_at, outcome = EXCLUDED.outcome, "
    "error = EXCLUDED.error, reply = EXCLUDED.reply"
)
COMPLETED = ("id", "lease_id", "attempt", "max_attempts", "worker_id", "lease_started_at",
             "queue_name", "handler_name", "run_at", "tenant")  # fmt: skip
COMPLETE_TODAY = (  # T: postgres_tx._COMPLETE_RUNNING as of V18, no attempt row
    f"WITH {ITEMS} UPDATE tasks AS t SET status = 'completed', output = c.output::json, "
    "finished_at = $4, updated_at = $4 FROM c WHERE t.id = c.id AND t.lease_id = c.lease_id "
    "AND t.status = c.live AND t.tenant = $5 RETURNING "
    + ", ".join(f"t.{c}" for c in COMPLETED)
    + ", t.status, t.headers, t.context->>'instance_id' AS instance_id"
)
COMPLETE_TASKS = (  # A and B: postgres_tx._COMPLETE_RUNNING before V16
    f"WITH {ITEMS}, done_ AS (UPDATE tasks AS t SET status = 'completed', "
    "output = c.output::json, finished_at = $4, updated_at = $4 FROM c WHERE t.id = c.id "
    "AND t.lease_id = c.lease_id AND t.status = c.live AND t.tenant = $5 RETURNING "
    + ", ".join(f"t.{c}" for c in COMPLETED)
    + ", t.status, t.headers, t.context->>'instance_id' AS instance_id), "
    f"ended AS ({ATTEMPT}) SELECT * FROM done_"
)


def complete_open(attempt_row: bool) -> str:
    """C, D, E, F: the hot row moved to `done` by the completing statement. Without the
    attempt row (E, F) a success's `done` row is its attempt's record."""
    ended = f"ended AS ({ATTEMPT}) " if attempt_row else ""
    return (
        f"WITH {ITEMS}, done_ AS (DELETE FROM open t USING c WHERE t.id = c.id "
        "AND t.lease_id = c.lease_id AND t.status = c.live AND t.tenant = $5 "
        "RETURNING t.*, c.output), "
        f"moved AS (INSERT INTO done ({', '.join(DONE)}) SELECT "
        + ", ".join({"status": "'completed'", "finished_at": "$4::bigint",
                     "output": "output::json", "error": "NULL",
                     "cancel_reason": "NULL"}.get(c, c) for c in DONE)
        + f" FROM done_){', ' if attempt_row else ' '}{ended}SELECT "
        + ", ".join(f"d.{c}" for c in COMPLETED)
        + ", 'completed' AS status, b.headers, b.context->>'instance_id' AS instance_id "
        "FROM done_ d JOIN bodies b ON b.id = d.id"
    )  # fmt: skip


INSERT_A = f"INSERT INTO tasks ({', '.join(NEW)}) SELECT {', '.join(NEW)} FROM {RECORDSET}"
INSERT_B = (
    f"WITH ins AS ({INSERT_A} RETURNING {', '.join(READY)}, status) "
    f"INSERT INTO ready ({', '.join(READY)}) SELECT {', '.join(READY)} FROM ins "
    "WHERE status = 'pending'"
)
OPEN_NEW = [c for c in OPEN if c != "seq"]
INSERT_OPEN = (
    f"WITH r AS (SELECT * FROM {RECORDSET}), "
    f"b AS (INSERT INTO bodies ({', '.join(BODY)}) SELECT {', '.join(BODY)} FROM r) "
    f"INSERT INTO open ({', '.join(OPEN_NEW)}) SELECT {', '.join(OPEN_NEW)} FROM r"
)


@dataclass(frozen=True)
class Layout:
    name: str
    ddl: str
    insert: str
    claim: str
    complete: str


LAYOUTS = {
    "A": Layout("A", DDL_A + CONTROLS, INSERT_A, CLAIM_A, COMPLETE_TASKS),
    "T": Layout("T", DDL_T + CONTROLS, INSERT_A, CLAIM_A, COMPLETE_TODAY),
    "B": Layout("B", DDL_B + CONTROLS, INSERT_B, CLAIM_B, COMPLETE_TASKS),
    "P": Layout("P", DDL_P + CONTROLS, INSERT_A, CLAIM_A, COMPLETE_TASKS),
    "C": Layout("C", DDL_C + CONTROLS, INSERT_OPEN, CLAIM_OPEN, complete_open(True)),
    "D": Layout("D", DDL_D + CONTROLS, INSERT_OPEN, CLAIM_OPEN, complete_open(True)),
    "E": Layout("E", DDL_D + CONTROLS, INSERT_OPEN, CLAIM_OPEN, complete_open(False)),
    "F": Layout("F", DDL_C + CONTROLS, INSERT_OPEN, CLAIM_OPEN, complete_open(False)),
    "G": Layout("G", DDL_G + CONTROLS, INSERT_OPEN, CLAIM_OPEN, complete_open(False)),
    "H": Layout("H", DDL_H + CONTROLS, INSERT_OPEN, CLAIM_OPEN, complete_open(False)),
    "M": Layout("M", minimal.PG_SCHEMA, minimal.PgJobs._INSERT, minimal.PgJobs._CLAIM,
                minimal.PgJobs._COMPLETE),
}  # fmt: skip
