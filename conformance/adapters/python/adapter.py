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

import tracing
from orch8 import (
    LeaseLostError,
    Orch8Error,
    PermanentError,
    RetryableError,
    TaskCancelledError,
    TaskContext,
    Worker,
    Yield,
)

# Unset: the SDK's default id (P-SDK-21); main() replaces it with the worker's own.
WORKER_ID = os.environ.get("ORCH8_WORKER_ID")
_out = threading.Lock()


def emit(event: str, ctx: TaskContext | None = None, **fields) -> None:
    record = {"event": event, "t": int(time.time() * 1000), "worker_id": WORKER_ID}
    if ctx is not None:
        record.update(task_id=ctx.id, handler=ctx.handler_name, attempt=ctx.attempt)
    record.update(fields)
    with _out:
        sys.stdout.write(json.dumps(record, default=str) + "\n")
        sys.stdout.flush()


_RECORD_KEYS = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class LogEvents(logging.Handler):
    """Reports each line of the `orch8` logger as a `log` event with its fields (P-SDK-31)."""

    def emit(self, record: logging.LogRecord) -> None:
        fields = {k: v for k, v in vars(record).items() if k not in _RECORD_KEYS}
        emit("log", level=record.levelname.lower(), message=record.getMessage(), fields=fields)


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


def echo_context(ctx: TaskContext) -> dict:
    """A workflow step: its params (references resolved) and its context (P-WF-4)."""
    pause(ctx, ctx.params.get("sleep_ms", 0))
    return output(ctx, echo=ctx.params, context=ctx.context)


def fail_once(ctx: TaskContext) -> dict:
    if ctx.attempt == 1:
        raise RetryableError("fail_once: the first attempt fails")
    return output(ctx)


def fail_always(ctx: TaskContext) -> dict:
    typed = {k: ctx.params[k] for k in ("code", "details") if k in ctx.params}  # P-SDK-20
    if ctx.params.get("permanent"):
        raise PermanentError("fail_always: permanent failure", **typed)
    raise RetryableError("fail_always: retryable failure", **typed)


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
        raise RetryableError("retry_after", retry_after_ms=ctx.params.get("retry_after_ms", 1000))
    return output(ctx)


def non_json_output(ctx: TaskContext) -> dict:
    """An output strict JSON cannot encode (P-SDK-15): NaN, Infinity or a cycle."""
    kind = ctx.params.get("kind", "nan")
    if kind == "cycle":
        loop: dict = {"handler": ctx.handler_name}
        loop["self"] = loop
        return loop
    return output(ctx, value=float("inf") if kind == "infinity" else float("nan"))


def huge_output(ctx: TaskContext) -> dict:
    pause(ctx, ctx.params.get("sleep_ms", 0))
    return output(ctx, echo=ctx.params, blob="x" * ctx.params.get("bytes", 200000))


def deep_output(ctx: TaskContext) -> dict:
    """An output nested `depth` objects deep: depth 1 is {"d": 0} (P-ERR-5, P-SDK-15)."""
    pause(ctx, ctx.params.get("sleep_ms", 0))
    value: object = 0
    for _ in range(ctx.params["depth"]):
        value = {"d": value}
    return value  # type: ignore[return-value]


def huge_error(ctx: TaskContext) -> dict:
    """A typed error with a message, details and checkpoint as large as asked (P-SDK-27)."""
    p = ctx.params
    message = "x" * p["message_bytes"] if "message_bytes" in p else "huge error"
    details = {"blob": "y" * p["details_bytes"]} if "details_bytes" in p else None
    saved = {"blob": "z" * p["checkpoint_bytes"]} if "checkpoint_bytes" in p else None
    if p.get("retryable"):
        raise RetryableError(message, details=details, checkpoint=saved)
    raise PermanentError(message, details=details, checkpoint=saved)


def retryable_with_checkpoint(ctx: TaskContext) -> dict:
    if ctx.checkpoint is None:
        saved = {"step": 1, "saved_by_attempt": ctx.attempt}
        raise RetryableError("retryable_with_checkpoint", code="checkpointed", details={"step": 1}, checkpoint=saved)
    return output(ctx, checkpoint=ctx.checkpoint)


