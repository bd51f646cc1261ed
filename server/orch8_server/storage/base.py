"""The storage interface every backend implements (tests/storage_contract/ checks it on
each).

Rows are plain dicts typed by the TypedDicts of rows.py, keys in its column orders;
instants are epoch milliseconds; JSON columns (params, context, headers, retry, output,
error, checkpoint, progress; handlers, queues, labels) come back parsed. Backends know SQL
and nothing of HTTP or of the lifecycle rules: they store what the rules decided,
atomically. A `Tx` is one transaction; on PostgreSQL `get_task` locks the row (FOR UPDATE).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from orch8_server.storage.rate_buckets import Admitted
from orch8_server.storage.rows import (
    AttemptRow,
    ClaimedRow,
    CompletedRow,
    HandlerControlRow,
    InstanceEventRow,
    InstanceRow,
    NewInstanceRow,
    NewTaskRow,
    QueueControlRow,
    QueueControlUpdate,
    QueueMinuteCounts,
    QueueMinuteRow,
    QueueStatsRow,
    RateLimitRow,
    SequenceRow,
    TaskRow,
    TaskUpdate,
    TenantRow,
    WorkerRow,
    WorkerUpdate,
)

# A row in lifecycle code not yet written against the row types of rows.py: Any, so it
# accepts and yields them as it did plain dicts while it moves to them.
Row = Any


# Announced on the wake channel when a control changes: waiters re-read the controls.
CONTROLS_CHANGED = "!controls"  # never a valid handler name
ANY_QUEUE = ""  # never a valid queue name: every queue (of the tenant)


def wake_key(tenant: str, queue: str) -> str:
    """The key waiting polls and wake-ups use for one tenant's queue (P-TEN-3): tenant
    ids never contain "/", so the first "/" splits it back (see split_wake_key)."""
    return f"{tenant}/{queue}"


def split_wake_key(key: str) -> tuple[str, str]:
    tenant, _, queue = key.partition("/")
    return tenant, queue


class StorageUnavailable(Exception):
    """The database cannot be reached right now (restart, dropped connection, pool
    exhausted): the call changed nothing durable and may be retried (HTTP 503)."""


@dataclass(slots=True)  # not frozen: a frozen __init__ costs ~1 us more per claim
class ClaimParams:
    """One claim (Tx.claim, Storage.claim): up to `limit` pending tasks of the tenant's
    queue (P-TEN-3), priority then FIFO (P-ORDER-1), leased to `worker_id` for `lease_ms`
    from `now`, each under a lease id from `new_lease_id`."""

    tenant: str
    queue_name: str
    handler_names: list[str] | None  # None or empty: every handler of the queue
    limit: int
    now: int
    lease_ms: int
    worker_id: str | None
    new_lease_id: Callable[[], str]
    # The claiming worker's labels: tasks whose required_labels they do not hold are
    # skipped; None takes only tasks without required labels (P-LABEL-1/2).
    labels: dict[str, str] | None = None
    # The queue or a handler may be paused or capped: read the controls (locked on
    # PostgreSQL) and claim at most cap - running (P-CTRL-1, P-CTRL-2). On a multi-replica
    # backend uncapped claims still skip rows of paused or capped queues and handlers, so
    # a replica whose view of the controls is stale never passes them; a single process
    # (SQLite) made every change itself, so its engine's view is exact.
    capped: bool = False


@dataclass(frozen=True)
class TaskFilter:
    tenant: str = "default"  # P-TEN-3: lists cover one tenant
    statuses: tuple[str, ...] = ()
    handler_name: str | None = None
    queue_name: str | None = None
    worker_id: str | None = None
    created_after: int | None = None
    created_before: int | None = None
    instance_id: str | None = None  # P-WF-4: context.instance_id


class WorkflowStore(Protocol):
    """The workflow tables (P-WF-1..10) inside one transaction (`Tx.workflows`), so the
    lifecycle reads, decides and writes an instance atomically with the tasks it
    dispatches. On PostgreSQL instances are read FOR UPDATE (replicas advancing one
    instance take turns) and due events are taken with SKIP LOCKED."""

    async def lock_sequence_name(self, tenant: str, name: str) -> None:
        """Definers of one name take turns until commit, so versions never collide
        (P-WF-1)."""

    async def sequence(self, tenant: str, name: str, version: int | None) -> SequenceRow | None:
        """That version of the sequence; its latest with version None."""

    async def insert_sequence(self, row: SequenceRow) -> None: ...

    async def list_sequences(self, tenant: str, limit: int, after: str | None) -> list[SequenceRow]:
        """The latest version of each of the tenant's sequences named after `after`, by
        name."""

    async def insert_instance(self, row: NewInstanceRow) -> tuple[InstanceRow, bool]:
        """Insert; with an existing idempotency_key of the tenant return (existing, False)."""

    async def add_instance(self, row: NewInstanceRow) -> None:
        """Insert an instance without an idempotency key (so no conflict is possible). It
        may be buffered until this transaction's next read or commit; its seq is not
        returned."""

    async def instance(self, instance_id: str) -> InstanceRow | None: ...

    async def instances(self, instance_ids: list[str]) -> dict[str, InstanceRow]:
        """Those of the ids that exist, read in one statement (locked in id order on
        PostgreSQL, like `instance`): an advance of many instances reads them at once.
        A row read so is stale once this transaction updates it (see `updated`)."""

    @property
    def updated(self) -> set[str]:
        """Ids of the instances this transaction has updated so far."""

    async def update_instance(self, row: InstanceRow) -> None:
        """Store status, output, error, state, updated_at and finished_at."""

    async def lock_instance_key(self, tenant: str, key: str) -> None:
        """P-KEY-7: starts and ends of the key's instances take turns until commit (a
        transaction lock on PostgreSQL; SQLite's single writer already does)."""

    async def instance_slots(self, tenant: str, key: str, before_seq: int) -> tuple[int, int]:
        """P-KEY-7: (instances of the key holding a slot, held ones with seq < before_seq)."""

    async def held_instances(self, tenant: str, key: str, limit: int) -> list[InstanceRow]:
        """P-KEY-7: the key's held instances in start order, locked (PostgreSQL)."""

    async def list_instances(
        self,
        tenant: str,
        sequence: str | None,
        statuses: tuple[str, ...],
        limit: int,
        before_seq: int | None,
    ) -> list[InstanceRow]:
        """The tenant's instances, newest first (seq descending)."""

    async def add_timer(
        self, tenant: str, instance_id: str, step_id: str, run: int, fire_at: int
    ) -> None: ...

    async def take_due_events(self, now: int, limit: int) -> list[InstanceEventRow]:
        """Up to `limit` events due at `now` (timers, and task ends recorded by expiry),
        oldest first, deleted as they are read."""

    async def take_task_events(self, task_ids: list[str]) -> list[InstanceEventRow]:
        """These tasks' stored events, deleted, oldest first."""


