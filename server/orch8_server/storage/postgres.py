"""PostgreSQL backend: asyncpg with one connection pool per replica, for scale-out.

Several stateless replicas share one database. Transactions are short (one pooled
connection, a few prepared statements, no network calls inside). Claims are one
FOR UPDATE SKIP LOCKED statement per poll (postgres_tx.py); wake-ups cross replicas by
LISTEN/NOTIFY (postgres_listen.py); the schema is migrated at start-up under an advisory
lock (postgres_schema.py).

asyncpg rather than psycopg 3 (async, pooled): on the claim+complete loop with 300,000
finished rows kept (tests/bench_pg_driver.py) it was 1.1-1.3x faster in every run for
one-task claims, where driver overhead shows; for batches of 50, where commits dominate,
runs ranged from 0.86x to 1.7x (four runs, fsync on and off, on a loaded 2-core machine).

A lost or refused connection surfaces as StorageUnavailable (HTTP 503 with Retry-After);
stale pooled connections are then expired, so the server recovers by itself when the
database is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

import asyncpg
import orjson

from orch8_server.storage import postgres_controls as pc
from orch8_server.storage import postgres_history, postgres_keys
from orch8_server.storage.base import (
    ClaimParams,
    StorageUnavailable,
    TaskFilter,
    split_wake_key,
    wake_key,
)
from orch8_server.storage.postgres_claim import capped_claim_rows, claim_rows
from orch8_server.storage.postgres_listen import WakeListener
from orch8_server.storage.postgres_schema import migrate, require_current
from orch8_server.storage.postgres_tx import _ATTEMPTS, _TASKS, _WORKERS, PgTx
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
    TenantRow,
    WorkerRow,
)

# A list reads each stored status through its own partial index (postgres_history's
# STATUS_INDEXES, schema 14), newest first, and merges them by seq; running rows are few
# (the workers' concurrency) and sorted. No index covers every row: an entry that every
# row version writes (claims and completions are not HOT) costs each task more than it
# saves a list.
_STORED_STATUSES = tuple(s for group in postgres_history.STATUS_INDEXES for s in group)

# The rows queue_stats counts, each status group read through its partial index (one
# status IN list over all of them matched none, so it scanned every task ever stored).
_QUEUE_STATS_ROWS = " UNION ALL ".join(
    "SELECT queue_name, handler_name, status, run_at FROM tasks "
    f"WHERE status IN ({', '.join(map(repr, group))}) AND tenant = $2 "
    "AND ($1::text IS NULL OR queue_name = $1)"
    for group in (("pending", "held", "scheduled"), ("running",), ("failed",))
)

log = logging.getLogger("orch8.storage.postgres")

# Failures that mean "the database is not reachable right now", not a bug: the request
# gets 503 and may be retried. Deadlocks and serialisation failures are transient too.
_TRANSIENT = (
    OSError,
    TimeoutError,
    asyncio.TimeoutError,  # a distinct class before Python 3.11
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.OperatorInterventionError,
    asyncpg.InsufficientResourcesError,
    asyncpg.TransactionRollbackError,
    # A connection left mid-protocol by a dropped socket ("another operation is in
    # progress"): the connection is discarded below.
    asyncpg.exceptions._base.InternalClientError,
)
_LOST = (
    OSError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.OperatorInterventionError,
    asyncpg.exceptions._base.InternalClientError,
)


async def _init_connection(conn: asyncpg.Connection) -> None:
    for kind in ("json", "jsonb"):
        await conn.set_type_codec(
            kind,
            schema="pg_catalog",
            encoder=lambda v: orjson.dumps(v).decode(),
            decoder=orjson.loads,
        )


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Pool release hook: nothing to reset. The default reset (pg_advisory_unlock_all,
    CLOSE ALL, UNLISTEN *, RESET ALL) is a round trip per release, and these connections
    change no session state (SET LOCAL only; LISTEN and advisory locks live on their own
    connections). asyncpg still rolls back a transaction left open before calling this."""


