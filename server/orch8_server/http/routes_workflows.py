"""Routes of workflows: sequences and instances (P-WF-1..9)."""

from __future__ import annotations

from starlette.responses import Response

from orch8_server.http.endpoint import Call, endpoint, json_response
from orch8_server.lifecycle.workflows import Workflows


def _workflows(call: Call) -> Workflows:
    workflows: Workflows = call.request.app.state.engine.workflows
    return workflows


@endpoint("/sequences", "POST", "NewSequence", body_required=True)
async def define_sequence(call: Call) -> Response:
    sequence, created = await _workflows(call).define(call.tenant, call.body)
    return json_response(sequence, 201 if created else 200)


@endpoint("/sequences", "GET")
async def list_sequences(call: Call) -> Response:
    p = call.params
    page = await _workflows(call).list_sequences(call.tenant, p.get("limit", 50), p.get("cursor"))
    return json_response(page)


@endpoint("/sequences/{name}", "GET")
async def get_sequence(call: Call) -> Response:
    p = call.params
    sequence = await _workflows(call).get_sequence(call.tenant, p["name"], p.get("version"))
    return json_response(sequence)


@endpoint("/instances", "POST", "NewInstance", body_required=True)
async def start_instance(call: Call) -> Response:
    headers = dict(call.request.headers)
    instance, created = await _workflows(call).start(call.tenant, call.body, headers)
    return json_response(instance, 201 if created else 200)


@endpoint("/instances", "GET")
async def list_instances(call: Call) -> Response:
    p = call.params
    statuses = tuple(dict.fromkeys(p.get("status", [])))
    page = await _workflows(call).list_instances(
        call.tenant, p.get("sequence"), statuses, p.get("limit", 50), p.get("cursor")
    )
    return json_response(page)


@endpoint("/instances/{instance_id}", "GET")
async def get_instance(call: Call) -> Response:
    p = call.params
    wait_ms = min(p.get("wait_ms", 0), call.request.app.state.engine.settings.max_wait_ms)
    return json_response(await _workflows(call).get(call.tenant, p["instance_id"], wait_ms))


@endpoint("/instances/{instance_id}/cancel", "POST", "TaskCancellation")
async def cancel_instance(call: Call) -> Response:
    workflows = _workflows(call)
    return json_response(
        await workflows.cancel(call.tenant, call.params["instance_id"], call.body.get("reason"))
    )


@endpoint("/instances/{instance_id}/retry", "POST")
async def retry_instance(call: Call) -> Response:
    return json_response(await _workflows(call).retry(call.tenant, call.params["instance_id"]))


# Sequence names may contain "/" (SequenceName): matched with the path converter.
operations = [
    ("POST", "/sequences", define_sequence),
    ("GET", "/sequences", list_sequences),
    ("GET", "/sequences/{name:path}", get_sequence),
    ("POST", "/instances", start_instance),
    ("GET", "/instances", list_instances),
    ("GET", "/instances/{instance_id}", get_instance),
    ("POST", "/instances/{instance_id}/cancel", cancel_instance),
    ("POST", "/instances/{instance_id}/retry", retry_instance),
]