def yield_checkpoint(ctx: TaskContext) -> dict:
    """Yields (P-SDK-32) until the checkpoint counts `yields` of them, then returns it."""
    done = (ctx.checkpoint or {}).get("yields", 0)
    if done < ctx.params.get("yields", 2):
        raise Yield(checkpoint={"yields": done + 1, "saved_by_attempt": ctx.attempt})
    return output(ctx, checkpoint=ctx.checkpoint)


def heartbeat_after_cancel(ctx: TaskContext) -> dict:
    """Deaf to the signal; only its own heartbeat can learn of a cancel or lost lease (P-SDK-19)."""
    if ctx.attempt > ctx.params.get("lose_attempts", 1):
        return output(ctx, heartbeat_errors=0)
    deadline = time.monotonic() + ctx.params.get("timeout_ms", 10000) / 1000
    while time.monotonic() < deadline:
        time.sleep(ctx.params.get("every_ms", 200) / 1000)
        try:
            ctx.heartbeat(progress={"alive": True})
        except (LeaseLostError, TaskCancelledError) as err:
            code = "task_cancelled" if isinstance(err, TaskCancelledError) else "lease_lost"
            emit("heartbeat_error", ctx, error=code, signal_fired=ctx.cancelled.is_set())
            pause(ctx, 0)
            raise
    return output(ctx, timed_out=True)


def echo_trace(ctx: TaskContext) -> dict:
    """The trace context as received (P-TEL-1) and the current span's ids (P-TEL-3)."""
    trace_id, parent_span_id = tracing.current_span_ids()
    headers = ctx.headers or {}
    return output(
        ctx,
        traceparent=headers.get("traceparent"),
        tracestate=headers.get("tracestate"),
        trace_id=trace_id,
        parent_span_id=parent_span_id,
    )


HANDLERS = {
    f.__name__: f
    for f in (
        echo,
        fail_once,
        fail_always,
        unhandled,
        slow,
        stall,
        crash,
        wait_for_cancel,
        checkpoint,
        retry_after,
        non_json_output,
        huge_output,
        retryable_with_checkpoint,
        heartbeat_after_cancel,
        echo_trace,
        echo_context,
        deep_output,
        huge_error,
        yield_checkpoint,
    )
}
HANDLERS.update({f"extra_{i}": echo for i in range(1, int(os.environ.get("ORCH8_EXTRA_HANDLERS") or 0) + 1)})
HANDLERS["video_renderer"] = echo_context  # seed 000's step JSON, verbatim (workflow-block-step)


def report_hooks(worker: Worker) -> None:
    """Every hook becomes a `hook` event; outcomes are followed by a `stats` event (P-SDK-11)."""

    def stats() -> None:
        emit("stats", stats=worker.stats().as_dict())

    def hook(name: str, **fields) -> None:
        emit("hook", hook=name, **fields)

    def raising(fn):
        """ORCH8_HOOKS_RAISE: every hook raises after reporting (P-SDK-11: logged and ignored)."""
        if not os.environ.get("ORCH8_HOOKS_RAISE"):
            return fn

        def run(e) -> None:
            fn(e)
            raise RuntimeError("conformance: this hook raises on purpose")

        return run

    worker.on_poll(raising(lambda e: hook("poll", claimed=e.claimed, duration_ms=e.duration_ms)))
    worker.on_task_start(raising(lambda e: hook("task_start", task_id=e.task.id)))
    worker.on_task_complete(
        raising(lambda e: (hook("task_complete", task_id=e.task.id, duration_ms=e.duration_ms), stats()))
    )
    worker.on_task_fail(
        raising(
            lambda e: (
                hook("task_fail", task_id=e.task.id, code=e.code, retryable=e.retryable, duration_ms=e.duration_ms),
                stats(),
            )
        )
    )
    worker.on_task_abandoned(raising(lambda e: (hook("task_abandoned", task_id=e.task.id, reason=e.reason), stats())))
    worker.on_error(raising(lambda e: hook("error", operation=e.operation, error=repr(e.error))))


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


