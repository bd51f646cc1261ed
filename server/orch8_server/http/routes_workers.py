"""Routes of the worker registry, health, metrics and build info."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from starlette.responses import Response

from orch8_server import __version__
from orch8_server._generated import SPEC_SHA256, SPEC_VERSION
from orch8_server.http.endpoint import Call, Endpoint, endpoint, json_response
from orch8_server.lifecycle.engine import Engine
from orch8_server.lifecycle.queues import queue_stats
from orch8_server.problems import Problem

if TYPE_CHECKING:
    from orch8_server._generated.models import ServerInfo


def _engine(call: Call) -> Engine:
    engine: Engine = call.request.app.state.engine
    return engine


@endpoint("/workers", "POST", "WorkerRegistration", body_required=True)
async def register_worker(call: Call) -> Response:
    workers = _engine(call).workers
    return json_response(
        await workers.register(call.tenant, call.body, call.principal.key_id, call.confined)
    )


@endpoint("/workers", "GET")
async def list_workers(call: Call) -> Response:
    return json_response(await _engine(call).workers.list(call.tenant, call.params.get("state")))


@endpoint("/workers/{worker_id}", "GET")
async def get_worker(call: Call) -> Response:
    workers = _engine(call).workers
    return json_response(await workers.get(call.tenant, call.params["worker_id"], call.confined))


@endpoint("/workers/{worker_id}", "DELETE")
async def deregister_worker(call: Call) -> Response:
    return json_response(
        await _engine(call).workers.deregister(call.tenant, call.params["worker_id"], call.confined)
    )


@endpoint("/workers/{worker_id}/heartbeat", "POST", "WorkerHeartbeat")
async def heartbeat_worker(call: Call) -> Response:
    return json_response(
        await _engine(call).workers.heartbeat(
            call.tenant, call.params["worker_id"], call.body, call.principal.key_id, call.confined
        )
    )


def _directive(path: str, directive: str) -> Endpoint:
    @endpoint(path, "POST")
    async def set_directive(call: Call) -> Response:
        return json_response(
            await _engine(call).workers.set_directive(
                call.tenant, call.params["worker_id"], directive
            )
        )

    return set_directive


@endpoint("/health/live", "GET", public=True)
async def get_liveness(call: Call) -> Response:
    return json_response({"status": "ok", "checks": {}})


@endpoint("/health/ready", "GET", public=True)
async def get_readiness(call: Call) -> Response:
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


@endpoint("/metrics", "GET")
async def get_metrics(call: Call) -> Response:
    engine = _engine(call)
    workers = await engine.storage.list_workers(None, None)
    states = Counter((w["tenant"], w["state"]) for w in workers)  # P-TEL-6
    principal = call.principal
    only: set[str] | None = None
    if principal.role == "metrics" and principal.tenants is not None:  # P-TEN-4
        only = {principal.tenant, *principal.tenants}
    tenants = await engine.storage.tenant_names()
    stats = {t: await queue_stats(engine, t, None) for t in tenants if only is None or t in only}
    # Polls parked after an empty claim (a poll still on its first claim is not waiting).
    body = engine.metrics.render(stats, engine.backpressure.sleeping, states, only)
    return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")


@endpoint("/info", "GET")
async def get_server_info(call: Call) -> Response:
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
            "max_attempts": 3,
            "max_batch_size": 100,
        },
    }
    return json_response(info)


operations = [
    ("POST", "/workers", register_worker),
    ("GET", "/workers", list_workers),
    ("GET", "/workers/{worker_id}", get_worker),
    ("DELETE", "/workers/{worker_id}", deregister_worker),
    ("POST", "/workers/{worker_id}/heartbeat", heartbeat_worker),
    ("POST", "/workers/{worker_id}/quiet", _directive("/workers/{worker_id}/quiet", "quiet")),
    ("POST", "/workers/{worker_id}/resume", _directive("/workers/{worker_id}/resume", "running")),
    (
        "POST",
        "/workers/{worker_id}/terminate",
        _directive("/workers/{worker_id}/terminate", "terminate"),
    ),
    ("GET", "/health/live", get_liveness),
    ("GET", "/health/ready", get_readiness),
    ("GET", "/metrics", get_metrics),
    ("GET", "/info", get_server_info),
]
