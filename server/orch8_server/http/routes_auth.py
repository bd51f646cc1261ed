"""GET /whoami: the caller as the server sees it (P-AUTH-5)."""

from __future__ import annotations

from starlette.responses import Response

from orch8_server.http.endpoint import Call, json_response, keyring
from orch8_server.http.operations import operation


def _names(values: frozenset[str] | None) -> list[str] | None:
    return None if values is None else sorted(values)


@operation("getPrincipal")
async def get_principal(call: Call[None]) -> Response:
    """The key's id (never the key), role, the tenant this request acts in, and its scope."""
    p = call.principal
    return json_response(
        {
            "auth_required": keyring(call.request).required,
            "key_id": p.key_id,
            "role": p.role,
            "tenant": call.tenant,
            "tenants": _names(p.tenants),
            "queues": _names(p.queues),
            "handlers": _names(p.handlers),
        }
    )
