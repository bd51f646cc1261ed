"""Route of the queue history (P-OBS-5): GET /queues/{queue_name}/history."""

from __future__ import annotations

from starlette.responses import Response

from orch8_server.http.endpoint import Call, endpoint, json_response
from orch8_server.lifecycle.engine import Engine
from orch8_server.lifecycle.history import WINDOW_MINUTES


@endpoint("/queues/{queue_name}/history", "GET")
async def get_queue_history(call: Call) -> Response:
    """The queue's last `minutes` (1-60, validated against the contract), per minute."""
    engine: Engine = call.request.app.state.engine
    minutes = call.params.get("minutes", WINDOW_MINUTES)
    return json_response(
        await engine.history.history(call.tenant, call.params["queue_name"], minutes)
    )


# Queue names may contain "/" (QueueName): matched with the path converter, as routes_queues.
operations = [("GET", "/queues/{queue_name:path}/history", get_queue_history)]
