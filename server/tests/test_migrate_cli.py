"""`orch8-server migrate` as a deploy step, and servers run with `--no-migrate` (seed 004).

The command brings the database to the server's schema and says what it did; a server
with --no-migrate creates nothing, refuses a missing or older schema naming the command,
and on PostgreSQL serves as a role holding no CREATE right once an owner migrated.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import asyncpg
import httpx
import pytest
from conftest import launch, stop_server
from pg_cluster import PgCluster

from orch8_server.storage import postgres_schema, sqlite_schema
from orch8_server.storage.postgres import PgStorage
from orch8_server.storage.schema import SchemaNotReady
from orch8_server.storage.sqlite import SqliteStorage

HINT = "run `orch8-server migrate` with the same --db / ORCH8_DATABASE_URL first"


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """orch8-server ARGS, with ORCH8_* of this environment dropped and `env` added."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ORCH8_")}
    return subprocess.run(
        [sys.executable, "-m", "orch8_server", *args],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def _refused(db: str, *flags: str) -> str:
    """A server on `db` exits non-zero before listening; its last stderr line."""
    done = _run("--db", db, "--port", "0", "--db-retry-max-attempts", "1", *flags)
    assert done.returncode != 0 and "listening" not in done.stdout, done
    return done.stderr.strip().splitlines()[-1]


def _serves_a_task(url: str) -> None:
    with httpx.Client(base_url=url, timeout=20) as c:
        task = c.post("/tasks", json={"handler_name": "deploy_check"}).json()
        polled = c.post(
            "/workers/tasks/poll", json={"handler_names": ["deploy_check"], "wait_ms": 0}
        ).json()
        assert polled["id"] == task["id"]
        done = c.post(
            f"/workers/tasks/{task['id']}/complete",
            json={"lease_id": polled["lease"]["id"], "output": {"ok": True}},
        )
        assert done.status_code == 200, done.text
        assert c.get(f"/tasks/{task['id']}").json()["status"] == "completed"


def test_sqlite_migrate_is_a_deploy_step_and_no_migrate_creates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "orch8.db"
    last = _refused(str(db), "--no-migrate")
    assert last.startswith("orch8-server: the database has no orch8 schema") and HINT in last
    assert not db.exists()  # --no-migrate made no file

    version = sqlite_schema.SCHEMA_VERSION
    first = _run("migrate", ORCH8_DATABASE_URL=str(db))  # the server's env variable
    assert first.returncode == 0, first.stderr
    assert first.stdout == f"schema at version {version}, applied {version} migrations\n"
    # The servers' own options are accepted (a deploy passes them on); only --db is used.
    again = _run("migrate", "--db", str(db), "--no-migrate", "--lease-ms", "30000")
    assert again.returncode == 0 and again.stdout == f"already at version {version}\n"

    server = launch(db, tmp_path / "s.log", **{"no-migrate": True})
    try:
        _serves_a_task(server.url)
    finally:
        stop_server(server)


def test_sqlite_no_migrate_refuses_an_older_schema_and_leaves_it(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 5")
    storage = SqliteStorage(path, migrate=False)
    with pytest.raises(SchemaNotReady, match="has schema version 5; this server needs"):
        asyncio.run(storage.open())
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 5


def test_migrate_refuses_a_newer_database_and_exits_non_zero(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {sqlite_schema.SCHEMA_VERSION + 1}")
    done = _run("migrate", "--db", str(path))
    assert done.returncode == 1 and not done.stdout
    assert "this server knows" in done.stderr


def test_postgresql_migrate_as_owner_then_serve_without_create_rights(
    pg: PgCluster, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    owner, app, dbname = f"owner_{suffix}", f"app_{suffix}", f"deploy_{suffix}"
    pg.psql(f"CREATE ROLE {owner} LOGIN")
    pg.psql(f"CREATE ROLE {app} LOGIN")
    pg.psql(f"CREATE DATABASE {dbname} OWNER {owner}")
    as_owner = pg.url(dbname).replace("postgres@", f"{owner}@")
    as_app = pg.url(dbname).replace("postgres@", f"{app}@")
    pg.psql("REVOKE CREATE ON SCHEMA public FROM PUBLIC", dbname)  # PostgreSQL 15's default

    last = _refused(as_app, "--no-migrate")
    assert "the database has no orch8 schema" in last and HINT in last
    last = _refused(as_app)  # migrating needs CREATE: refused for good, not retried
    assert "permission denied" in last and "run `orch8-server migrate` as the schema's" in last

    latest = postgres_schema.LATEST
    first = _run("migrate", "--db", as_owner)
    assert first.returncode == 0, first.stderr
    assert first.stdout == f"schema at version {latest}, applied {latest} migrations\n"
    again = _run("migrate", ORCH8_DATABASE_URL=as_owner)
    assert again.returncode == 0 and again.stdout == f"already at version {latest}\n"

    pg.psql(
        f"GRANT USAGE ON SCHEMA public TO {app}; "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {app}; "
        f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {app}",
        dbname,
    )

    async def cannot_create() -> None:
        conn = await asyncpg.connect(as_app)
        try:
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.execute("CREATE TABLE probe (a int)")
        finally:
            await conn.close()

    asyncio.run(cannot_create())
    server = launch(as_app, tmp_path / "s.log", **{"no-migrate": True})
    try:
        _serves_a_task(server.url)
    finally:
        stop_server(server)
    # Without the option too: a current schema is only read, so nothing needs CREATE.
    server = launch(as_app, tmp_path / "d.log")
    try:
        _serves_a_task(server.url)
    finally:
        stop_server(server)


def test_postgresql_no_migrate_refuses_an_older_schema(pg: PgCluster) -> None:
    url = pg.create_database(f"older_{uuid.uuid4().hex[:8]}")

    async def run() -> None:
        conn = await asyncpg.connect(url)
        saved = postgres_schema.MIGRATIONS
        postgres_schema.MIGRATIONS = saved[:-1]
        try:
            await postgres_schema.migrate(conn)
        finally:
            postgres_schema.MIGRATIONS = saved
            await conn.close()
        storage = PgStorage(url, pool_size=2, migrate=False)
        with pytest.raises(SchemaNotReady, match=f"has schema version {len(saved) - 1}; "):
            await storage.open()
        await storage.close()

    asyncio.run(run())
