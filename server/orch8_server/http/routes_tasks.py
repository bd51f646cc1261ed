"""Routes of the task API and the worker task API."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from orch8_server.http.endpoint import Call, endpoint, json_response
from orch8_server.lifecycle.engine import Engine
from orch8_server.problems import Problem
from orch8_server.storage.base import TaskFilter
from orch8_server.timefmt import parse


def _engine(call: Call) -> Engine:
    engine: Engine = call.request.app.state.engine
    return engine


async def _disconnected(request: Request) -> None:
    """Finishes when the client goes away (the body is already read)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _check_open(engine: Engine) -> None:
    if engine.draining:
        raise Problem(
            "unavailable",
            "server is shutting down; poll another replica",
            headers={"Retry-After": "1"},
        )


@endpoint("/tasks", "POST", "NewTask", body_required=True)
async def enqueue_task(call: Call) -> Response:
    tasks, created = await _engine(call).tasks.enqueue(call.tenant, [call.body], "")
    return json_response(tasks[0], 201 if created else 200)


@endpoint("/tasks/batch", "POST", "NewTaskBatch", body_required=True)
async def enqueue_tasks(call: Call) -> Response:
    tasks, _ = await _engine(call).tasks.enqueue(call.tenant, call.body["tasks"], "/tasks")
    return json_response({"tasks": tasks}, 201)


@endpoint("/tasks", "GET")
async def list_tasks(call: Call) -> Response:
    p = call.params
    flt = TaskFilter(
        tenant=call.tenant,  # P-TEN-3
        statuses=tuple(dict.fromkeys(p.get("status", []))),
        handler_name=p.get("handler_name"),
        queue_name=p.get("queue_name"),
        worker_id=p.get("worker_id"),
        created_after=parse(p["created_after"]) if "created_after" in p else None,
        created_before=parse(p["created_before"]) if "created_before" in p else None,
        instance_id=p.get("instance_id"),  # P-WF-4
    )
    for name in ("created_after", "created_before"):
        if name in p and getattr(flt, name) is None:
            raise Problem(
                "validation_error",
                f"{name} must be an RFC 3339 date-time",
                errors=[{"pointer": f"#/query/{name}", "detail": "must be an RFC 3339 date-time"}],
            )
    page = await _engine(call).tasks.list(flt, p.get("limit", 50), p.get("cursor"))
    return json_response(page)


@endpoint("/tasks/{task_id}", "GET")
async def get_task(call: Call) -> Response:
    engine = _engine(call)
    wait_ms = min(call.params.get("wait_ms", 0), engine.settings.max_wait_ms)  # P-WF-9
    return json_response(
        await engine.tasks.wait_final(call.tenant, call.params["task_id"], wait_ms)
    )


@endpoint("/tasks/{task_id}/cancel", "POST", "TaskCancellation")
async def cancel_task(call: Call) -> Response:
    task = await _engine(call).tasks.cancel(
        call.tenant, call.params["task_id"], call.body.get("reason")
    )
    return json_response(task)


@endpoint("/tasks/{task_id}/retry", "POST", "TaskRetry")
async def retry_task(call: Call) -> Response:
    return json_response(
        await _engine(call).tasks.retry(call.tenant, call.params["task_id"], call.body)
    )


@endpoint("/tasks/{task_id}/complete", "POST", "ManualCompletion")
async def complete_task_manually(call: Call) -> Response:
    task = await _engine(call).tasks.resolve_manually(
        call.tenant, call.params["task_id"], "completed", call.body
    )
    return json_response(task)


@endpoint("/tasks/{task_id}/fail", "POST", "ManualFailure", body_required=True)
async def fail_task_manually(call: Call) -> Response:
    task = await _engine(call).tasks.resolve_manually(
        call.tenant, call.params["task_id"], "failed", call.body
    )
    return json_response(task)


