"""Schema versions as a deploy step: `orch8-server migrate` and `--no-migrate` (seed 004).

By default a server migrates its database when it opens it. A deploy that runs
`orch8-server migrate` as the schema's owner can run the servers with `--no-migrate` as a
role without CREATE rights: they create nothing and refuse to start on a schema that is
missing or older than they need, naming the command that fixes it.
"""

from __future__ import annotations

import sqlite3

from orch8_server.storage import POSTGRES_SCHEMES


class SchemaNotReady(RuntimeError):
    """The schema is missing or older than this server needs, and it may not migrate."""


def not_ready(found: int, needed: int) -> SchemaNotReady:
    what = "no orch8 schema" if found == 0 else f"schema version {found}"
    return SchemaNotReady(
        f"the database has {what}; this server needs version {needed} and --no-migrate is "
        "set, so it creates nothing: run `orch8-server migrate` with the same --db / "
        "ORCH8_DATABASE_URL first"
    )


def report(version: int, applied: int) -> str:
    """The line `orch8-server migrate` prints."""
    if not applied:
        return f"already at version {version}"
    return f"schema at version {version}, applied {applied} migration{'s' * (applied != 1)}"


def sqlite_path(url: str) -> str:
    return url.removeprefix("sqlite:///").removeprefix("sqlite://")


async def migrate_database(url: str) -> tuple[int, int]:
    """Bring the database at `url` to this server's schema: (version, migrations applied)."""
    if url.startswith(POSTGRES_SCHEMES):
        import asyncpg

        from orch8_server.storage import postgres_schema

        conn = await asyncpg.connect(url, server_settings={"application_name": "orch8-migrate"})
        try:
            applied = await postgres_schema.migrate(conn)
        finally:
            await conn.close()
        return postgres_schema.LATEST, applied
    from orch8_server.storage import sqlite_schema

    path = sqlite_path(url)
    conn3 = sqlite3.connect(path, isolation_level=None)
    try:
        conn3.execute("PRAGMA journal_mode = WAL")  # persistent: the server's open finds it
        applied = sqlite_schema.migrate(conn3, path)
    finally:
        conn3.close()
    return sqlite_schema.SCHEMA_VERSION, applied
