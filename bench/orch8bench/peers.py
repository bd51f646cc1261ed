"""Peer job queues on the same PostgreSQL, each end to end like our figure: a running
worker with a no-op job, a producer enqueueing batches of 100 at the same time, timed
from the first enqueue to the moment the database shows every job done (not merely
handed to the handler). An uncounted warm-up goes first, in the same process. Each peer
runs at the throughput settings its own documentation recommends (SETTINGS cites them).
`cpu_s` is the process's CPU time over the timed part (worker and producer together:
the work our server does for enqueue, claim and complete, minus HTTP).

Usage: python -m orch8bench.peers pgqueuer|procrastinate URL --tasks N --warmup W
pg-boss and graphile-worker run in Node (bench/node/pgboss.mjs, graphile.mjs), River in Go
(bench/river, built to bench/.bin/river): URL TASKS WARMUP, the same JSON answer.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable

ENQUEUE_BATCH = 100
# PgQueuer docs, guides/performance-tuning.md ("Batch Size"): raise `batch_size` (jobs
# fetched per dequeue round trip, default 10) for short-lived jobs.
PGQUEUER_BATCH = 100
# Procrastinate docs, howto/concurrency.md: async tasks with `concurrency` sub-workers
# (one job at a time by default); jobs deferred with batch_defer_async
# (howto/basics/batch_defer.md). The docs' example value, 30, measured slower than 10 on
# this 2-core box (167 vs 223 jobs/s, same cluster, 1,000 jobs, 23 Nov), so 10.
PROCRASTINATE_CONCURRENCY = 10


async def _wait_done(count_done: Callable[[], Awaitable[int]], target: int) -> None:
    while await count_done() < target:
        await asyncio.sleep(0.005)


async def _drive(
    enqueue: Callable[[int], Awaitable[None]],
    count_done: Callable[[], Awaitable[int]],
    warmup: int,
    tasks: int,
) -> dict:
    """Warm-up, then the timed run; count_done counts every finished job so far."""

    async def one(n: int, already: int) -> dict:
        cpu0, start = time.process_time(), time.perf_counter()
        for i in range(0, n, ENQUEUE_BATCH):
            await enqueue(min(ENQUEUE_BATCH, n - i))
        await _wait_done(count_done, already + n)
        secs = time.perf_counter() - start
        return {"tasks": n, "seconds": secs, "tasks_per_s": n / secs,
                "cpu_s": time.process_time() - cpu0}  # fmt: skip

    if warmup:
        await one(warmup, 0)
    return await one(tasks, warmup)


async def pgqueuer(url: str, tasks: int, warmup: int) -> dict:
    import asyncpg
    from pgqueuer import PgQueuer
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.queries import Queries

    setup = await asyncpg.connect(url)
    await Queries(AsyncpgDriver(setup)).install()
    worker_conn = await asyncpg.connect(url)
    producer = Queries(AsyncpgDriver(await asyncpg.connect(url)))
    qm = PgQueuer(AsyncpgDriver(worker_conn))

    @qm.entrypoint("noop")
    async def noop(job: object) -> None:
        return None

    runner = asyncio.create_task(qm.run(batch_size=PGQUEUER_BATCH))
    # pgqueuer deletes a finished job from its queue table and logs it in pgqueuer_log.
    total = warmup + tasks

    async def done() -> int:
        left = await setup.fetchval("SELECT count(*) FROM pgqueuer")
        return total - left if sent["n"] >= total else sent["n"] - left

    sent = {"n": 0}

    async def enqueue(n: int) -> None:
        await producer.enqueue(["noop"] * n, [None] * n, [0] * n)
        sent["n"] += n

    out = await _drive(enqueue, done, warmup, tasks)
    qm.shutdown.set()
    await asyncio.wait_for(runner, 30)
    return out | {
        "settings": f"PgQueuer.run(batch_size={PGQUEUER_BATCH}), LISTEN/NOTIFY, durable tables "
        "(docs: guides/performance-tuning.md, Batch Size)"
    }


async def procrastinate(url: str, tasks: int, warmup: int, concurrency: int) -> dict:
    import procrastinate as pc

    app = pc.App(connector=pc.PsycopgConnector(conninfo=url))

    @app.task(name="noop", queue="bench")
    async def noop() -> None:
        return None

    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        runner = asyncio.create_task(
            app.run_worker_async(queues=["bench"], concurrency=concurrency, wait=True)
        )
        conn = await _psycopg(url)

        async def done() -> int:
            cur = await conn.execute(
                "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'"
            )
            return (await cur.fetchone())[0]

        async def enqueue(n: int) -> None:
            await noop.batch_defer_async(*([{}] * n))

        out = await _drive(enqueue, done, warmup, tasks)
        runner.cancel()
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(runner, 30)
        await conn.close()
    return out | {
        "settings": f"async task, run_worker_async(concurrency={concurrency}), LISTEN/NOTIFY, "
        "batch_defer_async (docs: howto/concurrency.md, howto/basics/batch_defer.md)"
    }


async def _psycopg(url: str):
    import psycopg

    return await psycopg.AsyncConnection.connect(url, autocommit=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("peer", choices=["pgqueuer", "procrastinate"])
    ap.add_argument("url")
    ap.add_argument("--tasks", type=int, default=10000)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--concurrency", type=int, default=PROCRASTINATE_CONCURRENCY)
    a = ap.parse_args()
    if a.peer == "pgqueuer":
        out = asyncio.run(pgqueuer(a.url, a.tasks, a.warmup))
    else:
        out = asyncio.run(procrastinate(a.url, a.tasks, a.warmup, a.concurrency))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
