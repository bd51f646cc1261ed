"""Routes of the worker registry, health, metrics and build info."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from orch8_server import __version__
from orch8_server._generated import SPEC_SHA256, SPEC_VERSION
from orch8_server.http.endpoint import Call, Handler, json_response
from orch8_server.http.operations import operation
from orch8_server.http.validation import schema_property
from orch8_server.lifecycle.admin_views import metrics_page
from orch8_server.lifecycle.engine import Engine
from orch8_server.problems import Problem

if TYPE_CHECKING:
    from orch8_server._generated.models import (
        ServerInfo,
        WorkerDirective,
        WorkerHeartbeat,
        WorkerRegistration,
    )


def _engine(call: Call[Any]) -> Engine:
    engine: Engine = call.request.app.state.engine
    return engine


@operation("registerWorker")
async def register_worker(call: Call[WorkerRegistration]) -> Response:
    workers = _engine(call).workers
    return json_response(
        await workers.register(call.tenant, call.body, call.principal.key_id, call.confined)
    )


@operation("listWorkers")
async def list_workers(call: Call[None]) -> Response:
    return json_response(await _engine(call).workers.list(call.tenant, call.params.get("state")))


@operation("getWorker")
async def get_worker(call: Call[None]) -> Response:
    workers = _engine(call).workers
    return json_response(await workers.get(call.tenant, call.params["worker_id"], call.confined))


@operation("deregisterWorker")
async def deregister_worker(call: Call[None]) -> Response:
    return json_response(
        await _engine(call).workers.deregister(call.tenant, call.params["worker_id"], call.confined)
    )


@operation("heartbeatWorker")
async def heartbeat_worker(call: Call[WorkerHeartbeat]) -> Response:
    return json_response(
        await _engine(call).workers.heartbeat(
            call.tenant, call.params["worker_id"], call.body, call.principal.key_id, call.confined
        )
    )


def _directive(directive: WorkerDirective) -> Handler:
    async def set_directive(call: Call[None]) -> Response:
        return json_response(
            await _engine(call).workers.set_directive(
                call.tenant, call.params["worker_id"], directive
            )
        )

    return set_directive


quiet_worker = operation("quietWorker")(_directive("quiet"))
resume_worker = operation("resumeWorker")(_directive("running"))
terminate_worker = operation("terminateWorker")(_directive("terminate"))


@operation("getLiveness")
async def get_liveness(call: Call[None]) -> Response:
    return json_response({"status": "ok", "checks": {}})


@operation("getReadiness")
async def get_readiness(call: Call[None]) -> Response:
    engine = _engine(call)
    if engine.draining:
        raise Problem("unavailable", "server is shutting down", headers={"Retry-After": "1"})
    try:
        await engine.storage.ping()
    except Exception as exc:
        raise Problem(
            "unavailable", f"storage unreachable: {exc}", headers={"Retry-After": "1"}
        ) from None
    return json_response({"status": "ok", "checks": {"storage": "ok"}})


@operation("getMetrics")
async def get_metrics(call: Call[None]) -> Response:
    principal = call.principal
    only: set[str] | None = None
    if principal.role == "metrics" and principal.tenants is not None:  # P-TEN-4
        only = {principal.tenant, *principal.tenants}
    engine = _engine(call)
    body = await metrics_page(
        engine.storage, engine.pollers, engine.metrics, engine.backpressure, only
    )
    return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")


@operation("getServerInfo")
async def get_server_info(call: Call[None]) -> Response:
    s = _engine(call).settings
    info: ServerInfo = {
        "name": "orch8-server",
        "version": __version__,
        "spec_version": SPEC_VERSION,
        "spec_sha256": SPEC_SHA256,
        "storage": _engine(call).storage.kind,
        "defaults": {
            "lease_ms": s.lease_ms,
            "wait_ms": s.wait_ms,
            "max_wait_ms": s.max_wait_ms,
            "reaper_interval_ms": s.reaper_interval_ms,
            "heartbeat_interval_ms": s.heartbeat_interval_ms,
            "dead_after_ms": s.dead_after_ms,
            # Deprecated aliases (spec 1.1.0), emitted until the next major version.
            "worker_heartbeat_interval_ms": s.heartbeat_interval_ms,
            "worker_dead_after_ms": s.dead_after_ms,
            "max_attempts": schema_property("RetryPolicy", "max_attempts")["default"],
            "max_batch_size": schema_property("PollBatchOptions", "batch_size")["maximum"],
        },
    }
    return json_response(info)
