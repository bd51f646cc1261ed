"""Routes of queue statistics and operator controls: pause, resume, running caps
(P-OBS-1, P-OBS-4, P-CTRL-1..3)."""

from __future__ import annotations

from starlette.responses import Response

from orch8_server.http.endpoint import Call, endpoint, json_response
from orch8_server.lifecycle.controls import Controls
from orch8_server.lifecycle.engine import Engine
from orch8_server.lifecycle.queues import queue_stats


def _engine(call: Call) -> Engine:
    engine: Engine = call.request.app.state.engine
    return engine


def _controls(call: Call) -> Controls:
    return _engine(call).leases.controls


@endpoint("/queues", "GET")
async def get_queue_stats(call: Call) -> Response:
    return json_response(
        await queue_stats(_engine(call), call.tenant, call.params.get("queue_name"))
    )


@endpoint("/queues/{queue_name}/pause", "POST")
async def pause_queue(call: Call) -> Response:
    return json_response(await _controls(call).pause(call.tenant, call.params["queue_name"]))


@endpoint("/queues/{queue_name}/resume", "POST")
async def resume_queue(call: Call) -> Response:
    return json_response(await _controls(call).resume(call.tenant, call.params["queue_name"]))


@endpoint("/queues/{queue_name}/limit", "PUT", "RunningLimit", body_required=True)
async def set_queue_limit(call: Call) -> Response:
    queue = call.params["queue_name"]
    return json_response(
        await _controls(call).set_queue_limit(call.tenant, queue, call.body["max_running"])
    )


@endpoint("/handlers/{handler_name}/limit", "PUT", "RunningLimit", body_required=True)
async def set_handler_limit(call: Call) -> Response:
    handler = call.params["handler_name"]
    return json_response(
        await _controls(call).set_handler_limit(call.tenant, handler, call.body["max_running"])
    )


# Queue and handler names may contain "/" (QueueName, HandlerName): the routes match
# them with Starlette's path converter; the endpoints validate them against the spec.
operations = [
    ("GET", "/queues", get_queue_stats),
    ("POST", "/queues/{queue_name:path}/pause", pause_queue),
    ("POST", "/queues/{queue_name:path}/resume", resume_queue),
    ("PUT", "/queues/{queue_name:path}/limit", set_queue_limit),
    ("PUT", "/handlers/{handler_name:path}/limit", set_handler_limit),
]
