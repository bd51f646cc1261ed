"""The rows of the storage contract, one TypedDict per shape a `Storage` or `Tx` method
takes or returns (base.py).

At run time every row is a plain dict (a TypedDict is one): backends build them from
driver records with `dict(zip(...))` or `dict(record)`, and nothing is converted on the
claim and complete paths. Keys are column names; instants are epoch milliseconds; JSON
columns come back parsed unless a row says otherwise (`Json` marks a column that holds
any JSON value).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any, Literal, TypedDict

Json = Any  # a parsed JSON value; on claimed rows an orjson.Fragment of the stored text
# The stored values of these columns: the spec's enums of the same names (openapi.yaml).
TaskStatus = Literal[
    "pending",
    "scheduled",
    "running",
    "completed",
    "failed",
    "cancelled",
    "expired",
    "held",  # stored only: a pending task waiting for a slot of its key (P-KEY-1)
]
WorkerDirective = Literal["running", "quiet", "terminate"]


# Column orders: what backends select and zip into the rows below (tests/storage_contract/
# test_rows.py holds each TypedDict to its tuple).
TASK_COLUMNS = (
    "seq",
    "id",
    "handler_name",
    "queue_name",
    "status",
    "priority",
    "params",
    "context",
    "headers",
    "attempt",
    "max_attempts",
    "retry",
    "run_at",
    "good_until",
    "idempotency_key",
    "created_at",
    "updated_at",
    "started_at",
    "finished_at",
    "worker_id",
    "lease_id",
    "lease_expires_at",
    "lease_ms",
    "lease_started_at",
    "output",
    "error",
    "checkpoint",
    "progress",
    "cancel_reason",
    "required_labels",  # NULL for none (P-LABEL-1): the plain claim's test is IS NULL
    "tenant",  # P-TEN-1
    "concurrency_key",  # P-KEY-1, NULL for none
    "max_concurrency",
    "rate_limit_key",  # P-RATE-1, NULL for none
)
# Columns no task carries when the lifecycle creates it: claims, heartbeats and results
# set them later. Inserts leave them to their default, NULL: binding 11 NULLs cost ~3.5 us
# per row on SQLite (sqlite3's executemany), and 11 more keys of JSON per row on
# PostgreSQL (json_to_recordset). A row that sets some anyway (the storage contract allows
# any column) gets them by an UPDATE after its insert (`born_fields`).
BORN_NULL = (
    "started_at",
    "worker_id",
    "lease_id",
    "lease_expires_at",
    "lease_ms",
    "lease_started_at",
    "output",
    "error",
    "checkpoint",
    "progress",
    "cancel_reason",
)
INSERT_COLUMNS = tuple(c for c in TASK_COLUMNS if c != "seq" and c not in BORN_NULL)
_born = operator.itemgetter(*BORN_NULL)
_UNBORN = (None,) * len(BORN_NULL)


def born_fields(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """The BORN_NULL columns a new row sets, or None (every row the lifecycle builds)."""
    if _born(row) == _UNBORN:
        return None
    return {c: row[c] for c in BORN_NULL if row[c] is not None}


ATTEMPT_COLUMNS = (
    "task_id",
    "lease_id",
    "attempt",
    "worker_id",
    "started_at",
    "ended_at",
    "outcome",
    "error",
    "reply",
)
# What a claim returns at least: the ClaimedTask view's columns and what the claim needs.
CLAIM_COLUMNS = (
    "seq", "id", "handler_name", "queue_name", "priority", "params", "context", "headers",
    "attempt", "max_attempts", "checkpoint", "good_until", "created_at", "started_at",
    "run_at",  # queue wait = started_at - max(created_at, run_at) (P-OBS-5)
    "tenant",
    "rate_limit_key",  # P-RATE-2: a claim of an admitted task lets the next one in
)  # fmt: skip
CLAIM_JSON = ("params", "context", "headers", "checkpoint")  # spliced, never parsed
# What complete_running returns: the outcome, the attempt record, metrics and spans need.
COMPLETED_COLUMNS = (
    "id", "status", "lease_id", "attempt", "max_attempts", "worker_id", "lease_started_at",
    "queue_name", "handler_name", "run_at", "tenant",
    "headers",  # P-TEL-2 complete spans: parsed on PostgreSQL, the stored text on SQLite
    "concurrency_key",  # P-KEY-3: a completion frees its key's slot
)  # fmt: skip
QUEUE_CONTROL_COLUMNS = (
    "queue_name", "paused", "paused_at", "max_running", "updated_at", "tenant",
)  # fmt: skip
HANDLER_CONTROL_COLUMNS = ("handler_name", "max_running", "updated_at", "tenant")
WORKER_COLUMNS = (
    "worker_id",
    "state",
    "directive",
    "hostname",
    "pid",
    "handlers",
    "queues",
    "concurrency",
    "labels",
    "sdk",
    "registered_at",
    "last_heartbeat_at",
    "tenant",  # P-TEN-1: worker ids are unique per tenant
    "key_id",  # P-AUTH-7: the key that registered the worker (None without keys)
)

INSTANCE_COLUMNS = (
    "seq", "id", "tenant", "sequence", "version", "status", "input", "output", "error",
    "state", "idempotency_key", "created_at", "updated_at", "finished_at", "concurrency_key",
    "max_concurrency",
)  # fmt: skip


class NewTaskRow(TypedDict):
    """A task as the lifecycle builds it for `Tx.insert_task`: every column but seq."""

    id: str
    handler_name: str
    queue_name: str
    status: TaskStatus
    priority: int
    params: Json
    context: dict[str, Any]
    headers: dict[str, str]
    attempt: int
    max_attempts: int
    retry: dict[str, Any]
    run_at: int
    good_until: int | None
    idempotency_key: str | None
    created_at: int
    updated_at: int
    started_at: int | None
    finished_at: int | None
    worker_id: str | None
    lease_id: str | None
    lease_expires_at: int | None
    lease_ms: int | None
    lease_started_at: int | None
    output: Json
    error: Json
    checkpoint: Json
    progress: Json
    cancel_reason: str | None
    required_labels: dict[str, str] | None  # None for none (P-LABEL-1)
    tenant: str  # P-TEN-1
    concurrency_key: str | None  # P-KEY-1
    max_concurrency: int | None
    rate_limit_key: str | None  # P-RATE-1


class TaskRow(NewTaskRow):
    """A stored task (base.TASK_COLUMNS)."""

    seq: int  # insertion order: FIFO (P-ORDER-1) and the list cursor


class TaskUpdate(TypedDict, total=False):
    """The columns `Tx.update_task` sets: any of a task's but its identity."""

    status: TaskStatus
    priority: int
    params: Json
    attempt: int
    max_attempts: int
    run_at: int
    good_until: int | None
    updated_at: int
    started_at: int | None
    finished_at: int | None
    worker_id: str | None
    lease_id: str | None
    lease_expires_at: int | None
    lease_ms: int | None
    lease_started_at: int | None
    output: Json
    error: Json
    checkpoint: Json
    progress: Json
    cancel_reason: str | None


