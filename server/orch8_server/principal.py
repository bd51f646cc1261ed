"""Who calls: a key's principal, the roles and the tenant names (P-AUTH-1..3, P-TEN-2).
A leaf module: the key ring (keys.py) builds principals, auth.py checks them."""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_TENANT = "default"
TENANT_HEADER = "x-tenant-id"
TENANT_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
ROLES = ("worker", "producer", "operator", "admin", "metrics")


@dataclass(frozen=True, slots=True)
class Principal:
    """The caller: a key's id (never the key), role and scope."""

    key_id: str | None
    role: str
    tenant: str  # the key's own tenant
    tenants: frozenset[str] | None = None  # others X-Tenant-Id may select; None = any
    queues: frozenset[str] | None = None  # worker keys: allowed queues; None = any
    handlers: frozenset[str] | None = None  # worker keys: allowed handlers; None = any

    def may_select(self, tenant: str) -> bool:
        return self.tenants is None or tenant == self.tenant or tenant in self.tenants
