"""The physical limit of this machine: a minimal job table (id, status, payload, lease and
the claim index), nothing else, driven by bare SQL (here) and by a minimal HTTP loop
(`minimal_http.py`). "ours / limit" compares the server with what a queue that does
only the essential work can do here, not with the server's own statements.

The work per task is the least a durable queue does: enqueue (one INSERT statement per
batch, committed), claim (one UPDATE ... RETURNING of the oldest pending rows, with
a lease token), complete (one UPDATE per batch that checks the lease, committed). The
durability matches the server's rules: enqueues and completions are committed durably
(SQLite WAL with synchronous=NORMAL like the server; PostgreSQL with fsync on), a claim
need not be (PostgreSQL: synchronous_commit off for claims, as the server does).

Usage: python -m orch8bench.minimal sqlite PATH|postgresql URL --batch B --tasks N
(bare SQL: enqueue, claim, complete a batch at a time; one connection on SQLite, --conns
concurrent loops on PostgreSQL). Prints {"tasks", "seconds", "tasks_per_s", "cpu_s"}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import time
from typing import Any

Claimed = tuple[int, str, str]  # id, payload (JSON text), lease token

SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY,
    status TEXT NOT NULL,
    payload TEXT NOT NULL,
    lease TEXT
);
CREATE INDEX IF NOT EXISTS jobs_claim ON jobs (id) WHERE status = 'pending';
"""
PG_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id bigserial PRIMARY KEY,
    status text NOT NULL DEFAULT 'pending',
    payload text NOT NULL,
    lease text
);
CREATE INDEX IF NOT EXISTS jobs_claim ON jobs (id) WHERE status = 'pending';
"""


def lease_token() -> str:
    return os.urandom(8).hex()


class SqliteJobs:
    """One connection, autocommit off by hand: each call is one transaction."""

    _CLAIM = (
        "UPDATE jobs SET status = 'running', lease = ? WHERE id IN "
        "(SELECT id FROM jobs WHERE status = 'pending' ORDER BY id LIMIT ?) "
        "RETURNING id, payload"
    )
    _COMPLETE = (
        "UPDATE jobs SET status = 'done', lease = NULL "
        "WHERE id = ? AND lease = ? AND status = 'running'"
    )

    _RELEASE = "UPDATE jobs SET status = 'pending', lease = NULL WHERE id = ? AND lease = ?"

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        for pragma in ("journal_mode = WAL", "synchronous = NORMAL", "cache_size = -65536"):
            self.db.execute(f"PRAGMA {pragma}")
        self.db.executescript(SQLITE_SCHEMA)
        self._insert: dict[int, str] = {}

    def enqueue(self, payloads: list[str]) -> list[int]:
        n = len(payloads)
        sql = self._insert.get(n)
        if sql is None:  # one multi-row INSERT per batch size, built once
            values = ", ".join(["('pending', ?)"] * n)
            sql = self._insert[n] = (
                f"INSERT INTO jobs (status, payload) VALUES {values} RETURNING id"
            )
        self.db.execute("BEGIN IMMEDIATE")
        ids = [r[0] for r in self.db.execute(sql, payloads)]
        self.db.execute("COMMIT")
        return ids

    def claim(self, n: int) -> list[Claimed]:
        lease = lease_token()
        self.db.execute("BEGIN IMMEDIATE")
        rows = self.db.execute(self._CLAIM, (lease, n)).fetchall()
        self.db.execute("COMMIT")
        return [(i, p, lease) for i, p in rows]

    def complete(self, items: list[tuple[int, str]]) -> int:
        before = self.db.total_changes
        self.db.execute("BEGIN IMMEDIATE")
        self.db.executemany(self._COMPLETE, items)
        self.db.execute("COMMIT")
        return self.db.total_changes - before

    def release(self, claimed: list[Claimed]) -> None:
        """Back to pending (a claim whose client hung up before the answer)."""
        self.db.execute("BEGIN IMMEDIATE")
        self.db.executemany(self._RELEASE, [(i, lease) for i, _, lease in claimed])
        self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()


class PgJobs:
    """asyncpg pools: `durable` for enqueue and complete (autocommit, one statement per
    batch, so no BEGIN/COMMIT round trips), `claims` with synchronous_commit off."""

    _INSERT = "INSERT INTO jobs (payload) SELECT unnest($1::text[]) RETURNING id"
    _CLAIM = (
        "UPDATE jobs SET status = 'running', lease = $1 WHERE id IN "
        "(SELECT id FROM jobs WHERE status = 'pending' ORDER BY id LIMIT $2 "
        "FOR UPDATE SKIP LOCKED) RETURNING id, payload"
    )
    _COMPLETE = (
        "UPDATE jobs AS j SET status = 'done', lease = NULL "
        "FROM unnest($1::bigint[], $2::text[]) AS c(id, lease) "
        "WHERE j.id = c.id AND j.lease = c.lease AND j.status = 'running'"
    )

    def __init__(self, durable: Any, claims: Any) -> None:
        self.durable, self.claims = durable, claims

    @classmethod
    async def open(cls, url: str, conns: int) -> PgJobs:
        import asyncpg

        setup = await asyncpg.connect(url)
        await setup.execute(PG_SCHEMA)
        await setup.close()
        durable = await asyncpg.create_pool(url, min_size=conns, max_size=conns)
        claims = await asyncpg.create_pool(
            url, min_size=conns, max_size=conns, server_settings={"synchronous_commit": "off"}
        )
        return cls(durable, claims)

    async def enqueue(self, payloads: list[str]) -> list[int]:
        return [r[0] for r in await self.durable.fetch(self._INSERT, payloads)]

    async def claim(self, n: int) -> list[Claimed]:
        lease = lease_token()
        rows = await self.claims.fetch(self._CLAIM, lease, n)
        return [(r[0], r[1], lease) for r in rows]

    async def complete(self, items: list[tuple[int, str]]) -> int:
        status = await self.durable.execute(
            self._COMPLETE, [i for i, _ in items], [lease for _, lease in items]
        )
        return int(status.rsplit(" ", 1)[1])

    async def release(self, claimed: list[Claimed]) -> None:
        """Back to pending (a claim whose client hung up before the answer)."""
        await self.durable.execute(
            "UPDATE jobs SET status = 'pending', lease = NULL WHERE id = ANY($1::bigint[]) "
            "AND lease = $2",
            [i for i, _, _ in claimed],
            claimed[0][2],
        )

    async def close(self) -> None:
        await self.durable.close()
        await self.claims.close()


Measured = tuple[int, float, float]  # tasks completed, seconds, process CPU seconds


def _since(start: tuple[float, float]) -> tuple[float, float]:
    return time.perf_counter() - start[0], time.process_time() - start[1]


def run_sqlite(path: str, batch: int, tasks: int) -> Measured:
    """Enqueue, claim and complete `tasks` a batch at a time, timed once the connection is
    open."""
    jobs = SqliteJobs(path)
    done, start = 0, (time.perf_counter(), time.process_time())
    try:
        while done < tasks:
            jobs.enqueue(["{}"] * min(batch, tasks - done))
            claimed = jobs.claim(batch)
            done += jobs.complete([(i, lease) for i, _, lease in claimed])
        return (done, *_since(start))
    finally:
        jobs.close()


async def run_pg(url: str, batch: int, tasks: int, conns: int) -> Measured:
    """`conns` loops at once (enqueue, claim, complete), timed once the pools are open;
    loops race for rows (SKIP LOCKED), so each keeps claiming after the enqueues are done
    until a claim comes back empty."""
    jobs = await PgJobs.open(url, conns)
    left, done = [tasks], [0]

    async def loop() -> None:
        while True:
            n = min(batch, left[0])
            left[0] -= n
            if n:
                await jobs.enqueue(["{}"] * n)
            claimed = await jobs.claim(batch)
            if claimed:
                # Not `done[0] += await ...`: that reads done[0] before the await and
                # would lose the other loops' counts.
                completed = await jobs.complete([(i, lease) for i, _, lease in claimed])
                done[0] += completed
            elif left[0] == 0:
                return

    start = (time.perf_counter(), time.process_time())
    try:
        await asyncio.gather(*(loop() for _ in range(conns)))
        return (done[0], *_since(start))
    finally:
        await jobs.close()


def measure(kind: str, target: str, batch: int, tasks: int, conns: int) -> dict[str, Any]:
    """One timed run; the process's own CPU time over it gives CPU per task."""
    if kind == "sqlite":
        done, secs, cpu = run_sqlite(target, batch, tasks)
    else:
        done, secs, cpu = asyncio.run(run_pg(target, batch, tasks, conns))
    return {"tasks": done, "seconds": secs, "tasks_per_s": done / secs, "cpu_s": cpu}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["sqlite", "postgresql"])
    ap.add_argument("target")
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--tasks", type=int, default=10000)
    ap.add_argument("--warmup", type=int, default=0)
    ap.add_argument("--conns", type=int, default=4)
    a = ap.parse_args()
    if a.warmup:
        measure(a.kind, a.target, a.batch, a.warmup, a.conns)
    print(json.dumps(measure(a.kind, a.target, a.batch, a.tasks, a.conns)))


if __name__ == "__main__":
    main()
