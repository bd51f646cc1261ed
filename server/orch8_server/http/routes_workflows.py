"""Routes of workflows: sequences and instances (P-WF-1..9)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from orch8_server.http.endpoint import Call, json_response
from orch8_server.http.operations import operation
from orch8_server.lifecycle.workflows import Workflows

if TYPE_CHECKING:
    from orch8_server._generated.models import (
        NewInstance,
        NewInstanceBatch,
        NewSequence,
        TaskCancellation,
    )


def _workflows(call: Call[Any]) -> Workflows:
    workflows: Workflows = call.request.app.state.engine.workflows
    return workflows


@operation("defineSequence")
async def define_sequence(call: Call[NewSequence]) -> Response:
    sequence, created = await _workflows(call).define(call.tenant, call.body)
    return json_response(sequence, 201 if created else 200)


@operation("listSequences")
async def list_sequences(call: Call[None]) -> Response:
    p = call.params
    page = await _workflows(call).list_sequences(call.tenant, p["limit"], p.get("cursor"))
    return json_response(page)


@operation("getSequence")
async def get_sequence(call: Call[None]) -> Response:
    p = call.params
    sequence = await _workflows(call).get_sequence(call.tenant, p["name"], p.get("version"))
    return json_response(sequence)


@operation("startInstance")
async def start_instance(call: Call[NewInstance]) -> Response:
    headers = dict(call.request.headers)
    instance, created = await _workflows(call).start(call.tenant, call.body, headers)
    return json_response(instance, 201 if created else 200)


@operation("startInstances")
async def start_instances(call: Call[NewInstanceBatch]) -> Response:
    headers = dict(call.request.headers)
    started = await _workflows(call).start_many(
        call.tenant, call.body["instances"], headers, "/instances"
    )
    return json_response({"instances": [view for view, _ in started]}, 201)


@operation("listInstances")
async def list_instances(call: Call[None]) -> Response:
    p = call.params
    statuses = tuple(dict.fromkeys(p.get("status", [])))
    page = await _workflows(call).list_instances(
        call.tenant, p.get("sequence"), statuses, p["limit"], p.get("cursor")
    )
    return json_response(page)


@operation("getInstance")
async def get_instance(call: Call[None]) -> Response:
    p = call.params
    wait_ms = min(p["wait_ms"], call.request.app.state.engine.settings.max_wait_ms)
    return json_response(await _workflows(call).get(call.tenant, p["instance_id"], wait_ms))


@operation("cancelInstance")
async def cancel_instance(call: Call[TaskCancellation]) -> Response:
    workflows = _workflows(call)
    return json_response(
        await workflows.cancel(call.tenant, call.params["instance_id"], call.body.get("reason"))
    )


@operation("retryInstance")
async def retry_instance(call: Call[None]) -> Response:
    return json_response(await _workflows(call).retry(call.tenant, call.params["instance_id"]))
