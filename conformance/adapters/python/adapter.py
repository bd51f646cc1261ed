"""Conformance adapter for the Python SDK (package `orch8`).

Builds a `Worker` from the ORCH8_* environment (conformance/README.md, "Adapter contract"),
registers the fixed handler table and prints JSON-line events on stdout.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import threading
import time

from orch8 import Orch8Error, PermanentError, RetryableError, TaskContext, Worker

WORKER_ID = os.environ["ORCH8_WORKER_ID"]
_out = threading.Lock()


def emit(event: str, ctx: TaskContext | None = None, **fields) -> None:
    record = {"event": event, "t": int(time.time() * 1000), "worker_id": WORKER_ID}
    if ctx is not None:
        record.update(task_id=ctx.id, handler=ctx.handler_name, attempt=ctx.attempt)
    record.update(fields)
    with _out:
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()


def output(ctx: TaskContext, **extra) -> dict:
    return {"handler": ctx.handler_name, "attempt": ctx.attempt, "worker_id": WORKER_ID, **extra}


def pause(ctx: TaskContext, ms: float) -> bool:
    """Sleep up to `ms` unless cancelled; report the cancellation once. True if cancelled."""
    if ctx.cancelled.wait(ms / 1000):
        if not getattr(ctx, "_reported", False):
            ctx._reported = True  # type: ignore[attr-defined]
            emit("cancelled", ctx, reason=ctx.cancel_reason)
        return True
    return False


def echo(ctx: TaskContext) -> dict:
    pause(ctx, ctx.params.get("sleep_ms", 0))
    return output(ctx, echo=ctx.params)


def fail_once(ctx: TaskContext) -> dict:
    if ctx.attempt == 1:
        raise RetryableError("fail_once: the first attempt fails")
    return output(ctx)


def fail_always(ctx: TaskContext) -> dict:
    if ctx.params.get("permanent"):
        raise PermanentError("fail_always: permanent failure")
    raise RetryableError("fail_always: retryable failure")


def unhandled(ctx: TaskContext) -> dict:
    raise RuntimeError("unhandled: an exception the handler did not classify")


def slow(ctx: TaskContext) -> dict:
    duration = ctx.params.get("duration_ms", 2000)
    every = ctx.params.get("heartbeat_ms", 200)
    start = time.monotonic()
    while (elapsed := (time.monotonic() - start) * 1000) < duration:
        # Lease lost or cancelled: ctx.cancelled is set and pause() reports it.
        with contextlib.suppress(Orch8Error):
            ctx.heartbeat(progress={"elapsed_ms": int(elapsed)})
        if pause(ctx, min(every, duration - elapsed)):
            return output(ctx, cancelled=True)
    return output(ctx, slow_ms=duration)


def stall(ctx: TaskContext) -> dict:
    if ctx.attempt <= ctx.params.get("stall_attempts", 1):
        time.sleep(ctx.params.get("stall_ms", 5000) / 1000)  # deaf to cancellation on purpose
        return output(ctx, stalled=True)
    pause(ctx, ctx.params.get("after_ms", 0))
    return output(ctx, stalled=False)


def crash(ctx: TaskContext) -> dict:
    if ctx.attempt <= ctx.params.get("crash_attempts", 1):
        os._exit(3)  # the whole worker process dies mid-task, nothing is cleaned up
    return output(ctx)


def wait_for_cancel(ctx: TaskContext) -> dict:
    return output(ctx, cancelled=pause(ctx, ctx.params.get("timeout_ms", 30000)))


def checkpoint(ctx: TaskContext) -> dict:
    if ctx.checkpoint is None:
        ctx.heartbeat(checkpoint={"step": 1, "saved_by_attempt": ctx.attempt})
        raise RetryableError("checkpoint: saved one, failing so the next attempt gets it")
    return output(ctx, checkpoint=ctx.checkpoint)


def retry_after(ctx: TaskContext) -> dict:
    if ctx.attempt == 1:
        raise RetryableError("retry_after", retry_after=ctx.params.get("retry_after_ms", 1000) / 1000)
    return output(ctx)


HANDLERS = {
    f.__name__: f
    for f in (echo, fail_once, fail_always, unhandled, slow, stall, crash, wait_for_cancel, checkpoint, retry_after)
}


def observed(fn):
    def run(ctx: TaskContext):
        emit("start", ctx)
        result = "error"
        try:
            value = fn(ctx)
            result = "ok"
            return value
        finally:
            emit("end", ctx, result=result)

    return run


def main() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    env = os.environ
    ms = lambda key: int(env[key]) if env.get(key) else None  # noqa: E731
    worker = Worker(
        base_url=env["ORCH8_URL"],
        worker_id=WORKER_ID,
        queue_name=env.get("ORCH8_QUEUE") or None,
        concurrency=ms("ORCH8_CONCURRENCY") or 10,
        grace_period=(ms("ORCH8_GRACE_PERIOD_MS") if env.get("ORCH8_GRACE_PERIOD_MS") else 25000) / 1000,
        heartbeat_interval=ms("ORCH8_HEARTBEAT_INTERVAL_MS") / 1000 if env.get("ORCH8_HEARTBEAT_INTERVAL_MS") else None,
        wait_ms=ms("ORCH8_WAIT_MS") or 30000,
        lease_ms=ms("ORCH8_LEASE_MS"),
    )
    names = [n for n in env.get("ORCH8_HANDLERS", "").split(",") if n] or list(HANDLERS)
    for name in names:
        worker.register(name, observed(HANDLERS[name]))
    emit("ready", sdk="python")
    worker.run()
    emit("stopped")


if __name__ == "__main__":
    main()
