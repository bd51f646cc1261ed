"""Storage backends behind one small interface (see base.py)."""

from orch8_server.storage.base import Storage, StorageUnavailable, Tx

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def open_storage(
    url: str,
    synchronous: str = "NORMAL",
    *,
    pool_size: int = 10,
    acquire_timeout_ms: int = 5000,
    notify_fallback_ms: int = 500,
    migrate: bool = True,
) -> Storage:
    """Pick a backend from the database URL: postgresql://... for PostgreSQL (several
    replicas may share it), anything else is a SQLite path, the embedded default. With
    `migrate` False (--no-migrate) it creates nothing and refuses an old schema (schema.py)."""
    if url.startswith(POSTGRES_SCHEMES):
        from orch8_server.storage.postgres import PgStorage

        return PgStorage(
            url,
            pool_size=pool_size,
            acquire_timeout_ms=acquire_timeout_ms,
            notify_fallback_ms=notify_fallback_ms,
            migrate=migrate,
        )
    from orch8_server.storage.schema import sqlite_path
    from orch8_server.storage.sqlite import SqliteStorage

    return SqliteStorage(sqlite_path(url), synchronous=synchronous, migrate=migrate)


__all__ = ["POSTGRES_SCHEMES", "Storage", "StorageUnavailable", "Tx", "open_storage"]
