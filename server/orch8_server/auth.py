"""Who is calling, and in which tenant (P-AUTH-1..5, P-TEN-1..2).

`Principal` is what every route handler receives as `call.principal`, with the tenant the
request acts in as `call.tenant`. Without keys every caller is an `admin` of whatever
tenant `X-Tenant-Id` names (`default` when absent), exactly as before tenants existed.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from orch8_server.lifecycle.tenancy import Confinement
from orch8_server.principal import DEFAULT_TENANT, TENANT_HEADER, TENANT_RE, Principal
from orch8_server.problems import Problem

if TYPE_CHECKING:
    from starlette.requests import Request

    from orch8_server.keys import KeyRing

OPEN = Principal(key_id=None, role="admin", tenant=DEFAULT_TENANT)  # a server without keys


@functools.lru_cache(maxsize=4096)
def confinement(principal: Principal) -> Confinement | None:
    """P-AUTH-6/7: a worker key's confinement; None for every other caller."""
    if principal.role != "worker" or principal.key_id is None:
        return None
    return Confinement(principal.key_id, principal.queues, principal.handlers)


def tenant_of(request: Request, principal: Principal) -> str:
    """P-TEN-2: the tenant this request acts in."""
    wanted = request.headers.get(TENANT_HEADER)
    if wanted is None:
        return principal.tenant
    if not TENANT_RE.fullmatch(wanted):
        raise Problem("forbidden", "X-Tenant-Id must match ^[A-Za-z0-9_.-]{1,64}$")
    if not principal.may_select(wanted):
        raise Problem("forbidden", f"key {principal.key_id!r} may not act in tenant {wanted!r}")
    return wanted


def authenticate(request: Request, keys: KeyRing) -> Principal:
    """P-AUTH-1, P-AUTH-3: the bearer key's principal, else 401 (which never says why)."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() == "bearer" and token:
        principal = keys.lookup(token)
        if principal is not None:
            return principal
    raise Problem(
        "unauthorized",
        "missing or invalid bearer API key",
        headers={"WWW-Authenticate": 'Bearer realm="orch8"'},
    )


def check_role(principal: Principal, roles: frozenset[str], operation: str) -> None:
    """P-AUTH-2/3: a role the operation does not list is 403 (admin always passes)."""
    if principal.role != "admin" and principal.role not in roles:
        raise Problem(
            "forbidden",
            f"key {principal.key_id!r} (role {principal.role}) may not call {operation}",
        )


# P-AUTH-3: the operations whose body names the queues / handlers a worker key may serve.
_POLLS = ("pollTask", "pollTasks")
SCOPED_OPERATIONS = frozenset((*_POLLS, "registerWorker"))


def check_scope(principal: Principal, operation: str, body: dict[str, Any]) -> None:
    """P-AUTH-3: a worker key limited to `queues` / `handlers` polls and registers only
    for those; anything outside is 403 `forbidden`."""
    if principal.queues is None and principal.handlers is None:
        return
    if operation in _POLLS:
        queues = body.get("queue_names") or [body.get("queue_name") or "default"]
        handlers = body.get("handler_names") or None  # omitted or empty = any handler
    else:  # registerWorker: what the worker says it serves, when it says so
        queues = body.get("queues") or []
        handlers = body.get("handlers") or []
    if principal.queues is not None:
        outside = sorted(set(queues) - principal.queues)
        if outside:
            raise Problem(
                "forbidden",
                f"key {principal.key_id!r} may not serve queue(s) {', '.join(outside)} "
                f"(allowed: {', '.join(sorted(principal.queues))})",
            )
    if principal.handlers is not None:
        if handlers is None:
            raise Problem(
                "forbidden",
                f"key {principal.key_id!r} is limited to handlers "
                f"{', '.join(sorted(principal.handlers))}: name them in handler_names",
            )
        outside = sorted(set(handlers) - principal.handlers)
        if outside:
            raise Problem(
                "forbidden",
                f"key {principal.key_id!r} may not serve handler(s) {', '.join(outside)} "
                f"(allowed: {', '.join(sorted(principal.handlers))})",
            )
