"""The physical-limit reference: the server's own enqueue, claim and complete statements
run straight against the database, with no HTTP, no lifecycle rules, no JSON views.

Schema and statements are imported from the server's storage modules (storage/sqlite.py,
storage/postgres_tx.py, storage/postgres_schema.py), so they cannot drift: per task, an
INSERT; a claim (SQLite: ordered SELECT + UPDATE per row; PostgreSQL: the one
SKIP LOCKED UPDATE ... RETURNING); per completed task a read of the row, an UPDATE and
an attempt upsert (PostgreSQL: one locking read per batch and pipelined executemany
writes, as PgTx buffers them), each of the three steps in its own transaction like the
server does.
Usage: python -m orch8bench.sqlref sqlite PATH|postgresql URL --batch B --tasks N
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server"))
from orch8_server.storage import postgres_tx as pgtx
from orch8_server.storage import sqlite as sq
from orch8_server.storage.base import ATTEMPT_COLUMNS, TASK_COLUMNS
from orch8_server.storage.postgres_schema import migrate

NEW_COLS = [c for c in TASK_COLUMNS if c != "seq"]
RETRY = {
    "max_attempts": 3,
    "initial_backoff_ms": 1000,
    "backoff_multiplier": 2.0,
    "max_backoff_ms": 300000,
    "jitter": 0.2,
}


def new_row(now: int) -> dict:
    return {
        "id": "task_" + uuid.uuid4().hex,
        "handler_name": "noop",
        "queue_name": "default",
        "status": "pending",
        "priority": 0,
        "params": {},
        "context": {},
        "headers": {},
        "attempt": 0,
        "max_attempts": 3,
        "retry": RETRY,
        "run_at": now,
        "created_at": now,
        "updated_at": now,
    }


def lease_id() -> str:
    return "lease_" + uuid.uuid4().hex


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# SQLite ------------------------------------------------------------------------------------

_SQ_INSERT = f"INSERT INTO tasks ({', '.join(NEW_COLS)}) VALUES ({', '.join('?' * len(NEW_COLS))})"
_SQ_PICK = (
    sq._TASK_SELECT + " WHERE status = 'pending' AND queue_name = ? AND handler_name = ? "
    "ORDER BY priority, seq LIMIT ?"
)
_SQ_LEASE = (
    "UPDATE tasks SET status = 'running', attempt = ?, lease_id = ?, lease_expires_at = ?, "
    "lease_ms = ?, lease_started_at = ?, worker_id = ?, updated_at = ?, started_at = ? "
    "WHERE seq = ?"
)
_SQ_ATTEMPT = (
    f"INSERT OR REPLACE INTO attempts ({', '.join(ATTEMPT_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(ATTEMPT_COLUMNS))})"
)


def run_sqlite(path: str, batch: int, tasks: int) -> float:
    c = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode = WAL", "synchronous = NORMAL", "cache_size = -65536"):
        c.execute(f"PRAGMA {pragma}")
    c.executescript(sq._SCHEMA)
    dumps = sq._dumps
    json_cols = set(sq._TASK_JSON)
    start = time.perf_counter()
    done = 0
    while done < tasks:
        n = min(batch, tasks - done)
        now = now_ms()
        c.execute("BEGIN IMMEDIATE")
        c.executemany(
            _SQ_INSERT,
            [
                [dumps(v) if k in json_cols else v for k, v in ((k, r.get(k)) for k in NEW_COLS)]
                for r in (new_row(now) for _ in range(n))
            ],
        )
        c.execute("COMMIT")
        c.execute("BEGIN IMMEDIATE")
        rows = [sq._task(r) for r in c.execute(_SQ_PICK, ("default", "noop", n))]
        leased = [
            (r["attempt"] + 1, lease_id(), now + 60000, 60000, now, "w", now, now, r["seq"])
            for r in rows
        ]
        c.executemany(_SQ_LEASE, leased)
        c.execute("COMMIT")
        c.execute("BEGIN IMMEDIATE")
        for r, lease in zip(rows, leased, strict=True):
            c.execute(sq._TASK_SELECT + " WHERE id = ?", (r["id"],)).fetchone()
            c.execute(
                "UPDATE tasks SET status = ?, output = ?, finished_at = ?, updated_at = ? "
                "WHERE id = ?",
                ("completed", None, now, now, r["id"]),
            )
            c.execute(
                _SQ_ATTEMPT,
                (
                    r["id"],
                    lease[1],
                    lease[0],
                    "w",
                    now,
                    now,
                    "completed",
                    None,
                    '{"status":"completed"}',
                ),
            )
        c.execute("COMMIT")
        done += len(rows)
    elapsed = time.perf_counter() - start
    c.close()
    return tasks / elapsed


# PostgreSQL --------------------------------------------------------------------------------


async def run_pg(url: str, batch: int, tasks: int, conns: int) -> float:
    import asyncpg
    from orch8_server.storage.postgres import _init_connection

    setup = await asyncpg.connect(url)
    await migrate(setup)
    await setup.close()
    pool = await asyncpg.create_pool(url, min_size=conns, max_size=conns, init=_init_connection)
    todo = {"left": tasks}
    done = {"n": 0}

    async def loop() -> None:
        # Connections race for rows (SKIP LOCKED): one may claim another's tasks, so each
        # keeps claiming after its enqueues are done until a claim comes back empty.
        while True:
            n = min(batch, todo["left"])
            todo["left"] -= n
            now = now_ms()
            async with pool.acquire() as c:
                if n:
                    async with c.transaction():
                        await c.executemany(
                            pgtx._INSERT_TASK_PLAIN,
                            [
                                [r.get(k) for k in NEW_COLS]
                                for r in (new_row(now) for _ in range(n))
                            ],
                        )
                async with c.transaction():
                    rows = await c.fetch(
                        pgtx.CLAIM_BY_HANDLER,
                        "default",
                        batch,
                        now,
                        60000,
                        "w",
                        [lease_id() for _ in range(batch)],
                        ["noop"],
                    )
                async with c.transaction():
                    ids = sorted(r["id"] for r in rows)
                    await c.fetch(
                        pgtx._TASKS + " WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE", ids
                    )
                    # Buffered writes sent as pipelined executemany, as PgTx.flush does.
                    await c.executemany(
                        "UPDATE tasks SET status = $2, output = $3, finished_at = $4, "
                        "updated_at = $5 WHERE id = $1",
                        [(r["id"], "completed", None, now, now) for r in rows],
                    )
                    await c.executemany(
                        pgtx._UPSERT_ATTEMPT,
                        [(r["id"], r["lease_id"], r["attempt"], "w", now, now, "completed",
                          None, {"status": "completed"}) for r in rows],
                    )  # fmt: skip
            done["n"] += len(rows)
            if not rows and todo["left"] == 0:
                return

    start = time.perf_counter()
    await asyncio.gather(*(loop() for _ in range(conns)))
    elapsed = time.perf_counter() - start
    await pool.close()
    return done["n"] / elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["sqlite", "postgresql"])
    ap.add_argument("target")
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--tasks", type=int, default=10000)
    ap.add_argument("--warmup", type=int, default=0)
    ap.add_argument("--conns", type=int, default=4)
    a = ap.parse_args()
    if a.kind == "sqlite":
        if a.warmup:
            run_sqlite(a.target, a.batch, a.warmup)
        rate = run_sqlite(a.target, a.batch, a.tasks)
    else:
        if a.warmup:
            asyncio.run(run_pg(a.target, a.batch, a.warmup, a.conns))
        rate = asyncio.run(run_pg(a.target, a.batch, a.tasks, a.conns))
    print(json.dumps({"tasks": a.tasks, "tasks_per_s": rate}))


if __name__ == "__main__":
    main()
