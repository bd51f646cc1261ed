"""Who is calling, and in which tenant (P-AUTH-1..5, P-TEN-1..2).

`Principal` is what every route handler receives as `call.principal`, with the tenant the
request acts in as `call.tenant`. Without keys every caller is an `admin` of whatever
tenant `X-Tenant-Id` names (`default` when absent), exactly as before tenants existed.
"""

from __future__ import annotations

import hmac
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from orch8_server.problems import Problem

if TYPE_CHECKING:
    from starlette.requests import Request

DEFAULT_TENANT = "default"
TENANT_HEADER = "x-tenant-id"
_TENANT_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
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


OPEN = Principal(key_id=None, role="admin", tenant=DEFAULT_TENANT)  # a server without keys


def tenant_of(request: Request, principal: Principal) -> str:
    """P-TEN-2: the tenant this request acts in."""
    wanted = request.headers.get(TENANT_HEADER)
    if wanted is None:
        return principal.tenant
    if not _TENANT_RE.fullmatch(wanted):
        raise Problem("forbidden", "X-Tenant-Id must match ^[A-Za-z0-9_.-]{1,64}$")
    if not principal.may_select(wanted):
        raise Problem(
            "forbidden", f"key {principal.key_id!r} may not act in tenant {wanted!r}"
        )
    return wanted


def authenticate(request: Request, keys: frozenset[str]) -> Principal:
    """P-AUTH-1: the bearer key's principal (env keys are admin), else 401."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() == "bearer" and token and any(hmac.compare_digest(token, k) for k in keys):
        return Principal(key_id="env", role="admin", tenant=DEFAULT_TENANT)
    raise Problem(
        "unauthorized",
        "missing or invalid bearer API key",
        headers={"WWW-Authenticate": 'Bearer realm="orch8"'},
    )
