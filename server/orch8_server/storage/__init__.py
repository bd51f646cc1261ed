"""Storage backends behind one small interface (see base.py)."""

from orch8_server.storage.base import Storage, Tx


def open_storage(url: str, synchronous: str = "NORMAL") -> Storage:
    """Pick a backend from the database URL; SQLite is the embedded default."""
    from orch8_server.storage.sqlite import SqliteStorage

    path = url.removeprefix("sqlite:///").removeprefix("sqlite://")
    return SqliteStorage(path, synchronous=synchronous)


__all__ = ["Storage", "Tx", "open_storage"]
