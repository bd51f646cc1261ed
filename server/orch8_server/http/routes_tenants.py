"""Route of the tenants in use (P-TEN-4): GET /tenants.

Only `admin` may call it (`x-orch8-roles: []`, enforced with every other role check in
endpoint.py); this route only answers.
"""

from __future__ import annotations

from starlette.responses import Response

from orch8_server.http.endpoint import Call, json_response
from orch8_server.http.operations import operation
from orch8_server.lifecycle.admin_views import tenant_list
from orch8_server.lifecycle.engine import Engine


@operation("listTenants")
async def list_tenants(call: Call[None]) -> Response:
    """Tenants with at least one task or worker, with their counts, in tenant order."""
    engine: Engine = call.request.app.state.engine
    return json_response(await tenant_list(engine.storage))
