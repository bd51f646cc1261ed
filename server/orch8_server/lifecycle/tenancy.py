"""Tenant isolation of stored rows (P-TEN-3).

Task ids are unique across tenants, so rules read a task by id and then keep it only when
it belongs to the caller's tenant: another tenant's task is answered exactly like an id
that never existed (404 not_found), never a 403 that would confirm it exists.
"""

from __future__ import annotations

from orch8_server.storage.base import Row


def owned(row: Row | None, tenant: str) -> Row | None:
    """The row when it is the tenant's, else None (P-TEN-3)."""
    if row is None or row.get("tenant", "default") != tenant:
        return None
    return row