class Tx(Protocol):
    @property
    def workflows(self) -> WorkflowStore:
        """The workflow tables in this transaction."""

    async def insert_task(
        self,
        row: NewTaskRow,
        new_key: bool = False,
        adopt: Callable[[TaskRow], None] | None = None,
    ) -> tuple[NewTaskRow, bool]:
        """Insert and return (row, True); with an existing idempotency_key of the tenant,
        (the existing TaskRow, False) (P-TASK-3). A new row's seq is not known before
        commit (PostgreSQL sends the insert then). `new_key`: the caller knows no row can
        hold the key yet (a step of an instance created in this transaction: the key
        names the instance): stored like a row without a key, with the writes buffered.
        `adopt`: the caller can take an existing row later (a step of an instance this
        transaction holds locked): a backend may answer (row, True) at once and, if the key
        turns out stored, call `adopt(existing)` before its next read or the commit, and
        before sending any write buffered after this insert (PostgreSQL: an advance's
        steps are one statement). Otherwise the existing row is returned at once."""

    async def get_task(self, task_id: str) -> TaskRow | None: ...

    async def tasks_by_ids(self, task_ids: list[str]) -> list[TaskRow]: ...

    async def update_task(self, task_id: str, fields: TaskUpdate) -> None: ...

    async def insert_attempt(self, row: AttemptRow) -> None:
        """Insert, or replace the attempt of the same (task_id, lease_id)."""

    async def complete_running(
        self, tenant: str, items: list[tuple[str, str, Any]], now: int
    ) -> list[CompletedRow]:
        """Set-based completion (P-DONE-1): each (task_id, lease_id, output) whose task of
        `tenant` is running under that lease becomes completed at `now`, in one statement;
        the completed row is its attempt's record, no attempt is stored (lifecycle
        transitions.completed_attempt). Returns those rows; items not returned were left
        untouched for the per-item rules (replays, lease_lost, not_found)."""

    async def get_attempt(self, task_id: str, lease_id: str) -> AttemptRow | None: ...

    async def latest_attempt(self, task_id: str) -> AttemptRow | None: ...

    async def claim(self, params: ClaimParams) -> tuple[list[ClaimedRow], int]:
        """Claim up to `params.limit` pending tasks; pending tasks past good_until met on
        the way become expired (P-EXPIRE-1). Returns the claimed rows (status running, a
        new lease, attempt + 1) and the number expired."""

    async def promote_due(self, now: int) -> list[tuple[str, str, str]]:
        """scheduled -> pending where run_at <= now (every tenant); returns (tenant, queue,
        handler) triples."""

    async def expire_overdue(self, now: int) -> int:
        """pending or scheduled -> expired where good_until <= now (P-EXPIRE-1); a step
        task's expiry records its instance event (P-WF-5). Returns how many."""

    async def expired_leases(self, now: int, limit: int) -> list[TaskRow]:
        """Running tasks whose lease expired at `now`, earliest first (P-LEASE-6)."""

    # Concurrency keys (P-KEY-1..6): a keyed task is stored `held` until it has a slot.
    # (tenant, key) pairs whose slots this transaction's own set-based statements changed
    # (promote_due, expire_overdue); the unit of work admits them with its own.
    touched: set[tuple[str, str]]

    async def admit(self, keys: set[tuple[str, str]], now: int) -> list[tuple[str, str, str]]:
        """P-KEY-3/4: for each (tenant, key), held -> pending in claim order while slots
        are free, serialised per key across replicas. Returns the admitted tasks' (tenant,
        queue, handler) triples, to wake their polls."""

    async def stranded_keys(self, limit: int) -> list[tuple[str, str]]:
        """Keys with held tasks and no task in a slot: nothing would ever admit them (a
        crash between a slot's release and the admission)."""

    # Rate limits (P-RATE-1..5): (tenant, key) pairs of limits or tasks this transaction's
    # own statements changed (promote_due, expire_overdue, set/delete_rate_limit).
    touched_rate: set[tuple[str, str]]

    async def admit_rate(self, keys: set[tuple[str, str]], now: int) -> Admitted:
        """P-RATE-1..3: for each (tenant, rate key), held -> pending in claim order while
        the bucket has tokens and fewer than `burst` are admitted and unclaimed; stores the
        bucket and the next token's instant (None: nothing waits for one)."""

    async def paced_keys(self, limit: int) -> list[tuple[str, str]]:
        """(tenant, rate key) pairs with held tasks."""

    async def set_rate_limit(
        self, tenant: str, key: str, limit: int, period_ms: int, burst: int, now: int
    ) -> None: ...

    async def delete_rate_limit(self, tenant: str, key: str) -> bool:
        """True when the key had a limit."""

    async def running_tasks_of(self, tenant: str, worker_id: str) -> list[TaskRow]: ...

    async def get_worker(self, tenant: str, worker_id: str) -> WorkerRow | None: ...

    async def upsert_worker(self, row: WorkerRow) -> None: ...

    async def update_worker(self, tenant: str, worker_id: str, fields: WorkerUpdate) -> None: ...

    async def delete_worker(self, tenant: str, worker_id: str) -> None: ...

    async def silent_workers(self, before: int) -> list[WorkerRow]:
        """Workers not dead whose last heartbeat is before `before` (every tenant)."""