@endpoint("/tasks/{task_id}/attempts", "GET")
async def list_task_attempts(call: Call) -> Response:
    return json_response(await _engine(call).tasks.attempts(call.tenant, call.params["task_id"]))


@endpoint("/workers/tasks/poll", "POST", "PollOptions")
async def poll_task(call: Call) -> Response:
    engine = _engine(call)
    _check_open(engine)
    tasks = await engine.leases.poll(
        call.tenant, call.body, 1, lambda: _disconnected(call.request), call.confined
    )
    if not tasks:
        return Response(status_code=204)  # P-POLL-1
    return json_response(tasks[0])


@endpoint("/workers/tasks/poll/batch", "POST", "PollBatchOptions")
async def poll_tasks(call: Call) -> Response:
    engine = _engine(call)
    _check_open(engine)
    size = int(call.body.get("batch_size", 10))
    tasks = await engine.leases.poll(
        call.tenant, call.body, size, lambda: _disconnected(call.request), call.confined
    )
    return json_response({"tasks": tasks, "next_poll_after_ms": 0})  # P-POLL-5


@endpoint("/workers/tasks/{task_id}/complete", "POST", "TaskCompletion")
async def complete_task(call: Call) -> Response:
    return json_response(
        await _engine(call).leases.complete(
            call.tenant, call.params["task_id"], call.body, call.confined
        )
    )


@endpoint("/workers/tasks/{task_id}/fail", "POST", "TaskFailureReport", body_required=True)
async def fail_task(call: Call) -> Response:
    return json_response(
        await _engine(call).leases.fail(
            call.tenant, call.params["task_id"], call.body, call.confined
        )
    )


@endpoint("/workers/tasks/{task_id}/heartbeat", "POST", "TaskHeartbeat")
async def heartbeat_task(call: Call) -> Response:
    return json_response(
        await _engine(call).leases.heartbeat(
            call.tenant, call.params["task_id"], call.body, call.confined
        )
    )


@endpoint("/workers/tasks/{task_id}/release", "POST", "TaskRelease")
async def release_task(call: Call) -> Response:
    return json_response(
        await _engine(call).leases.release(
            call.tenant, call.params["task_id"], call.body, call.confined
        )
    )


@endpoint("/workers/tasks/complete/batch", "POST", "TaskCompletionBatch", body_required=True)
async def complete_tasks(call: Call) -> Response:
    leases = _engine(call).leases
    return json_response(
        await leases.complete_batch(call.tenant, call.body["items"], call.confined)
    )


@endpoint("/workers/tasks/fail/batch", "POST", "TaskFailureBatch", body_required=True)
async def fail_tasks(call: Call) -> Response:
    leases = _engine(call).leases
    return json_response(await leases.fail_batch(call.tenant, call.body["items"], call.confined))


operations = [
    ("POST", "/tasks", enqueue_task),
    ("GET", "/tasks", list_tasks),
    ("POST", "/tasks/batch", enqueue_tasks),
    ("GET", "/tasks/{task_id}", get_task),
    ("POST", "/tasks/{task_id}/cancel", cancel_task),
    ("POST", "/tasks/{task_id}/retry", retry_task),
    ("GET", "/tasks/{task_id}/attempts", list_task_attempts),
    ("POST", "/tasks/{task_id}/complete", complete_task_manually),
    ("POST", "/tasks/{task_id}/fail", fail_task_manually),
    ("POST", "/workers/tasks/poll", poll_task),
    ("POST", "/workers/tasks/poll/batch", poll_tasks),
    ("POST", "/workers/tasks/complete/batch", complete_tasks),
    ("POST", "/workers/tasks/fail/batch", fail_tasks),
    ("POST", "/workers/tasks/{task_id}/complete", complete_task),
    ("POST", "/workers/tasks/{task_id}/fail", fail_task),
    ("POST", "/workers/tasks/{task_id}/heartbeat", heartbeat_task),
    ("POST", "/workers/tasks/{task_id}/release", release_task),
]