class ClaimedRow(TypedDict):
    """A task as a claim returns it (base.CLAIM_COLUMNS and its new lease). The JSON
    columns are orjson.Fragments of the stored text, spliced into the reply unparsed."""

    seq: int
    id: str
    handler_name: str
    queue_name: str
    priority: int
    params: Json
    context: Json
    headers: Json
    attempt: int
    max_attempts: int
    checkpoint: Json
    good_until: int | None
    created_at: int
    started_at: int
    run_at: int
    tenant: str
    rate_limit_key: str | None  # P-RATE-2
    status: TaskStatus  # running; expired rows never leave the claim
    lease_id: str
    worker_id: str | None
    lease_expires_at: int
    lease_ms: int
    lease_started_at: int
    headers_json: str  # the stored headers text, for P-TEL-2 claim spans


class CompletedRow(TypedDict):
    """A task `Tx.complete_running` completed (base.COMPLETED_COLUMNS, as after it)."""

    id: str
    status: TaskStatus  # completed
    lease_id: str
    attempt: int
    max_attempts: int
    worker_id: str | None
    lease_started_at: int
    queue_name: str
    handler_name: str
    run_at: int
    tenant: str
    headers: Json  # P-TEL-2: parsed on PostgreSQL, the stored text on SQLite
    concurrency_key: str | None  # P-KEY-3
    instance_id: str | None  # context.instance_id (P-WF-5: advanced inline)


