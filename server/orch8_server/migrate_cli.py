"""`orch8-server migrate`: apply the schema migrations and exit (seed 004).

A deploy step run as the schema's owner, so the servers can run with `--no-migrate` as a
role holding no CREATE rights (storage/schema.py). Idempotent: a database already at this
server's version is left alone; several runs at once are serialised by the migrations' lock.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from orch8_server.config import Settings


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="orch8-server migrate",
        description="Bring the database to this server's schema version and exit 0; prints "
        "'schema at version N, applied M migrations' or 'already at version N'. Run it before "
        "starting servers with --no-migrate.",
    )
    parser.add_argument(
        "--db",
        default=None,
        help=f"SQLite file path (default {Settings.db}) or postgresql://user@host:port/dbname "
        "[ORCH8_DATABASE_URL]",
    )
    args = parser.parse_args(argv)
    db = args.db or os.environ.get("ORCH8_DATABASE_URL") or Settings.db

    from orch8_server.storage.schema import migrate_database, report

    try:
        version, applied = asyncio.run(migrate_database(db))
    except ImportError as exc:  # asyncpg missing
        sys.exit(f"orch8-server migrate: {exc.name or exc} is needed: pip install asyncpg")
    except Exception as exc:  # unreachable, refused, newer than this server: say which
        sys.exit(f"orch8-server migrate: {type(exc).__name__}: {exc}")
    print(report(version, applied), flush=True)
