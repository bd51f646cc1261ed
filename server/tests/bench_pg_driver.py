"""Driver micro-benchmark: asyncpg vs psycopg 3 (async, pooled) on the claim+complete loop.

Not a test (pytest ignores it). Run:
    cd server && ../.venv/bin/python tests/bench_pg_driver.py [--tasks 20000]
It starts a throwaway cluster (fsync on unless --no-fsync), keeps finished rows, and prints tasks/s for a
one-task claim + complete (driver round-trip bound) and a 50-task batch per driver.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from pg_cluster import PgCluster

SCHEMA = """
DROP TABLE IF EXISTS t;
CREATE TABLE t (seq bigserial PRIMARY KEY, queue text NOT NULL, status text NOT NULL,
                priority int NOT NULL, params jsonb NOT NULL, lease text, attempt int NOT NULL);
CREATE INDEX t_claim ON t (queue, priority, seq) WHERE status = 'pending';
"""
FILL = (
    "INSERT INTO t (queue, status, priority, params, attempt) "
    "SELECT 'q', $1, 0, '{\"i\": 1}', 0 FROM generate_series(1, $2)"
)
CLAIM = """
UPDATE t SET status = 'running', lease = md5(random()::text), attempt = t.attempt + 1
FROM (SELECT seq FROM t WHERE status = 'pending' AND queue = 'q'
      ORDER BY priority, seq LIMIT $1 FOR UPDATE SKIP LOCKED) c
WHERE t.seq = c.seq RETURNING t.seq, t.params, t.lease
"""
COMPLETE = "UPDATE t SET status = 'completed' WHERE seq = ANY($1::bigint[])"


async def run_asyncpg(url: str, n: int, batch: int, conc: int) -> float:
    import asyncpg

    pool = await asyncpg.create_pool(url, min_size=conc, max_size=conc)

    async def worker() -> None:
        while True:
            async with pool.acquire() as c, c.transaction():
                rows = await c.fetch(CLAIM, batch)
            if not rows:
                return
            async with pool.acquire() as c:
                await c.execute(COMPLETE, [r["seq"] for r in rows])

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(conc)))
    elapsed = time.perf_counter() - start
    await pool.close()
    return n / elapsed


async def run_psycopg(url: str, n: int, batch: int, conc: int) -> float:
    from psycopg_pool import AsyncConnectionPool

    claim = CLAIM.replace("$1", "%s")
    complete = COMPLETE.replace("$1::bigint[]", "%s")
    pool = AsyncConnectionPool(url, min_size=conc, max_size=conc, open=False)
    await pool.open()

    async def worker() -> None:
        while True:
            async with pool.connection() as c, c.transaction():
                rows = await (await c.execute(claim, (batch,), prepare=True)).fetchall()
            if not rows:
                return
            async with pool.connection() as c:
                await c.execute(complete, ([r[0] for r in rows],), prepare=True)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(conc)))
    elapsed = time.perf_counter() - start
    await pool.close()
    return n / elapsed


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=20000)
    parser.add_argument("--finished", type=int, default=500_000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--no-fsync", action="store_true", help="isolate driver cost")
    args = parser.parse_args()
    import asyncpg

    cluster = PgCluster(fsync=not args.no_fsync).init()
    try:
        url = cluster.url()
        for batch in (1, 50):
            for name, run in (("asyncpg", run_asyncpg), ("psycopg", run_psycopg)):
                conn = await asyncpg.connect(url)
                await conn.execute(SCHEMA)
                await conn.execute(FILL, "completed", args.finished)
                await conn.execute(FILL, "pending", args.tasks)
                await conn.execute("VACUUM ANALYZE t")
                await conn.close()
                rate = await run(url, args.tasks, batch, args.concurrency)
                print(f"{name:8} batch={batch:3} {rate:10,.0f} tasks/s (claim+complete)")
    finally:
        cluster.destroy()


if __name__ == "__main__":
    asyncio.run(main())
