"""Route of the queue history (P-OBS-5): GET /queues/{queue_name}/history."""

from __future__ import annotations

from starlette.responses import Response

from orch8_server.http.endpoint import Call, json_response
from orch8_server.http.operations import operation
from orch8_server.lifecycle.engine import Engine


@operation("getQueueHistory")
async def get_queue_history(call: Call[None]) -> Response:
    """The queue's last `minutes` (1-60, validated against the contract), per minute."""
    engine: Engine = call.request.app.state.engine
    p = call.params
    return json_response(await engine.history.history(call.tenant, p["queue_name"], p["minutes"]))