class PgStorage:
    kind: Literal["sqlite", "postgresql"] = "postgresql"
    multi_replica = True

    def __init__(
        self,
        url: str,
        pool_size: int = 10,
        acquire_timeout_ms: int = 5000,
        statement_timeout_ms: int = 30000,
        notify_fallback_ms: int = 500,
        migrate: bool = True,
    ) -> None:
        self.url = url
        self.migrate = migrate  # False: --no-migrate (schema.py)
        self.notify_fallback_ms = notify_fallback_ms  # P-OBS-6
        self.pool_size = pool_size
        self.acquire_timeout = acquire_timeout_ms / 1000
        self.statement_timeout_ms = statement_timeout_ms
        # Names this replica's writes in NOTIFY payloads (postgres_schema.py).
        self.replica = uuid.uuid4().hex
        self._pool: asyncpg.Pool | None = None
        self._claims_pool: asyncpg.Pool | None = None
        self._listener: WakeListener | None = None
        self._wake: Callable[[str, str], None] | None = None
        self._wake_all: Callable[[], None] | None = None

    def _settings(self, app: str = "orch8-server") -> dict[str, str]:
        return {
            "orch8.replica": self.replica,
            "application_name": app,
            "statement_timeout": str(self.statement_timeout_ms),
            "idle_in_transaction_session_timeout": str(self.statement_timeout_ms),
        }

    def _pooled(self, app: str) -> dict[str, str]:
        """The pools' sessions: each statement planned once per connection, never as a
        scan of every task. With plan_cache_mode auto, PostgreSQL kept re-planning the
        claim on every call (its generic plan's unnest() estimate looks dearer than a
        custom plan) and the completion on most: 1.6 and 0.3 ms of planning per task at
        batch 1. A generic plan is made once, though, and one made on a young table (or
        an early custom plan) may scan the table, a cost that then grows with every task
        stored: enable_seqscan off keeps those plans on the indexes every hot statement
        is written for (a table with no usable index is still scanned). Migrations run
        on their own connection, without either."""
        return {
            **self._settings(app),
            "plan_cache_mode": "force_generic_plan",
            "enable_seqscan": "off",
        }

    @property
    def pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise RuntimeError("storage is not open")
        return self._pool

    def set_waker(self, wake: Callable[[str, str], None], wake_all: Callable[[], None]) -> None:
        self._wake, self._wake_all = wake, wake_all

    async def open(self) -> None:
        conn = await asyncpg.connect(self.url, server_settings=self._settings())
        applied = 0
        try:
            if self.migrate:
                applied = await migrate(conn)
            else:
                await require_current(conn)
        finally:
            await conn.close()
        if applied:
            log.info("schema migrated", extra={"applied": applied})
        self._pool = await asyncpg.create_pool(
            self.url,
            min_size=min(2, self.pool_size),
            max_size=self.pool_size,
            init=_init_connection,
            reset=_keep_session,
            server_settings=self._pooled("orch8-server"),
            max_inactive_connection_lifetime=300,
            # Client-side bounds too: a database host that vanishes (no RST) must turn
            # into a 503, not a request hanging until TCP gives up.
            timeout=self.acquire_timeout,
            command_timeout=self.statement_timeout_ms / 1000 + 5,
        )
        # Claims only (P-LEASE-8: a claim need not wait for its WAL flush); short
        # single statements, so half the main pool is plenty.
        self._claims_pool = await asyncpg.create_pool(
            self.url,
            min_size=1,
            max_size=max(2, self.pool_size // 2),
            init=_init_connection,
            reset=_keep_session,
            server_settings={**self._pooled("orch8-claims"), "synchronous_commit": "off"},
            max_inactive_connection_lifetime=300,
            timeout=self.acquire_timeout,
            command_timeout=self.statement_timeout_ms / 1000 + 5,
        )
        if self._wake is not None and self._wake_all is not None:
            self._listener = WakeListener(
                lambda: asyncpg.connect(self.url, server_settings=self._settings("orch8-listen")),
                self.replica,
                self._wake,
                self._wake_all,
                fallback_ms=self.notify_fallback_ms,
            )
            self._listener.start()

    async def close(self) -> None:
        if self._listener is not None:
            await self._listener.stop()
            self._listener = None
        for name in ("_pool", "_claims_pool"):
            pool = getattr(self, name)
            if pool is None:
                continue
            setattr(self, name, None)
            try:
                await asyncio.wait_for(pool.close(), timeout=5)
            except _TRANSIENT:
                pool.terminate()

    @property
    def _claims(self) -> asyncpg.Pool:
        if self._claims_pool is None:
            raise RuntimeError("storage is not open")
        return self._claims_pool

    async def _unavailable(self, exc: BaseException) -> StorageUnavailable:
        if isinstance(exc, _LOST):
            # Every pooled connection may be dead (database restart): replace them all on
            # next use instead of failing one request per stale connection. (A coroutine
            # in asyncpg 0.32: called without await, it never ran.)
            for pool in (self._pool, self._claims_pool):
                if pool is not None:
                    await pool.expire_connections()
        log.warning("database unavailable: %s: %s", type(exc).__name__, exc)
        return StorageUnavailable(f"database unavailable: {type(exc).__name__}")

    @asynccontextmanager
    async def _conn(self, pool: asyncpg.Pool | None = None) -> AsyncIterator[asyncpg.Connection]:
        pool = pool or self.pool
        try:
            conn = await pool.acquire(timeout=self.acquire_timeout)
        except _TRANSIENT as exc:
            raise await self._unavailable(exc) from exc
        try:
            yield conn
        except _TRANSIENT as exc:
            if isinstance(exc, _LOST):
                # Never hand a half-broken connection to the next request (the pool may
                # already have detached it, hence the suppress).
                with contextlib.suppress(asyncpg.InterfaceError):
                    conn.terminate()
            raise await self._unavailable(exc) from exc
        finally:
            with contextlib.suppress(*_TRANSIENT):
                await pool.release(conn)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[PgTx]:
        async with self._conn() as conn:
            tx = PgTx(conn)  # BEGIN is sent lazily (postgres_tx.py)
            try:
                yield tx
                await tx.commit()
            except BaseException:
                with contextlib.suppress(*_TRANSIENT):
                    await tx.rollback()
                raise

    async def claim(self, params: ClaimParams) -> tuple[list[ClaimedRow], int]:
        """A claim in autocommit on a connection with synchronous_commit off (P-LEASE-8):
        one round trip, where BEGIN, SET LOCAL, the claim and COMMIT took four. A capped
        claim is a transaction of its own there (postgres_claim.py)."""
        claim = capped_claim_rows if params.capped else claim_rows
        async with self._conn(self._claims) as conn:
            return await claim(conn, params)

    # Queue controls and label routing (postgres_controls.py) ----------------------------

    async def set_queue_control(
        self, tenant: str, queue_name: str, fields: QueueControlUpdate, now: int
    ) -> QueueControlRow:
        async with self._conn() as conn:
            return await pc.set_queue_control(conn, self.replica, tenant, queue_name, fields, now)

    async def set_handler_control(
        self, tenant: str, handler_name: str, max_running: int | None, now: int
    ) -> HandlerControlRow:
        async with self._conn() as conn:
            return await pc.set_handler_control(
                conn, self.replica, tenant, handler_name, max_running, now
            )

    async def controls(self) -> tuple[list[QueueControlRow], list[HandlerControlRow]]:
        async with self._conn() as conn:
            return await pc.controls(conn)

    async def running_counts(self) -> list[tuple[str, str, str, int]]:
        async with self._conn() as conn:
            return await pc.running_counts(conn)

    async def pending_label_sets(
        self, tenant: str, queue_name: str | None
    ) -> list[tuple[str, str, dict[str, str], int]]:
        async with self._conn() as conn:
            return await pc.pending_label_sets(conn, tenant, queue_name)

    async def live_worker_labels(self, tenant: str) -> list[dict[str, str]]:
        async with self._conn() as conn:
            return await pc.live_worker_labels(conn, tenant)

    async def announce(self, queue_name: str, handler_name: str) -> None:
        async with self._conn() as conn:
            await pc.notify(conn, self.replica, queue_name, handler_name)

    async def _fetch(self, sql: str, *args: Any) -> list[Any]:
        """The rows as dicts (each method names their row type)."""
        async with self._conn() as conn:
            return [dict(r) for r in await conn.fetch(sql, *args)]

    async def _fetchrow(self, sql: str, *args: Any) -> Any:
        rows = await self._fetch(sql, *args)
        return rows[0] if rows else None

    async def ping(self) -> None:
        async with self._conn() as conn:
            await conn.fetchval("SELECT 1", timeout=self.acquire_timeout)

    async def get_task(self, task_id: str) -> TaskRow | None:
        row: TaskRow | None = await self._fetchrow(_TASKS + " WHERE id = $1", task_id)
        return row

    async def list_tasks(
        self, flt: TaskFilter, limit: int, before_seq: int | None
    ) -> list[TaskRow]:
        where: list[str] = []
        args: list[Any] = []

        def arg(value: Any) -> str:
            args.append(value)
            return f"${len(args)}"

        where.append(f"tenant = {arg(flt.tenant)}")  # P-TEN-3
        for col in ("handler_name", "queue_name", "worker_id"):
            if getattr(flt, col) is not None:
                where.append(f"{col} = {arg(getattr(flt, col))}")
        if flt.created_after is not None:
            where.append(f"created_at > {arg(flt.created_after)}")
        if flt.created_before is not None:
            where.append(f"created_at < {arg(flt.created_before)}")
        if flt.instance_id is not None:
            where.append(f"context->>'instance_id' = {arg(flt.instance_id)}")
        if before_seq is not None:
            where.append(f"seq < {arg(before_seq)}")
        statuses = [s for s in _STORED_STATUSES if not flt.statuses or s in flt.statuses]
        if not statuses:
            return []
        n, common = arg(limit), " AND ".join(where)
        branches = [
            f"{_TASKS} WHERE status = '{status}' AND {common} ORDER BY seq DESC LIMIT {n}"
            for status in statuses
        ]
        sql = branches[0]
        if len(branches) > 1:
            sql = " UNION ALL ".join(f"({b})" for b in branches) + f" ORDER BY seq DESC LIMIT {n}"
        rows: list[TaskRow] = await self._fetch(sql, *args)
        return rows

    async def list_attempts(self, task_id: str) -> list[AttemptRow]:
        rows: list[AttemptRow] = await self._fetch(
            _ATTEMPTS + " WHERE task_id = $1 ORDER BY started_at, attempt", task_id
        )
        return rows

    async def queue_stats(self, tenant: str, queue_name: str | None) -> list[QueueStatsRow]:
        rows: list[QueueStatsRow] = await self._fetch(
            "SELECT queue_name, handler_name, "
            "count(*) FILTER (WHERE status IN ('pending', 'held')) AS pending, "  # P-KEY-6
            "count(*) FILTER (WHERE status = 'scheduled') AS scheduled, "
            "count(*) FILTER (WHERE status = 'running') AS running, "
            "count(*) FILTER (WHERE status = 'failed') AS failed, "
            "count(*) FILTER (WHERE status = 'held') AS held, "
            "min(run_at) FILTER (WHERE status IN ('pending', 'held')) AS oldest_pending_run_at "
            f"FROM ({_QUEUE_STATS_ROWS}) s GROUP BY queue_name, handler_name",
            queue_name,
            tenant,
        )
        return rows

    async def next_scheduled_at(self) -> int | None:
        row = await self._fetchrow(  # P-RATE-3: a rate limit's next token too
            "SELECT least((SELECT min(run_at) FROM tasks WHERE status = 'scheduled'), "
            "(SELECT min(next_at) FROM rate_limits WHERE next_at IS NOT NULL)) AS at"
        )
        return None if row is None else row["at"]

    async def rate_limits(self, tenant: str, key: str | None = None) -> list[RateLimitRow]:
        rows: list[RateLimitRow] = await self._fetch(
            f"SELECT key, {postgres_keys.RATE_COLUMNS}, (SELECT count(*) FROM tasks t "
            "WHERE t.tenant = r.tenant AND t.rate_limit_key = r.key AND t.status = 'held') "
            "AS held FROM rate_limits r WHERE tenant = $1 AND ($2::text IS NULL OR key = $2) "
            "ORDER BY key",
            tenant,
            key,
        )
        return rows

    async def next_expiry_at(self) -> int | None:
        row = await self._fetchrow(
            "SELECT min(good_until) AS at FROM tasks "
            "WHERE good_until IS NOT NULL AND status IN ('pending', 'scheduled', 'held')"
        )
        return None if row is None else row["at"]

    async def key_slots(self, tenant: str, key: str) -> int:
        row = await self._fetchrow(postgres_keys.SLOTS, tenant, key)
        return 0 if row is None else int(row["count"])

    async def next_event_at(self) -> int | None:
        row = await self._fetchrow("SELECT min(fire_at) AS at FROM instance_events")
        return None if row is None else row["at"]

    async def get_worker(self, tenant: str, worker_id: str) -> WorkerRow | None:
        row: WorkerRow | None = await self._fetchrow(
            _WORKERS + " WHERE tenant = $2 AND worker_id = $1", worker_id, tenant
        )
        return row

    async def list_workers(self, tenant: str | None, state: str | None) -> list[WorkerRow]:
        """One tenant's workers (P-TEN-3), or every tenant's with tenant None (metrics)."""
        rows: list[WorkerRow] = await self._fetch(
            _WORKERS + " WHERE ($1::text IS NULL OR state = $1) "
            "AND ($2::text IS NULL OR tenant = $2) ORDER BY last_heartbeat_at DESC",
            state,
            tenant,
        )
        return rows

    async def active_task_counts(self, tenant: str, worker_ids: list[str]) -> dict[str, int]:
        if not worker_ids:
            return {}
        rows = await self._fetch(
            "SELECT worker_id, count(*) AS n FROM tasks WHERE status = 'running' "
            "AND tenant = $2 AND worker_id = ANY($1::text[]) GROUP BY worker_id",
            worker_ids,
            tenant,
        )
        return {r["worker_id"]: r["n"] for r in rows}

    # Cluster-wide pollers (P-OBS-1) ------------------------------------------------------

    async def share_pollers(
        self, seen: list[tuple[str, str, str, int]], since: int
    ) -> list[tuple[str, str, str, int]]:
        async with self._conn() as conn, conn.transaction():
            if seen:
                # `seen` names queues by wake_key (tenant/queue); stored split.
                await conn.executemany(
                    "INSERT INTO pollers (tenant, queue_name, handler_name, poller, seen_at) "
                    "VALUES ($1, $2, $3, $4, $5) "
                    "ON CONFLICT (tenant, queue_name, handler_name, poller) "
                    "DO UPDATE SET seen_at = greatest(pollers.seen_at, EXCLUDED.seen_at)",
                    sorted((*split_wake_key(k), h, p, t) for k, h, p, t in seen),  # lock order
                )
            await conn.execute("DELETE FROM pollers WHERE seen_at < $1", since)
            rows = await conn.fetch(
                "SELECT tenant, queue_name, handler_name, poller, seen_at FROM pollers "
                "WHERE seen_at >= $1",
                since,
            )
        return [(wake_key(r[0], r[1]), r[2], r[3], r[4]) for r in rows]

    # Queue history (P-OBS-5, postgres_history.py): a pooled connection, off the claims --

    async def pending_counts(self) -> dict[tuple[str, str], int]:
        async with self._conn() as conn:
            return await postgres_history.pending_counts(conn)

    async def queue_depth(self, tenant: str, queue_name: str, limit: int) -> int:
        async with self._conn() as conn:
            return await postgres_history.queue_depth(conn, tenant, queue_name, limit)

    async def add_queue_minutes(
        self,
        counts: list[QueueMinuteCounts],
        minute: int,
        depths: dict[tuple[str, str], int],
        prune_before: int,
    ) -> None:
        async with self._conn() as conn:
            await postgres_history.add_queue_minutes(conn, counts, minute, depths, prune_before)

    async def queue_minutes(self, tenant: str, queue_name: str, since: int) -> list[QueueMinuteRow]:
        async with self._conn() as conn:
            return await postgres_history.queue_minutes(conn, tenant, queue_name, since)

    async def tenant_names(self) -> list[str]:
        async with self._conn() as conn:
            return await postgres_history.tenant_names(conn)

    async def list_tenants(self) -> list[TenantRow]:
        async with self._conn() as conn:
            return await postgres_history.list_tenants(conn)
