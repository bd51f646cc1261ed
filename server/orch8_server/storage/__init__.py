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
) -> Storage:
    """Pick a backend from the database URL: postgresql://... for PostgreSQL (several
    replicas may share it), anything else is a SQLite path, the embedded default."""
    if url.startswith(POSTGRES_SCHEMES):
        from orch8_server.storage.postgres import PgStorage

        return PgStorage(
            url,
            pool_size=pool_size,
            acquire_timeout_ms=acquire_timeout_ms,
            notify_fallback_ms=notify_fallback_ms,
        )
    from orch8_server.storage.sqlite import SqliteStorage

    path = url.removeprefix("sqlite:///").removeprefix("sqlite://")
    return SqliteStorage(path, synchronous=synchronous)


__all__ = ["POSTGRES_SCHEMES", "Storage", "StorageUnavailable", "Tx", "open_storage"]