class AttemptRow(TypedDict):
    """An attempt that ended (base.ATTEMPT_COLUMNS)."""

    task_id: str
    lease_id: str
    attempt: int
    worker_id: str | None
    started_at: int
    ended_at: int
    outcome: str
    error: Json
    reply: Json  # the answer replayed to a repeated call (P-IDEM-1)


class WorkerRow(TypedDict):
    """A registered worker (base.WORKER_COLUMNS)."""

    worker_id: str
    state: str  # the spec's WorkerState
    directive: WorkerDirective
    hostname: str | None
    pid: int | None
    handlers: list[str]
    queues: list[str]
    concurrency: int | None
    labels: dict[str, str]
    sdk: str | None
    registered_at: int
    last_heartbeat_at: int
    tenant: str  # P-TEN-1: worker ids are unique per tenant
    key_id: str | None  # P-AUTH-7: the key that registered the worker


class WorkerUpdate(TypedDict, total=False):
    """The columns `Tx.update_worker` sets."""

    state: str
    directive: WorkerDirective
    hostname: str | None
    pid: int | None
    handlers: list[str]
    queues: list[str]
    concurrency: int | None
    labels: dict[str, str]
    sdk: str | None
    last_heartbeat_at: int


class QueueStatsRow(TypedDict):
    queue_name: str
    handler_name: str
    pending: int
    scheduled: int
    running: int
    failed: int
    held: int  # pending, waiting for a key's slot or a rate limit's token (P-KEY-1, P-RATE-1)
    oldest_pending_run_at: int | None


class TenantRow(TypedDict):
    tenant: str
    tasks: int
    workers: int


class QueueControlRow(TypedDict):
    """base.QUEUE_CONTROL_COLUMNS (P-CTRL-1, P-CTRL-2)."""

    queue_name: str
    paused: bool
    paused_at: int | None
    max_running: int | None
    updated_at: int
    tenant: str


class QueueControlUpdate(TypedDict, total=False):
    paused: bool
    paused_at: int | None
    max_running: int | None


class HandlerControlRow(TypedDict):
    """base.HANDLER_CONTROL_COLUMNS (P-CTRL-2)."""

    handler_name: str
    max_running: int | None
    updated_at: int
    tenant: str


class QueueMinuteCounts(TypedDict):
    """One replica's counts of one queue's minute, added to the stored ones (P-OBS-5)."""

    tenant: str
    queue_name: str
    minute: int  # epoch ms // 60000
    enqueued: int
    completed: int
    failed: int
    wait_hist: dict[str, int] | None  # histogram bucket -> claims


class QueueMinuteRow(TypedDict):
    """A stored minute of one queue (P-OBS-5)."""

    minute: int
    enqueued: int
    completed: int
    failed: int
    depth: int | None
    wait_hist: dict[str, int] | None


# Workflows (P-WF-1..10; sqlite_workflows.py, postgres_workflows.py) --------------------


class SequenceRow(TypedDict):
    tenant: str
    name: str
    version: int
    definition: dict[str, Any]  # steps and on_error, as defined (P-WF-1)
    created_at: int


class NewInstanceRow(TypedDict):
    id: str
    tenant: str
    sequence: str
    version: int
    status: str
    input: Json
    output: Json
    error: Json
    state: dict[str, Any]  # the state machine's (workflow_steps.py)
    idempotency_key: str | None
    created_at: int
    updated_at: int
    finished_at: int | None
    concurrency_key: str | None  # P-KEY-7; status `held` while it waits for a slot
    max_concurrency: int | None


class InstanceRow(NewInstanceRow):
    seq: int


class InstanceEventRow(TypedDict):
    """A step task's end (task_id) or a sleep timer (step_id, run) of an instance."""

    id: int | None  # None for an end handed over without being stored (SQLite)
    tenant: str
    instance_id: str
    task_id: str | None
    step_id: str | None
    run: int | None


class RateLimitRow(TypedDict):
    """A rate limit (P-RATE-1) with the count of its held tasks."""

    key: str
    lim: int
    period_ms: int
    burst: int
    tokens: float
    refilled_at: int
    ready: int  # admitted and unclaimed at the last admission (P-RATE-2)
    next_at: int | None
    updated_at: int
    held: int
