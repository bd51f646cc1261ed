"""A worker module for the CLI tests: `orch8 worker tests.integration.app_worker:worker`."""

from __future__ import annotations

import os

from orch8 import TaskContext, Worker

worker = Worker(worker_id=os.environ.get("APP_WORKER_ID"), wait_ms=30000, grace_period_ms=10000)


@worker.handler("echo")
def echo(ctx: TaskContext) -> dict:
    return {"echo": ctx.params}


@worker.handler("sleepy")
def sleepy(ctx: TaskContext) -> str:
    print(f"handler started {ctx.id}", flush=True)  # the CLI tests wait for this line
    cancelled = ctx.cancelled.wait(float(ctx.params.get("seconds", 1)))
    return "cancelled" if cancelled else "slept"


@worker.handler("deaf")
def deaf(ctx: TaskContext) -> str:
    """Busy and deaf to its cancellation signal, like the handler in issue 13 (P-SDK-17)."""
    import time

    print(f"handler started {ctx.id}", flush=True)

    time.sleep(float(ctx.params.get("seconds", 60)))
    return "too late"
