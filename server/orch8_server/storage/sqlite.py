"""SQLite backend: stdlib sqlite3, WAL, one connection driven from the event loop.

All statements run on the event-loop thread: a single SQLite writer gains nothing from a
thread pool, and every transaction runs under an asyncio lock, so nothing interleaves
inside one. Committed transactions survive a process crash (WAL, synchronous=NORMAL);
synchronous=FULL also survives power loss.

Group commit: the transactions of one event-loop turn share one SQLite transaction, each
inside its own SAVEPOINT (a failing one rolls back alone), and one COMMIT ends them all.
A transaction() block returns only once that COMMIT is done, so nothing is acknowledged
before it is durable; reads outside a transaction wait for a pending COMMIT, so they see
committed data only. Under load this turns one BEGIN/COMMIT (a WAL append each) per
request into one per loop turn.

Schema and migrations: sqlite_schema.py; one transaction's statements: sqlite_tx.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal, cast, get_args

from orch8_server.storage import sqlite_controls, sqlite_history, sqlite_keys
from orch8_server.storage.base import ClaimParams, TaskFilter
from orch8_server.storage.rows import (
    AttemptRow,
    ClaimedRow,
    HandlerControlRow,
    QueueControlRow,
    QueueControlUpdate,
    QueueMinuteCounts,
    QueueMinuteRow,
    QueueStatsRow,
    RateLimitRow,
    TaskRow,
    TaskStatus,
    TenantRow,
    WorkerRow,
)
from orch8_server.storage.schema import not_ready
from orch8_server.storage.sqlite_checkpoint import Checkpointer
from orch8_server.storage.sqlite_rows import (
    ATTEMPT_SELECT,
    TASK_SELECT,
    WORKER_SELECT,
    attempt,
    task,
    worker,
)
from orch8_server.storage.sqlite_schema import SCHEMA_VERSION, migrate, require_current
from orch8_server.storage.sqlite_tx import SqliteTx

log = logging.getLogger("orch8.storage.sqlite")

_TASK_STATUSES: tuple[str, ...] = get_args(TaskStatus)  # every status a task row can hold


class SqliteStorage:
    kind: Literal["sqlite", "postgresql"] = "sqlite"
    multi_replica = False

    def __init__(self, path: str, synchronous: str = "NORMAL", migrate: bool = True) -> None:
        self.path = path
        self.synchronous = synchronous.upper()
        self.migrate = migrate  # False: --no-migrate (schema.py)
        self._conn: sqlite3.Connection | None = None
        self._lock = asyncio.Lock()
        # The open group transaction's COMMIT: resolved once it is durable.
        self._group: asyncio.Future[None] | None = None
        self._committer: asyncio.Task[None] | None = None
        self._checkpointer: Checkpointer | None = None  # WAL copies off the loop

    @property
    def c(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("storage is not open")
        return self._conn

    def set_waker(self, wake: Any, wake_all: Any) -> None:
        """One process owns the file: every wake-up is already in-process."""

    async def share_pollers(
        self, seen: list[tuple[str, str, str, int]], since: int
    ) -> list[tuple[str, str, str, int]]:
        return []  # one process: the in-memory registry is the whole truth

    async def open(self) -> None:
        if self.migrate:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        else:  # creates no file either
            if not os.path.isfile(self.path):
                raise not_ready(0, SCHEMA_VERSION)
            conn = self._connect_existing()
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        conn.execute("PRAGMA busy_timeout = 5000")
        conn.execute("PRAGMA cache_size = -65536")
        conn.execute("PRAGMA temp_store = MEMORY")
        # The writer's own checkpoint runs inside the COMMIT that crosses the threshold, on
        # the event loop: every 10,000 pages (~40 MB of WAL) instead of SQLite's 1,000. The
        # Checkpointer's thread copies most pages before then (sqlite_checkpoint.py).
        # Durability of each commit depends on neither.
        conn.execute("PRAGMA wal_autocheckpoint = 10000")
        if not self.migrate:
            try:
                require_current(conn, self.path)
            except BaseException:
                conn.close()
                raise
        elif applied := migrate(conn, self.path):
            log.info("schema migrated", extra={"applied": applied})
        self._conn = conn
        if self.path != ":memory:":
            self._checkpointer = Checkpointer(self._connect_existing)

    def _connect_existing(self) -> sqlite3.Connection:
        """A connection to the database file, which must exist (no file is created)."""
        uri = Path(self.path).resolve().as_uri() + "?mode=rw"
        return sqlite3.connect(uri, isolation_level=None, check_same_thread=False, uri=True)

    async def close(self) -> None:
        if self._checkpointer is not None:
            checkpointer, self._checkpointer = self._checkpointer, None
            await asyncio.to_thread(checkpointer.stop)
        if self._conn is not None:
            async with self._lock:
                self._commit_group()
                self._conn.execute("PRAGMA optimize")
                self._conn.close()
                self._conn = None

    async def ping(self) -> None:
        await self._settled()
        self.c.execute("SELECT 1").fetchone()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqliteTx]:
        async with self._lock:
            conn = self.c
            if self._group is None:
                conn.execute("BEGIN IMMEDIATE")
                self._group = asyncio.get_running_loop().create_future()
                # Queued on the lock behind the transactions already waiting: they join
                # this group; later ones start the next.
                self._committer = asyncio.get_running_loop().create_task(self._commit_when_idle())
            group = self._group
            conn.execute("SAVEPOINT tx")
            tx = SqliteTx(conn)
            try:
                yield tx
                tx.flush()
            except BaseException as exc:
                self._roll_back_savepoint(exc)
                raise
            conn.execute("RELEASE tx")
        await asyncio.shield(group)  # acknowledged only once durable

    async def claim(self, params: ClaimParams) -> tuple[list[ClaimedRow], int]:
        async with self.transaction() as tx:
            return await tx.claim(params)

    def _roll_back_savepoint(self, exc: BaseException) -> None:
        conn = self.c
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK TO tx")
                conn.execute("RELEASE tx")
                return
        except sqlite3.Error:
            pass
        # SQLite rolled the whole transaction back (disk full, I/O error): every member
        # of the group lost its writes and must not be acknowledged.
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        self._fail_group(exc)

    def _fail_group(self, exc: BaseException) -> None:
        group, self._group = self._group, None
        if group is not None and not group.done():
            group.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
            group.add_done_callback(lambda f: f.exception())  # retrieved: no warning if unawaited

    async def _commit_when_idle(self) -> None:
        async with self._lock:
            self._commit_group()

    def _commit_group(self) -> None:
        group = self._group
        if group is None:
            return
        try:
            self.c.execute("COMMIT")
        except sqlite3.Error as exc:
            log.error("group commit failed", extra={"cause": repr(exc)})
            with contextlib.suppress(sqlite3.Error):
                self.c.execute("ROLLBACK")
            self._fail_group(exc)
            return
        self._group = None
        group.set_result(None)
        if self._checkpointer is not None:
            self._checkpointer.poke()

    async def _settled(self) -> None:
        """Wait for a pending group COMMIT, so a read sees committed data only."""
        group = self._group
        if group is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(group)

    async def get_task(self, task_id: str) -> TaskRow | None:
        await self._settled()
        raw = self.c.execute(TASK_SELECT + " WHERE id = ?", (task_id,)).fetchone()
        return None if raw is None else task(raw)

    async def list_tasks(
        self, flt: TaskFilter, limit: int, before_seq: int | None
    ) -> list[TaskRow]:
        await self._settled()
        where: list[str] = ["tenant = ?"]  # P-TEN-3
        args: list[Any] = [flt.tenant]
        for col in ("handler_name", "queue_name", "worker_id"):
            if getattr(flt, col) is not None:
                where.append(f"{col} = ?")
                args.append(getattr(flt, col))
        if flt.created_after is not None:
            where.append("created_at > ?")
            args.append(flt.created_after)
        if flt.created_before is not None:
            where.append("created_at < ?")
            args.append(flt.created_before)
        if flt.instance_id is not None:
            where.append("json_extract(context, '$.instance_id') = ?")
            args.append(flt.instance_id)
        if before_seq is not None:
            where.append("seq < ?")
            args.append(before_seq)
        if flt.worker_id is not None:  # tasks_worker_seq holds them in seq order
            if flt.statuses:
                where.append(f"status IN ({','.join('?' * len(flt.statuses))})")
                args += flt.statuses
            sql = TASK_SELECT + " WHERE " + " AND ".join(where) + " ORDER BY seq DESC LIMIT ?"
            return [task(r) for r in self.c.execute(sql, [*args, limit])]
        # One branch per stored status, each an ordered range of tasks_status_seq that stops
        # at the page size, merged: no index holds every status in seq order (schema 11).
        statuses = [s for s in _TASK_STATUSES if not flt.statuses or s in flt.statuses]
        if not statuses:
            return []
        common = " AND ".join(where)
        branch = (
            f"SELECT * FROM ({TASK_SELECT} WHERE status = ? AND {common} ORDER BY seq DESC LIMIT ?)"
        )
        sql = " UNION ALL ".join([branch] * len(statuses)) + " ORDER BY seq DESC LIMIT ?"
        params = [v for status in statuses for v in (status, *args, limit)]
        return [task(r) for r in self.c.execute(sql, [*params, limit])]

    async def list_attempts(self, task_id: str) -> list[AttemptRow]:
        await self._settled()
        return [
            attempt(r)
            for r in self.c.execute(
                ATTEMPT_SELECT + " WHERE task_id = ? ORDER BY started_at, attempt", (task_id,)
            )
        ]

    async def queue_stats(self, tenant: str, queue_name: str | None) -> list[QueueStatsRow]:
        await self._settled()
        q = " AND tenant = ?" + (" AND queue_name = ?" if queue_name is not None else "")
        args = (tenant, queue_name) if queue_name is not None else (tenant,)
        stats: dict[tuple[str, str], dict[str, Any]] = {}

        def slot(queue: str, handler: str) -> dict[str, Any]:
            return stats.setdefault(
                (queue, handler),
                {
                    "queue_name": queue,
                    "handler_name": handler,
                    "pending": 0,
                    "scheduled": 0,
                    "running": 0,
                    "failed": 0,
                    "held": 0,
                    "oldest_pending_run_at": None,
                },
            )

        for queue, handler, n, oldest in self.c.execute(
            "SELECT queue_name, handler_name, COUNT(*), MIN(run_at) FROM tasks "
            "WHERE status = 'pending'" + q + " GROUP BY queue_name, handler_name",
            args,
        ):
            s = slot(queue, handler)
            s["pending"], s["oldest_pending_run_at"] = n, oldest
        for status in ("scheduled", "running", "failed", "held"):
            for queue, handler, n, oldest in self.c.execute(
                "SELECT queue_name, handler_name, COUNT(*), MIN(run_at) FROM tasks "
                "WHERE status = ?" + q + " GROUP BY queue_name, handler_name",
                (status, *args),
            ):
                s = slot(queue, handler)
                s[status] = n
                if status == "held":  # P-KEY-6: a held task is pending on the wire
                    s["pending"] += n
                    first = s["oldest_pending_run_at"]
                    s["oldest_pending_run_at"] = oldest if first is None else min(first, oldest)
        return cast("list[QueueStatsRow]", list(stats.values()))

    async def next_scheduled_at(self) -> int | None:
        await self._settled()
        earliest: int | None = self.c.execute(  # P-RATE-3: a rate limit's next token too
            "SELECT MIN(at) FROM (SELECT MIN(run_at) AS at FROM tasks WHERE status = 'scheduled' "
            "UNION ALL SELECT MIN(next_at) FROM rate_limits WHERE next_at IS NOT NULL)"
        ).fetchone()[0]
        return earliest

    async def rate_limits(self, tenant: str, key: str | None = None) -> list[RateLimitRow]:
        await self._settled()
        sql = (
            f"SELECT key, {sqlite_keys.RATE_COLUMNS}, (SELECT COUNT(*) FROM tasks t "
            "WHERE t.tenant = r.tenant AND t.rate_limit_key = r.key AND t.status = 'held') "
            "FROM rate_limits r WHERE tenant = ?"
        )
        args: tuple[str, ...] = (tenant,)
        if key is not None:
            sql, args = sql + " AND key = ?", (tenant, key)
        cols = ("key", *sqlite_keys.RATE_COLUMNS.split(", "), "held")
        return [
            cast(RateLimitRow, dict(zip(cols, r, strict=True)))
            for r in self.c.execute(sql + " ORDER BY key", args)
        ]

    async def key_slots(self, tenant: str, key: str) -> int:
        await self._settled()
        return sqlite_keys.slots(self.c, tenant, key)

    async def next_expiry_at(self) -> int | None:
        await self._settled()
        earliest: int | None = self.c.execute(
            "SELECT MIN(good_until) FROM tasks "
            "WHERE good_until IS NOT NULL AND status IN ('pending', 'scheduled', 'held')"
        ).fetchone()[0]
        return earliest

    async def next_event_at(self) -> int | None:
        await self._settled()
        earliest: int | None = self.c.execute(
            "SELECT MIN(fire_at) FROM instance_events"
        ).fetchone()[0]
        return earliest

    # Queue controls and label routing (sqlite_controls.py) ------------------------------

    async def set_queue_control(
        self, tenant: str, queue_name: str, fields: QueueControlUpdate, now: int
    ) -> QueueControlRow:
        async with self.transaction():
            return sqlite_controls.set_queue_control(self.c, tenant, queue_name, fields, now)

    async def set_handler_control(
        self, tenant: str, handler_name: str, max_running: int | None, now: int
    ) -> HandlerControlRow:
        async with self.transaction():
            return sqlite_controls.set_handler_control(
                self.c, tenant, handler_name, max_running, now
            )

    async def controls(self) -> tuple[list[QueueControlRow], list[HandlerControlRow]]:
        await self._settled()
        return sqlite_controls.controls(self.c)

    async def running_counts(self) -> list[tuple[str, str, str, int]]:
        await self._settled()
        return sqlite_controls.running_counts(self.c)

    async def pending_label_sets(
        self, tenant: str, queue_name: str | None
    ) -> list[tuple[str, str, dict[str, str], int]]:
        await self._settled()
        return sqlite_controls.pending_label_sets(self.c, tenant, queue_name)

    async def live_worker_labels(self, tenant: str) -> list[dict[str, str]]:
        await self._settled()
        return sqlite_controls.live_worker_labels(self.c, tenant)

    async def announce(self, queue_name: str, handler_name: str) -> None:
        """One process: the engine already woke its own polls."""

    async def get_worker(self, tenant: str, worker_id: str) -> WorkerRow | None:
        await self._settled()
        return await SqliteTx(self.c).get_worker(tenant, worker_id)

    async def list_workers(self, tenant: str | None, state: str | None) -> list[WorkerRow]:
        """One tenant's workers (P-TEN-3), or every tenant's with tenant None (metrics)."""
        await self._settled()
        where, args = [], []
        if tenant is not None:
            where, args = ["tenant = ?"], [tenant]
        if state is not None:
            where.append("state = ?")
            args.append(state)
        sql = WORKER_SELECT + (" WHERE " + " AND ".join(where) if where else "")
        return [worker(r) for r in self.c.execute(sql + " ORDER BY last_heartbeat_at DESC", args)]

    async def active_task_counts(self, tenant: str, worker_ids: list[str]) -> dict[str, int]:
        if not worker_ids:
            return {}
        await self._settled()
        marks = ",".join("?" * len(worker_ids))
        return dict(
            self.c.execute(
                f"SELECT worker_id, COUNT(*) FROM tasks WHERE status = 'running' AND tenant = ? "
                f"AND worker_id IN ({marks}) GROUP BY worker_id",
                [tenant, *worker_ids],
            ).fetchall()
        )

    # Queue history (P-OBS-5, sqlite_history.py) ------------------------------------------

    async def pending_counts(self) -> dict[tuple[str, str], int]:
        await self._settled()
        return sqlite_history.pending_counts(self.c)

    async def queue_depth(self, tenant: str, queue_name: str, limit: int) -> int:
        await self._settled()
        return sqlite_history.queue_depth(self.c, tenant, queue_name, limit)

    async def add_queue_minutes(
        self,
        counts: list[QueueMinuteCounts],
        minute: int,
        depths: dict[tuple[str, str], int],
        prune_before: int,
    ) -> None:
        # Through the writer: its own SAVEPOINT in the current group commit.
        async with self.transaction():
            sqlite_history.add_queue_minutes(self.c, counts, minute, depths, prune_before)

    async def queue_minutes(self, tenant: str, queue_name: str, since: int) -> list[QueueMinuteRow]:
        await self._settled()
        return sqlite_history.queue_minutes(self.c, tenant, queue_name, since)

    async def tenant_names(self) -> list[str]:
        await self._settled()
        return sqlite_history.tenant_names(self.c)

    async def list_tenants(self) -> list[TenantRow]:
        """P-TEN-4: tenants with a task or a worker, with their counts, in tenant order."""
        await self._settled()
        return sqlite_history.list_tenants(self.c)