class Storage(Protocol):
    kind: Literal["sqlite", "postgresql"]  # ServerInfo.storage
    multi_replica: bool  # several server processes may share this database

    def set_waker(self, wake: Callable[[str, str], None], wake_all: Callable[[], None]) -> None:
        """Before open: where tasks made claimable by *other* replicas are announced
        (wake(queue, handler)); wake_all when announcements may have been missed.
        A single-process backend (SQLite) never calls them."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def ping(self) -> None: ...

    def transaction(self) -> AbstractAsyncContextManager[Tx]: ...

    async def claim(self, params: ClaimParams) -> tuple[list[ClaimedRow], int]:
        """Tx.claim in a transaction of its own (the backend picks the cheapest one)."""

    async def get_task(self, task_id: str) -> TaskRow | None: ...

    async def list_tasks(
        self, flt: TaskFilter, limit: int, before_seq: int | None
    ) -> list[TaskRow]: ...

    async def list_attempts(self, task_id: str) -> list[AttemptRow]: ...

    async def queue_stats(self, tenant: str, queue_name: str | None) -> list[QueueStatsRow]:
        """The tenant's counts per (queue, handler) with an unfinished or failed task."""

    async def next_scheduled_at(self) -> int | None: ...

    async def rate_limits(self, tenant: str, key: str | None = None) -> list[RateLimitRow]:
        """The tenant's rate limits (one, with `key`), by key, with their held counts."""

    async def key_slots(self, tenant: str, key: str) -> int:
        """How many tasks of a concurrency key hold a slot: pending or running (P-KEY-1)."""

    async def next_expiry_at(self) -> int | None:
        """The earliest good_until of a pending or scheduled task (P-CLOCK-3)."""

    async def next_event_at(self) -> int | None:
        """The earliest fire_at of a stored instance event (P-CLOCK-3); a read, no lock."""

    async def get_worker(self, tenant: str, worker_id: str) -> WorkerRow | None: ...

    async def list_workers(self, tenant: str | None, state: str | None) -> list[WorkerRow]:
        """The tenant's workers; every tenant's with tenant None (metrics)."""

    async def active_task_counts(self, tenant: str, worker_ids: list[str]) -> dict[str, int]: ...

    async def tenant_names(self) -> list[str]:
        """Every tenant with a task or a worker, sorted (P-TEN-4); cheap (a skip scan)."""

    async def list_tenants(self) -> list[TenantRow]:
        """P-TEN-4: every tenant in use with its task and worker counts, sorted."""

    # Queue controls and label routing (P-CTRL-1..3, P-LABEL-1..3) ------------------------

    async def set_queue_control(
        self, tenant: str, queue_name: str, fields: QueueControlUpdate, now: int
    ) -> QueueControlRow:
        """Upsert the tenant's queue control row with `fields` and announce the change to
        every replica."""

    async def set_handler_control(
        self, tenant: str, handler_name: str, max_running: int | None, now: int
    ) -> HandlerControlRow:
        """Upsert the handler's cap and announce it."""

    async def controls(self) -> tuple[list[QueueControlRow], list[HandlerControlRow]]:
        """Every tenant's queue control rows and handler control rows."""

    async def running_counts(self) -> list[tuple[str, str, str, int]]:
        """(tenant, queue, handler, running tasks) for every triple with a running task."""

    async def pending_label_sets(
        self, tenant: str, queue_name: str | None
    ) -> list[tuple[str, str, dict[str, str], int]]:
        """(queue, handler, required_labels, pending count) of the tenant's pending
        labelled tasks."""

    async def live_worker_labels(self, tenant: str) -> list[dict[str, str]]:
        """The labels of every registered worker of the tenant that is not dead."""

    async def announce(self, queue_name: str, handler_name: str) -> None:
        """Wake the other replicas' polls of (queue, handler) (a running cap freed a
        slot); `queue_name` is a wake_key(tenant, queue). A single-process backend does
        nothing."""

    async def share_pollers(
        self, seen: list[tuple[str, str, str, int]], since: int
    ) -> list[tuple[str, str, str, int]]:
        """Multi-replica only: record (wake_key, handler, poller, seen_at) rows seen by this
        replica; return every replica's rows seen at or after `since`."""

    # Queue history (P-OBS-5; sqlite_history.py, postgres_history.py) ---------------------

    async def pending_counts(self) -> dict[tuple[str, str], int]:
        """Pending tasks per (tenant, queue) (the history's depth sample)."""

    async def queue_depth(self, tenant: str, queue_name: str, limit: int) -> int:
        """Pending + scheduled tasks of the tenant's queue, each up to `limit` (P-BP-2):
        an indexed read that stays bounded however many finished rows exist."""

    async def add_queue_minutes(
        self,
        counts: list[QueueMinuteCounts],
        minute: int,
        depths: dict[tuple[str, str], int],
        prune_before: int,
    ) -> None:
        """Add each row's counts to the stored minute, additively: every replica adds its
        own. Set the depth of `minute` per (tenant, queue) in `depths`; drop minutes
        before `prune_before`."""

    async def queue_minutes(self, tenant: str, queue_name: str, since: int) -> list[QueueMinuteRow]:
        """Stored minutes of the tenant's queue from `since` on, oldest first."""
