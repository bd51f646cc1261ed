"""The handler table of the raw-HTTP adapter (conformance/README.md, "The handler table").

Stdlib only; a handler gets the adapter's task context (`ctx`), which offers `params`,
`attempt`, `checkpoint`, `cancelled`, `pause(ms)`, `heartbeat(progress, checkpoint)`,
`emit(event, **fields)` and `output(**extra)`.
"""

from __future__ import annotations

import contextlib
import os
import time


class Retryable(Exception):
    def __init__(self, message: str, retry_after_ms=None, code="retryable_error", details=None, checkpoint=None):
        super().__init__(message)
        self.retry_after_ms, self.code, self.details, self.checkpoint = retry_after_ms, code, details, checkpoint


class Permanent(Exception):
    def __init__(self, message: str, code="permanent_error", details=None, checkpoint=None):
        super().__init__(message)
        self.code, self.details, self.checkpoint = code, details, checkpoint


class HeartbeatRefused(Exception):
    """409 on the task's heartbeat: `code` is lease_lost or task_cancelled (P-SDK-19)."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def slow(ctx) -> dict:
    duration, every, start = ctx.params.get("duration_ms", 2000), ctx.params.get("heartbeat_ms", 200), time.monotonic()
    while (elapsed := (time.monotonic() - start) * 1000) < duration:
        with contextlib.suppress(HeartbeatRefused):  # the signal has fired; pause() reports it
            ctx.heartbeat(progress={"elapsed_ms": int(elapsed)})
        if ctx.pause(min(every, duration - elapsed)):
            return ctx.output(cancelled=True)
    return ctx.output(slow_ms=duration)


def stall(ctx) -> dict:
    if ctx.attempt <= ctx.params.get("stall_attempts", 1):
        time.sleep(ctx.params.get("stall_ms", 5000) / 1000)
        return ctx.output(stalled=True)
    ctx.pause(ctx.params.get("after_ms", 0))
    return ctx.output(stalled=False)


def checkpoint(ctx) -> dict:
    if ctx.checkpoint is None:
        ctx.heartbeat(checkpoint={"step": 1, "saved_by_attempt": ctx.attempt})
        raise Retryable("checkpoint: saved one")
    return ctx.output(checkpoint=ctx.checkpoint)


def retryable_with_checkpoint(ctx) -> dict:
    if ctx.checkpoint is None:
        saved = {"step": 1, "saved_by_attempt": ctx.attempt}
        raise Retryable("retryable_with_checkpoint", code="checkpointed", details={"step": 1}, checkpoint=saved)
    return ctx.output(checkpoint=ctx.checkpoint)


def heartbeat_after_cancel(ctx) -> dict:
    if ctx.attempt > ctx.params.get("lose_attempts", 1):
        return ctx.output(heartbeat_errors=0)
    deadline = time.monotonic() + ctx.params.get("timeout_ms", 10000) / 1000
    while time.monotonic() < deadline:
        time.sleep(ctx.params.get("every_ms", 200) / 1000)  # deaf to the signal: only the heartbeat tells
        try:
            ctx.heartbeat(progress={"alive": True})
        except HeartbeatRefused as err:
            ctx.emit("heartbeat_error", error=err.code, signal_fired=ctx.cancelled.is_set())
            ctx.pause(0)
            raise
    return ctx.output(timed_out=True)


def non_json_output(ctx) -> dict:
    kind = ctx.params.get("kind", "nan")
    if kind == "cycle":
        loop: dict = {"handler": ctx.handler_name}
        loop["self"] = loop
        return loop
    return ctx.output(value=float("inf") if kind == "infinity" else float("nan"))


def huge_output(ctx) -> dict:
    ctx.pause(ctx.params.get("sleep_ms", 0))
    return ctx.output(echo=ctx.params, blob="x" * ctx.params.get("bytes", 200000))


def deep_output(ctx) -> dict:
    """An output nested `depth` objects deep: depth 1 is {"d": 0} (P-ERR-5, P-SDK-15)."""
    ctx.pause(ctx.params.get("sleep_ms", 0))
    value: object = 0
    for _ in range(ctx.params["depth"]):
        value = {"d": value}
    return value  # type: ignore[return-value]


def huge_error(ctx) -> dict:
    """A typed error with a message, details and checkpoint as large as asked (P-SDK-27)."""
    p = ctx.params
    message = "x" * p["message_bytes"] if "message_bytes" in p else "huge error"
    details = {"blob": "y" * p["details_bytes"]} if "details_bytes" in p else None
    saved = {"blob": "z" * p["checkpoint_bytes"]} if "checkpoint_bytes" in p else None
    raise (Retryable if p.get("retryable") else Permanent)(message, details=details, checkpoint=saved)


def fail_always(ctx) -> dict:
    typed = {k: ctx.params[k] for k in ("code", "details") if k in ctx.params}
    if ctx.params.get("permanent"):  # the SDK adapters' messages: a catch block reads it (workflow-try-catch)
        raise Permanent("fail_always: permanent failure", **typed)
    raise Retryable("fail_always: retryable failure", **typed)


def echo(ctx) -> dict:
    ctx.pause(ctx.params.get("sleep_ms", 0))
    return ctx.output(echo=ctx.params)


def echo_context(ctx) -> dict:
    """A workflow step: its params (references resolved) and its context (P-WF-4)."""
    ctx.pause(ctx.params.get("sleep_ms", 0))
    return ctx.output(echo=ctx.params, context=ctx.context)


def fail_once(ctx) -> dict:
    if ctx.attempt == 1:
        raise Retryable("fail_once")
    return ctx.output()


def retry_after(ctx) -> dict:
    if ctx.attempt == 1:
        raise Retryable("retry_after", ctx.params.get("retry_after_ms", 1000))
    return ctx.output()


def echo_trace(ctx) -> dict:
    """The task's trace context as received (P-TEL-1); without a tracer there is no current span."""
    headers = ctx.headers
    return ctx.output(traceparent=headers.get("traceparent"), tracestate=headers.get("tracestate"),
                      trace_id=None, parent_span_id=None)  # fmt: skip


TABLE = {
    "echo": echo,
    "fail_once": fail_once,
    "fail_always": fail_always,
    "unhandled": lambda ctx: 1 / 0,
    "slow": slow,
    "stall": stall,
    "crash": lambda ctx: os._exit(3) if ctx.attempt <= ctx.params.get("crash_attempts", 1) else ctx.output(),
    "wait_for_cancel": lambda ctx: ctx.output(cancelled=ctx.pause(ctx.params.get("timeout_ms", 30000))),
    "checkpoint": checkpoint,
    "retry_after": retry_after,
    "non_json_output": non_json_output,
    "huge_output": huge_output,
    "retryable_with_checkpoint": retryable_with_checkpoint,
    "heartbeat_after_cancel": heartbeat_after_cancel,
    "echo_trace": echo_trace,
    "echo_context": echo_context,
    "deep_output": deep_output,
    "huge_error": huge_error,
}
