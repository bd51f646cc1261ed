"""`orch8-server migrate`: apply the schema migrations and exit (seed 004).

A deploy step run as the schema's owner, so the servers can run with `--no-migrate` as a
role holding no CREATE rights (storage/schema.py). It takes the server's options and
environment, so a deploy passes it the servers' own; only the database is used.
Idempotent: a database already at this server's version is left alone, and runs at once
are serialised by the migrations' lock.
"""

from __future__ import annotations

import asyncio
import sys

DESCRIPTION = (
    "Bring the database of --db / ORCH8_DATABASE_URL to this server's schema version and exit "
    "0, printing 'schema at version N, applied M migrations' or 'already at version N'. Takes "
    "the server's options (only the database is used); run it before starting servers with "
    "--no-migrate."
)


def main(argv: list[str]) -> None:
    from orch8_server.cli import parse_settings_and_warnings
    from orch8_server.storage.schema import migrate_database, report

    settings, _ = parse_settings_and_warnings(argv, "orch8-server migrate", DESCRIPTION)
    try:
        version, applied = asyncio.run(migrate_database(settings.db))
    except Exception as exc:  # unreachable, refused, newer than this server: say which
        sys.exit(f"orch8-server migrate: {type(exc).__name__}: {exc}")
    print(report(version, applied), flush=True)
