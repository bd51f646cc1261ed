"""Routes of the task API and the worker task API."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from orch8_server.http.endpoint import Call, json_response
from orch8_server.http.operations import operation
from orch8_server.lifecycle.engine import Engine
from orch8_server.lifecycle.explain import waiting
from orch8_server.problems import Problem
from orch8_server.storage.base import TaskFilter
from orch8_server.timefmt import parse

if TYPE_CHECKING:
    from orch8_server._generated.models import (
        ManualCompletion,
        ManualFailure,
        NewTask,
        NewTaskBatch,
        PollBatchOptions,
        PollOptions,
        TaskCancellation,
        TaskCompletion,
        TaskCompletionBatch,
        TaskFailureBatch,
        TaskFailureReport,
        TaskHeartbeat,
        TaskRelease,
        TaskRetry,
    )


def _engine(call: Call[Any]) -> Engine:
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


@operation("enqueueTask")
async def enqueue_task(call: Call[NewTask]) -> Response:
    tasks, created = await _engine(call).tasks.enqueue(call.tenant, [call.body], "")
    return json_response(tasks[0], 201 if created else 200)


@operation("enqueueTasks")
async def enqueue_tasks(call: Call[NewTaskBatch]) -> Response:
    tasks, _ = await _engine(call).tasks.enqueue(call.tenant, call.body["tasks"], "/tasks")
    return json_response({"tasks": tasks}, 201)


@operation("listTasks")
async def list_tasks(call: Call[None]) -> Response:
    p = call.params
    statuses = p.get("status", [])
    if "pending" in statuses:  # P-KEY-6: held tasks are pending on the wire
        statuses = [*statuses, "held"]
    flt = TaskFilter(
        tenant=call.tenant,  # P-TEN-3
        statuses=tuple(dict.fromkeys(statuses)),
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
    page = await _engine(call).tasks.list(flt, p["limit"], p.get("cursor"))
    return json_response(page)


@operation("getTask")
async def get_task(call: Call[None]) -> Response:
    engine = _engine(call)
    wait_ms = min(call.params["wait_ms"], engine.settings.max_wait_ms)  # P-WF-9
    task = await engine.tasks.wait_final(call.tenant, call.params["task_id"], wait_ms)
    task["waiting"] = await waiting(engine.storage, engine.pollers, call.tenant, task)  # P-OBS-7
    return json_response(task)


@operation("cancelTask")
async def cancel_task(call: Call[TaskCancellation]) -> Response:
    task = await _engine(call).tasks.cancel(
        call.tenant, call.params["task_id"], call.body.get("reason")
    )
    return json_response(task)


@operation("retryTask")
async def retry_task(call: Call[TaskRetry]) -> Response:
    return json_response(
        await _engine(call).tasks.retry(call.tenant, call.params["task_id"], call.body)
    )


@operation("completeTaskManually")
async def complete_task_manually(call: Call[ManualCompletion]) -> Response:
    task = await _engine(call).tasks.resolve_manually(
        call.tenant, call.params["task_id"], "completed", call.body
    )
    return json_response(task)


@operation("failTaskManually")
async def fail_task_manually(call: Call[ManualFailure]) -> Response:
    task = await _engine(call).tasks.resolve_manually(
        call.tenant, call.params["task_id"], "failed", call.body
    )
    return json_response(task)


@operation("listTaskAttempts")
async def list_task_attempts(call: Call[None]) -> Response:
    return json_response(await _engine(call).tasks.attempts(call.tenant, call.params["task_id"]))


@operation("pollTask")
async def poll_task(call: Call[PollOptions]) -> Response:
    engine = _engine(call)
    _check_open(engine)
    tasks = await engine.leases.poll(
        call.tenant, call.body, 1, lambda: _disconnected(call.request), call.confined
    )
    if not tasks:
        return Response(status_code=204)  # P-POLL-1
    return json_response(tasks[0])


@operation("pollTasks")
async def poll_tasks(call: Call[PollBatchOptions]) -> Response:
    engine = _engine(call)
    _check_open(engine)
    tasks = await engine.leases.poll(
        call.tenant,
        call.body,
        call.body["batch_size"],
        lambda: _disconnected(call.request),
        call.confined,
    )
    return json_response({"tasks": tasks, "next_poll_after_ms": 0})  # P-POLL-5


@operation("completeTask")
async def complete_task(call: Call[TaskCompletion]) -> Response:
    return json_response(
        await _engine(call).leases.complete(
            call.tenant, call.params["task_id"], call.body, call.confined
        )
    )


@operation("failTask")
async def fail_task(call: Call[TaskFailureReport]) -> Response:
    return json_response(
        await _engine(call).leases.fail(
            call.tenant, call.params["task_id"], call.body, call.confined
        )
    )


@operation("heartbeatTask")
async def heartbeat_task(call: Call[TaskHeartbeat]) -> Response:
    return json_response(
        await _engine(call).leases.heartbeat(
            call.tenant, call.params["task_id"], call.body, call.confined
        )
    )


@operation("releaseTask")
async def release_task(call: Call[TaskRelease]) -> Response:
    return json_response(
        await _engine(call).leases.release(
            call.tenant, call.params["task_id"], call.body, call.confined
        )
    )


@operation("completeTasks")
async def complete_tasks(call: Call[TaskCompletionBatch]) -> Response:
    leases = _engine(call).leases
    return json_response(
        await leases.complete_batch(call.tenant, call.body["items"], call.confined)
    )


@operation("failTasks")
async def fail_tasks(call: Call[TaskFailureBatch]) -> Response:
    leases = _engine(call).leases
    return json_response(await leases.fail_batch(call.tenant, call.body["items"], call.confined))