def pairs(raw: str | None) -> dict[str, str] | None:
    """ORCH8_QUEUE_WEIGHTS / ORCH8_LABELS: `k=v,k=v` into a dict; unset is None."""
    return dict(item.split("=", 1) for item in raw.split(",") if item) if raw else None


def build(env, telemetry=None) -> Worker:
    """The Worker of the ORCH8_* settings; a ValueError for options P-SDK-23 refuses."""
    ms = lambda key: int(env[key]) if env.get(key) else None  # noqa: E731
    weights = pairs(env.get("ORCH8_QUEUE_WEIGHTS"))
    return Worker(  # no base_url / api_key: the SDK reads ORCH8_URL and ORCH8_API_KEY (P-SDK-1)
        worker_id=WORKER_ID,
        queue_name=env.get("ORCH8_QUEUE") or None,
        queue_names=env["ORCH8_QUEUE_NAMES"].split(",") if env.get("ORCH8_QUEUE_NAMES") else None,
        queue_weights={k: int(v) for k, v in weights.items()} if weights is not None else None,
        labels=pairs(env.get("ORCH8_LABELS")),
        concurrency=ms("ORCH8_CONCURRENCY") or 10,
        grace_period_ms=ms("ORCH8_GRACE_PERIOD_MS") or 25000,
        heartbeat_interval_ms=ms("ORCH8_HEARTBEAT_INTERVAL_MS"),
        wait_ms=ms("ORCH8_WAIT_MS") or 30000,
        lease_ms=ms("ORCH8_LEASE_MS"),
        **({"telemetry": telemetry} if telemetry is not None else {}),  # P-TEL-3 (ORCH8_TELEMETRY)
    )


def wait_instance(env) -> None:
    """ORCH8_WAIT_INSTANCE: the client's wait_instance on that id, in a thread (P-SDK-25).

    Reports `waited` (the final status) or `wait_timeout` (the last status seen)."""
    instance_id = env.get("ORCH8_WAIT_INSTANCE")
    if not instance_id:
        return
    timeout_ms = int(env.get("ORCH8_WAIT_TIMEOUT_MS") or 300000)

    def run() -> None:
        from orch8 import Orch8Client, WaitTimeoutError

        try:
            final = Orch8Client().wait_instance(instance_id, timeout_ms=timeout_ms)
            emit("waited", instance_id=instance_id, status=str(final.status))
        except WaitTimeoutError as err:
            last = getattr(err.last_state, "status", None)
            emit("wait_timeout", instance_id=instance_id, last_status=None if last is None else str(last))
        except Exception as err:  # reported: the scenario judges it
            emit("wait_error", instance_id=instance_id, error=repr(err))

    threading.Thread(target=run, daemon=True).start()


def main() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    logging.getLogger("orch8").addHandler(LogEvents())
    env = os.environ
    global WORKER_ID
    telemetry, provider = tracing.build()
    try:
        worker = build(env, telemetry)
    except ValueError as err:  # P-SDK-23: the SDK refuses the options before any request
        sys.exit(f"orch8 Worker refused its options: {err}")
    WORKER_ID = worker.worker_id
    names = [n for n in env.get("ORCH8_HANDLERS", "").split(",") if n] or list(HANDLERS)
    names += [n for n in HANDLERS if n.startswith("extra_") and n not in names]
    for name in names:
        worker.register(name, observed(HANDLERS[name]))
    report_hooks(worker)
    emit("ready", sdk="python", tracing=telemetry is not None, logs=True)
    wait_instance(env)
    try:
        worker.run()
    except Orch8Error as err:  # P-SDK-28: a registration refused for good ends run() at once
        sys.exit(f"orch8 worker stopped: {err}")
    emit("stopped", stats=worker.stats().as_dict())
    if provider is not None:
        provider.shutdown()  # exports the spans still batched (the end-to-end trace test)


if __name__ == "__main__":
    main()
