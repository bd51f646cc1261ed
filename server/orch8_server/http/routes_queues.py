"""Routes of queue statistics and operator controls: pause, resume, running caps, rate
limits (P-OBS-1, P-OBS-4, P-CTRL-1..3, P-RATE-4)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from orch8_server.http.endpoint import Call, json_response
from orch8_server.http.operations import operation
from orch8_server.lifecycle.controls import Controls
from orch8_server.lifecycle.engine import Engine
from orch8_server.lifecycle.queues import queue_stats

if TYPE_CHECKING:
    from orch8_server._generated.models import RateLimitSettings, RunningLimit


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


@operation("listRateLimits")
async def list_rate_limits(call: Call[None]) -> Response:
    return json_response(await _engine(call).rate_limits.list(call.tenant))


@operation("setRateLimit")
async def set_rate_limit(call: Call[RateLimitSettings]) -> Response:
    key = call.params["key"]
    return json_response(await _engine(call).rate_limits.set(call.tenant, key, call.body))


@operation("deleteRateLimit")
async def delete_rate_limit(call: Call[None]) -> Response:
    await _engine(call).rate_limits.delete(call.tenant, call.params["key"])
    return Response(status_code=204)
