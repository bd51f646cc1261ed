"""One PostgreSQL transaction (the `Tx` of base.py) on a pooled asyncpg connection.

Unlike SQLite (one connection, one asyncio lock), several replicas write at once, so
every read that a rule acts on locks its rows: `get_task` and `tasks_by_ids` are
FOR UPDATE, concurrent calls on one task serialise, and the loser sees the winner's
commit. Sweeps that every replica runs (reaper, promotion, dead workers) lock with
SKIP LOCKED, so replicas share the work instead of queueing on each other's rows, and a
row one replica reclaims is invisible to the others until it commits.
Lock order is workers before tasks, tasks in id order where we choose it.

Writes that return nothing (update_task, insert_attempt, inserts without an
idempotency key) are buffered and sent as pipelined `executemany` batches before the next
read and at commit: a batch fail of 100 tasks is one locking SELECT and two pipelined
writes instead of 300 round trips. Rows this transaction locked are kept (and updated by
update_task), so rule code re-reading them costs nothing.

BEGIN is sent lazily, before the first statement that reads. A transaction that only
buffered writes of one statement (an enqueue without idempotency keys, single or batch)
sends them at commit as one statement, atomic by itself (one implicit transaction): one
round trip instead of BEGIN, INSERT, COMMIT. So is a completion of running tasks
(`complete_running`: one UPDATE) when it comes first.

A keyed insert whose caller can take an existing row later (`adopt`: the next steps of
the instances a workflow advance holds locked) is buffered too: the advance's steps go as
one `INSERT ... ON CONFLICT DO NOTHING`, sent before the other buffered writes, so a row
that already held a key is handed to `adopt` before the instance updates that name it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from functools import cached_property
from typing import Any, cast

import asyncpg
import orjson

from orch8_server.storage import postgres_keys
from orch8_server.storage.base import ClaimParams
from orch8_server.storage.postgres_bulk import (
    BULK,
    INSERT_TASK_PLAIN,
    INSERT_TASKS_IF_NEW,
    NEW_TASK_COLS,
    UPSERT_ATTEMPT,
    new_task_records,
)
from orch8_server.storage.postgres_claim import capped_claim_rows, claim_rows, expiry_events
from orch8_server.storage.postgres_workflows import PostgresWorkflows
from orch8_server.storage.rate_buckets import Admitted
from orch8_server.storage.rows import (
    ATTEMPT_COLUMNS,
    COMPLETED_COLUMNS,
    TASK_COLUMNS,
    WORKER_COLUMNS,
    AttemptRow,
    ClaimedRow,
    CompletedRow,
    NewTaskRow,
    TaskRow,
    TaskUpdate,
    WorkerRow,
    WorkerUpdate,
    born_fields,
)

_TASKS = "SELECT " + ", ".join(TASK_COLUMNS) + " FROM tasks"
_new_values = operator.itemgetter(*NEW_TASK_COLS)  # a new task's INSERT arguments, in C
_KEYED = "keyed insert"  # PgTx._written_by's name for a row in PgTx._keyed
_ID_AT, _TENANT_AT, _KEY_AT = (NEW_TASK_COLS.index(c) for c in ("id", "tenant", "idempotency_key"))
_ATTEMPTS = "SELECT " + ", ".join(ATTEMPT_COLUMNS) + " FROM attempts"
_WORKERS = "SELECT " + ", ".join(WORKER_COLUMNS) + " FROM workers"
_INSERT_TASK = (
    INSERT_TASK_PLAIN + " ON CONFLICT (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL "
    "DO NOTHING RETURNING seq"
)
_UPSERT_WORKER = (
    f"INSERT INTO workers ({', '.join(WORKER_COLUMNS)}) "
    f"VALUES ({', '.join(f'${i + 1}' for i in range(len(WORKER_COLUMNS)))}) "
    "ON CONFLICT (tenant, worker_id) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in WORKER_COLUMNS[1:] if c != "tenant")
)


# One statement completes the tasks (P-DONE-1): atomic by itself, so a completion that
# reads nothing else needs no BEGIN/COMMIT round trips. The completed row is the record of
# the attempt that completed it (transitions.completed_attempt): no attempt row is written.
#
# The items are a MATERIALIZED CTE that carries the status to match as a column (`live`).
# The UPDATE joins on id (the primary key), and `t.status = c.live` is a join condition
# rather than a constant that implies the predicate of the partial index
# tasks_running_queue: every index the planner can use for `t` is then a point lookup. With `t.status = 'running'` it could (and, with a
# row estimate of 1 from statistics taken while few tasks ran, did) scan every running task
# of the tenant and re-scan the items for each (23 ms per batch of 100 under auto_explain at
# 300-400 running tasks), a cost that grows with running tasks x batch size.
# The items drive the join, one primary-key probe each. A `t.id = ANY($1)` beside it (kept
# until the pools planned generically with seq scans off, PgStorage._pooled) made the
# planner fetch the rows by that list and compare every row with every item: 9,900 join
# filter rows per batch of 100, 4.6 ms against 2.3 (bench/results/2026-11-27-pg-planning.md).
def _complete_sql(also: str = "") -> str:
    return (
        "WITH c AS MATERIALIZED (SELECT u.id, u.lease_id, u.output, 'running'::text AS live "
        "FROM unnest($1::text[], $2::text[], $3::text[]) AS u(id, lease_id, output)) "
        "UPDATE tasks AS t SET status = 'completed', output = c.output::json, "
        "finished_at = $4, updated_at = $4 FROM c "
        "WHERE t.id = c.id AND t.lease_id = c.lease_id "
        f"AND t.status = c.live AND t.tenant = $5 {also}"
        "RETURNING "
        + ", ".join(f"t.{col}" for col in COMPLETED_COLUMNS)
        + ", t.context->>'instance_id' AS instance_id"  # P-WF-5: advance inline
    )


_COMPLETE_RUNNING = _complete_sql()
# P-WF-5: a batch completion that comes first in its unit sends the rows with nothing to
# advance (no `context.instance_id`) as one statement, atomic by itself (one round trip);
# the steps of instances, left out of it, are completed by _COMPLETE_RUNNING in the
# transaction that advances their instances, so result and advance commit together.
_COMPLETE_ALONE = _complete_sql("AND (t.context->>'instance_id') IS NULL ")
_EXPIRE_OVERDUE = (
    "WITH expired AS (UPDATE tasks SET status = 'expired', finished_at = $1, updated_at = $1 "
    "WHERE id IN (SELECT id FROM tasks WHERE good_until IS NOT NULL "
    "AND status IN ('pending', 'scheduled', 'held') AND good_until <= $1 "
    "FOR UPDATE SKIP LOCKED) RETURNING tenant, concurrency_key, rate_limit_key, id, context), "
    f"ended AS ({expiry_events('expired')}) "
    "SELECT tenant, concurrency_key, rate_limit_key FROM expired"
)


def _attempt(record: asyncpg.Record | None) -> AttemptRow | None:
    return None if record is None else cast(AttemptRow, dict(record))


def _sets(fields: TaskUpdate | WorkerUpdate, first: int) -> str:
    return ", ".join(f"{k} = ${i}" for i, k in enumerate(fields, start=first))


class PgTx:
    """One transaction; JSON columns go through the connection's orjson codec."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.c = conn
        self._tx: Any = None  # the asyncpg Transaction, once BEGIN was sent
        self._locked: dict[str, TaskRow | None] = {}  # task id -> row as this tx left it
        self._writes: dict[
            str, list[tuple[Any, ...]]
        ] = {}  # statement -> argument tuples, in order
        self._written_by: dict[tuple[Any, ...], str] = {}  # row key -> statement that wrote it
        # Keyed inserts a caller lets wait (insert_task's `adopt`), sent first at the flush.
        self._keyed: list[tuple[tuple[Any, ...], Callable[[TaskRow], None]]] = []
        self.touched: set[tuple[str, str]] = set()
        self.touched_rate: set[tuple[str, str]] = set()

    async def _write(self, key: tuple[Any, ...], sql: str, args: tuple[Any, ...]) -> None:
        if self._written_by.get(key, sql) != sql:
            await self.flush()  # the same row written by another statement: keep the order
        self._written_by[key] = sql
        self._writes.setdefault(sql, []).append(args)

    @cached_property
    def workflows(self) -> PostgresWorkflows:
        return PostgresWorkflows(self.ready, self._write)

    async def ready(self) -> asyncpg.Connection:
        """The connection, once BEGIN and this transaction's buffered writes were sent."""
        await self.flush()
        return self.c

    async def begin(self) -> None:
        if self._tx is None:
            self._tx = self.c.transaction()
            await self._tx.start()

    async def commit(self) -> None:
        if self._tx is None and len(self._writes) + (1 if self._keyed else 0) <= 1:
            await self._send_writes()  # nothing read: the writes alone, atomic by themselves
            return
        await self.flush()
        await self._tx.commit()

    async def rollback(self) -> None:
        if self._tx is not None and not self.c.is_closed():
            await self._tx.rollback()

    async def flush(self) -> None:
        """Send buffered writes (before any read, and at commit), inside the transaction."""
        await self.begin()
        await self._send_writes()

    async def _send_writes(self) -> None:
        writes, self._writes, self._written_by = self._writes, {}, {}
        if self._keyed:  # after the new tasks (one may hold a key), before the instance
            plain = writes.pop(INSERT_TASK_PLAIN, None)  # updates an adopted row changes
            if plain is not None:
                await self._send(INSERT_TASK_PLAIN, plain)
            await self._send_keyed()
        for sql, rows in writes.items():
            await self._send(sql, rows)

    async def _send(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        bulk = BULK.get(sql) if len(rows) > 1 else None
        if bulk is not None and len({tuple(r[k] for k in bulk[2]) for r in rows}) == len(rows):
            await self.c.execute(bulk[0], *bulk[1](rows))
        elif len(rows) == 1:
            await self.c.execute(sql, *rows[0])
        else:
            await self.c.executemany(sql, rows)

    async def insert_task(
        self,
        row: NewTaskRow,
        new_key: bool = False,
        adopt: Callable[[TaskRow], None] | None = None,
    ) -> tuple[NewTaskRow, bool]:
        out = await self._insert_task(row, new_key, adopt)
        born = born_fields(row)
        if born is not None:  # by id: a row not stored (its key was known) is not touched
            await self.update_task(row["id"], cast(TaskUpdate, born))
        return out

    async def _insert_task(
        self, row: NewTaskRow, new_key: bool, adopt: Callable[[TaskRow], None] | None
    ) -> tuple[NewTaskRow, bool]:
        values: tuple[Any, ...] = _new_values(row)
        if row["idempotency_key"] is None or new_key:
            # No conflict is possible: buffer it. Its seq is known after commit only,
            # and nothing needs it before (the list cursor reads seq from the table).
            await self._write(("t", row["id"]), INSERT_TASK_PLAIN, values)
            return row, True
        if adopt is not None:  # sent at the next flush, with the other waiting ones
            if self._written_by.get(("t", row["id"]), _KEYED) != _KEYED:
                await self.flush()
            self._written_by[("t", row["id"])] = _KEYED
            self._keyed.append((values, adopt))
            return row, True
        # Only a task insert still buffered can hold the key: send those first. Other
        # buffered writes (instance updates of a workflow advance, attempts) stay buffered,
        # so an advance of many instances keeps its one bulk update (postgres_bulk.py)
        # instead of sending each instance's update ahead of the next step's insert. They
        # touch other rows, already locked, so sending this insert before them is safe.
        if INSERT_TASK_PLAIN in self._writes:
            await self.flush()
        else:
            await self.begin()
        if await self.c.fetchval(_INSERT_TASK, *values) is not None:
            return row, True
        # P-TASK-3: the key exists (ON CONFLICT waited for its writer to commit). Read
        # it with this transaction's buffered writes applied.
        await self.flush()
        existing = await self.c.fetchrow(  # P-TEN-3: idempotency keys are per tenant
            _TASKS + " WHERE tenant = $1 AND idempotency_key = $2",
            row["tenant"],
            row["idempotency_key"],
        )
        return cast(TaskRow, dict(existing)), False

    async def _send_keyed(self) -> None:
        """The waiting keyed inserts as one statement; each row whose key was stored
        already (P-TASK-3, P-TEN-3: per tenant) goes to its caller's `adopt`."""
        keyed, self._keyed = self._keyed, []
        rows = [values for values, _ in keyed]
        stored = {r[0] for r in await self.c.fetch(INSERT_TASKS_IF_NEW, *new_task_records(rows))}
        for values, adopt in keyed:
            if values[_ID_AT] not in stored:
                existing = await self.c.fetchrow(
                    _TASKS + " WHERE tenant = $1 AND idempotency_key = $2",
                    values[_TENANT_AT],
                    values[_KEY_AT],
                )
                adopt(cast(TaskRow, dict(existing)))

    async def get_task(self, task_id: str) -> TaskRow | None:
        if task_id not in self._locked:
            await self.tasks_by_ids([task_id])
        row = self._locked[task_id]
        return None if row is None else row.copy()

    async def tasks_by_ids(self, task_ids: list[str]) -> list[TaskRow]:
        """Lock the rows (in id order, so concurrent batches cannot deadlock)."""
        missing = sorted({t for t in task_ids if t not in self._locked})
        if missing:
            await self.flush()
            rows = await self.c.fetch(
                _TASKS + " WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE", missing
            )
            self._locked.update(dict.fromkeys(missing))
            self._locked.update(cast("dict[str, TaskRow]", {r["id"]: dict(r) for r in rows}))
        found = (self._locked[t] for t in dict.fromkeys(task_ids))
        return [row.copy() for row in found if row is not None]

    async def update_task(self, task_id: str, fields: TaskUpdate) -> None:
        row = self._locked.get(task_id)
        if row is not None:
            row.update(fields)  # type: ignore[typeddict-item]  # TaskUpdate keys are TaskRow's
        sql = f"UPDATE tasks SET {_sets(fields, 2)} WHERE id = $1"
        await self._write(("t", task_id), sql, (task_id, *fields.values()))

    async def insert_attempt(self, row: AttemptRow) -> None:
        key = ("a", row["task_id"], row["lease_id"])
        await self._write(key, UPSERT_ATTEMPT, tuple(row.get(c) for c in ATTEMPT_COLUMNS))

    async def complete_running(
        self, tenant: str, items: list[tuple[str, str, Any]], now: int
    ) -> list[CompletedRow]:
        if not items:
            return []
        self._locked.clear()  # rows written below bypass update_task
        items = sorted(items)  # rows locked in id order, like tasks_by_ids: no deadlock
        done: list[CompletedRow] = []
        if self._tx is None and not self._writes and not self._keyed:
            # First in its unit: what has nothing to advance commits alone (autocommit).
            done = await self._complete(_COMPLETE_ALONE, tenant, items, now)
            if len(done) == len(items):
                return done
            alone = {r["id"] for r in done}
            items = [item for item in items if item[0] not in alone]
        await self.flush()  # BEGIN: the steps advance in this transaction (P-WF-5)
        return done + await self._complete(_COMPLETE_RUNNING, tenant, items, now)

    async def _complete(
        self, sql: str, tenant: str, items: list[tuple[str, str, Any]], now: int
    ) -> list[CompletedRow]:
        rows = await self.c.fetch(
            sql,
            [i for i, _, _ in items],
            [lease for _, lease, _ in items],
            [None if out is None else orjson.dumps(out).decode() for _, _, out in items],
            now,
            tenant,
        )
        return cast("list[CompletedRow]", [dict(r) for r in rows])

    async def get_attempt(self, task_id: str, lease_id: str) -> AttemptRow | None:
        await self.flush()
        return _attempt(
            await self.c.fetchrow(
                _ATTEMPTS + " WHERE task_id = $1 AND lease_id = $2", task_id, lease_id
            )
        )

    async def latest_attempt(self, task_id: str) -> AttemptRow | None:
        await self.flush()
        return _attempt(
            await self.c.fetchrow(
                _ATTEMPTS + " WHERE task_id = $1 ORDER BY ended_at DESC, attempt DESC LIMIT 1",
                task_id,
            )
        )

    async def claim(self, params: ClaimParams) -> tuple[list[ClaimedRow], int]:
        await self.flush()
        self._locked.clear()  # rows written below bypass update_task
        # P-LEASE-8: a claim need not wait for its WAL flush (see claim_rows).
        await self.c.execute("SET LOCAL synchronous_commit = off")
        claim = capped_claim_rows if params.capped else claim_rows  # a savepoint inside this tx
        return await claim(self.c, params)

    async def promote_due(self, now: int) -> list[tuple[str, str, str]]:
        await self.flush()
        self._locked.clear()
        # P-KEY-3, P-RATE-3: a keyed task that falls due queues for a slot or a token
        rows = await self.c.fetch(
            "UPDATE tasks SET status = CASE WHEN concurrency_key IS NULL "
            "AND rate_limit_key IS NULL THEN 'pending' ELSE 'held' END, updated_at = $1 "
            "WHERE id IN (SELECT id FROM tasks WHERE status = 'scheduled' AND run_at <= $1 "
            "FOR UPDATE SKIP LOCKED) "
            "RETURNING tenant, queue_name, handler_name, concurrency_key, rate_limit_key",
            now,
        )
        self.touched.update((r[0], r[3]) for r in rows if r[3] is not None)
        self.touched_rate.update((r[0], r[4]) for r in rows if r[4] is not None)
        due = await self.c.fetch(  # P-RATE-3: rate limits whose next token came
            "UPDATE rate_limits SET next_at = NULL WHERE (tenant, key) IN (SELECT tenant, key "
            "FROM rate_limits WHERE next_at <= $1 FOR UPDATE SKIP LOCKED) RETURNING tenant, key",
            now,
        )
        self.touched_rate.update((r[0], r[1]) for r in due)
        return sorted({(r[0], r[1], r[2]) for r in rows if r[3] is None and r[4] is None})

    async def expire_overdue(self, now: int) -> int:
        await self.flush()
        self._locked.clear()
        rows = await self.c.fetch(_EXPIRE_OVERDUE, now)
        self.touched.update((r[0], r[1]) for r in rows if r[1] is not None)  # P-KEY-3
        self.touched_rate.update((r[0], r[2]) for r in rows if r[2] is not None)  # P-RATE-2
        return len(rows)

    async def admit(self, keys: set[tuple[str, str]], now: int) -> list[tuple[str, str, str]]:
        seated = []
        new = self._writes.get(INSERT_TASK_PLAIN)
        if new:  # new keyed tasks with a free slot are inserted pending (one row version)
            await self.begin()  # the keys' locks last until this transaction ends
            seated = await postgres_keys.seat(self.c, new)
        await self.flush()
        self._locked.clear()  # rows written below bypass update_task
        return seated + await postgres_keys.admit(self.c, keys | self.touched, now)

    async def stranded_keys(self, limit: int) -> list[tuple[str, str]]:
        await self.flush()
        return await postgres_keys.stranded(self.c, limit)

    async def paced_keys(self, limit: int) -> list[tuple[str, str]]:
        await self.flush()
        return [(r[0], r[1]) for r in await self.c.fetch(postgres_keys.PACED, limit)]

    async def admit_rate(self, keys: set[tuple[str, str]], now: int) -> Admitted:
        await self.flush()  # BEGIN: the limits' row locks last until this transaction ends
        self._locked.clear()  # rows written below bypass update_task
        return await postgres_keys.admit_rate(self.c, keys | self.touched_rate, now)

    async def set_rate_limit(
        self, tenant: str, key: str, limit: int, period_ms: int, burst: int, now: int
    ) -> None:
        await self.flush()
        await self.c.execute(  # P-RATE-4: a new limit starts full; a changed one keeps tokens
            "INSERT INTO rate_limits (tenant, key, lim, period_ms, burst, tokens, refilled_at, "
            "next_at, updated_at) VALUES ($1, $2, $3, $4, $5::integer, $5::float8, $6, NULL, $6) "
            "ON CONFLICT (tenant, key) DO UPDATE SET lim = $3, period_ms = $4, burst = $5::integer, "
            "tokens = least(rate_limits.tokens, $5::float8), updated_at = $6",
            tenant, key, limit, period_ms, burst, now,
        )  # fmt: skip
        self.touched_rate.add((tenant, key))

    async def delete_rate_limit(self, tenant: str, key: str) -> bool:
        await self.flush()
        status: str = await self.c.execute(
            "DELETE FROM rate_limits WHERE tenant = $1 AND key = $2", tenant, key
        )
        self.touched_rate.add((tenant, key))  # P-RATE-4: its held tasks go at once
        return status == "DELETE 1"

    async def expired_leases(self, now: int, limit: int) -> list[TaskRow]:
        # lease_expires_at is not indexed (schema 12: heartbeats stay HOT); the running
        # rows come from the partial tasks_running_queue and are sorted here
        await self.flush()
        rows = await self.c.fetch(
            _TASKS + " WHERE status = 'running' AND lease_expires_at <= $1 "
            "ORDER BY lease_expires_at LIMIT $2 FOR UPDATE SKIP LOCKED",
            now,
            limit,
        )
        return cast("list[TaskRow]", [dict(r) for r in rows])

    async def running_tasks_of(self, tenant: str, worker_id: str) -> list[TaskRow]:
        await self.flush()
        rows = await self.c.fetch(
            _TASKS + " WHERE tenant = $2 AND worker_id = $1 AND status = 'running' "
            "ORDER BY id FOR UPDATE",
            worker_id,
            tenant,
        )
        return cast("list[TaskRow]", [dict(r) for r in rows])

    async def get_worker(self, tenant: str, worker_id: str) -> WorkerRow | None:
        await self.flush()
        record = await self.c.fetchrow(
            _WORKERS + " WHERE tenant = $2 AND worker_id = $1 FOR UPDATE", worker_id, tenant
        )
        return None if record is None else cast(WorkerRow, dict(record))

    async def upsert_worker(self, row: WorkerRow) -> None:
        await self.flush()
        await self.c.execute(_UPSERT_WORKER, *[row.get(c) for c in WORKER_COLUMNS])

    async def update_worker(self, tenant: str, worker_id: str, fields: WorkerUpdate) -> None:
        sql = f"UPDATE workers SET {_sets(fields, 3)} WHERE worker_id = $1 AND tenant = $2"
        await self._write(("w", tenant, worker_id), sql, (worker_id, tenant, *fields.values()))

    async def delete_worker(self, tenant: str, worker_id: str) -> None:
        await self.flush()
        await self.c.execute(
            "DELETE FROM workers WHERE worker_id = $1 AND tenant = $2", worker_id, tenant
        )

    async def silent_workers(self, before: int) -> list[WorkerRow]:
        await self.flush()
        rows = await self.c.fetch(
            _WORKERS + " WHERE state IN ('running', 'quiet', 'terminating') "
            "AND last_heartbeat_at < $1 ORDER BY worker_id FOR UPDATE SKIP LOCKED",
            before,
        )
        return cast("list[WorkerRow]", [dict(r) for r in rows])
