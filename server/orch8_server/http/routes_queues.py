"""Routes of queue statistics and operator controls: pause, resume, running caps
(P-OBS-1, P-OBS-4, P-CTRL-1..3)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from orch8_server.http.endpoint import Call, json_response
from orch8_server.http.operations import operation
from orch8_server.lifecycle.controls import Controls
from orch8_server.lifecycle.engine import Engine
from orch8_server.lifecycle.queues import queue_stats

if TYPE_CHECKING:
    from orch8_server._generated.models import RunningLimit


def _engine(call: Call[Any]) -> Engine:
    engine: Engine = call.request.app.state.engine
    return engine


def _controls(call: Call[Any]) -> Controls:
    return _engine(call).controls


@operation("getQueueStats")
async def get_queue_stats(call: Call[None]) -> Response:
    return json_response(
        await queue_stats(
            _engine(call).storage, _engine(call).pollers, call.tenant, call.params.get("queue_name")
        )
    )


@operation("pauseQueue")
async def pause_queue(call: Call[None]) -> Response:
    return json_response(await _controls(call).pause(call.tenant, call.params["queue_name"]))


@operation("resumeQueue")
async def resume_queue(call: Call[None]) -> Response:
    return json_response(await _controls(call).resume(call.tenant, call.params["queue_name"]))


@operation("setQueueLimit")
async def set_queue_limit(call: Call[RunningLimit]) -> Response:
    queue = call.params["queue_name"]
    return json_response(
        await _controls(call).set_queue_limit(call.tenant, queue, call.body["max_running"])
    )


@operation("setHandlerLimit")
async def set_handler_limit(call: Call[RunningLimit]) -> Response:
    handler = call.params["handler_name"]
    return json_response(
        await _controls(call).set_handler_limit(call.tenant, handler, call.body["max_running"])
    )
