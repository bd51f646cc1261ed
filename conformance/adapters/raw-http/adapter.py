#!/usr/bin/env python3
"""A foreign conformance adapter in plain Python: stdlib only, raw HTTP, no SDK.

It shows what an adapter for a new SDK must do (conformance/README.md): read the ORCH8_*
settings, run the handler table, print JSON-line events. Its worker loop is deliberately
small: batch polls for free slots, one worker heartbeat per interval (lease loss, cancel,
quiet/terminate directives), results sent with the lease id and re-sent while the server
is unreachable, and a graceful SIGTERM. Run it with:

    .venv/bin/python -m orch8_conformance run --adapter "python3 adapters/raw-http/adapter.py"
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request

env = os.environ
URL = env.get("ORCH8_URL", "http://localhost:3001").rstrip("/")
WORKER_ID = env["ORCH8_WORKER_ID"]
CONCURRENCY = int(env.get("ORCH8_CONCURRENCY") or 10)
GRACE_S = int(env.get("ORCH8_GRACE_PERIOD_MS") or 25000) / 1000
QUEUE = env.get("ORCH8_QUEUE") or None
WAIT_MS = 5000  # long-poll budget; a signal aborts the poll in flight

held: dict[str, Ctx] = {}  # task id -> the running attempt
held_lock = threading.Lock()
out_lock = threading.Lock()
stopping = threading.Event()
quiet = {"signal": False, "directive": False}  # SIGTSTP and a quiet directive are separate reasons
polling = threading.Event()  # set while the main thread waits in a long-poll


class PollAborted(Exception):
    """Raised by the signal handler to abort the long-poll at once (P-SDK-7, P-SDK-8)."""


def call(method: str, path: str, body: dict | None = None, timeout: float = 10) -> tuple[int, dict | None]:
    """One request; (status, JSON body). Network failures raise OSError."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(URL + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            raw = res.read()
            return res.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as err:
        raw = err.read()
        return err.code, json.loads(raw) if raw else None


def emit(event: str, ctx: Ctx | None = None, **fields) -> None:
    record = {"event": event, "t": int(time.time() * 1000), "worker_id": WORKER_ID}
    if ctx is not None:
        record.update(task_id=ctx.id, handler=ctx.handler_name, attempt=ctx.attempt)
    with out_lock:
        print(json.dumps({**record, **fields}), flush=True)


class Retryable(Exception):
    def __init__(self, message: str, retry_after_ms: int | None = None) -> None:
        super().__init__(message)
        self.retry_after_ms = retry_after_ms


class Permanent(Exception):
    pass


class Ctx:
    """One claimed attempt, as a handler sees it."""

    def __init__(self, task: dict) -> None:
        self.task = task
        self.id, self.handler_name, self.attempt = task["id"], task["handler_name"], task["attempt"]
        self.params, self.checkpoint, self.lease_id = task["params"], task.get("checkpoint"), task["lease"]["id"]
        self.cancelled = threading.Event()
        self.reported = False

    def heartbeat(self, progress=None, checkpoint=None) -> None:
        body = {"lease_id": self.lease_id, "progress": progress}
        if checkpoint is not None:
            body["checkpoint"] = checkpoint
        try:
            status, _ = call("POST", f"/workers/tasks/{self.id}/heartbeat", body)
        except OSError:
            return
        if status == 409:  # lease_lost or task_cancelled
            self.cancelled.set()

    def pause(self, ms: float) -> bool:
        if self.cancelled.wait(ms / 1000):
            if not self.reported:
                self.reported = True
                emit("cancelled", self)
            return True
        return False


def output(ctx: Ctx, **extra) -> dict:
    return {"handler": ctx.handler_name, "attempt": ctx.attempt, "worker_id": WORKER_ID, **extra}


def slow(ctx: Ctx) -> dict:
    duration, every, start = ctx.params.get("duration_ms", 2000), ctx.params.get("heartbeat_ms", 200), time.monotonic()
    while (elapsed := (time.monotonic() - start) * 1000) < duration:
        ctx.heartbeat(progress={"elapsed_ms": int(elapsed)})
        if ctx.pause(min(every, duration - elapsed)):
            return output(ctx, cancelled=True)
    return output(ctx, slow_ms=duration)


def stall(ctx: Ctx) -> dict:
    if ctx.attempt <= ctx.params.get("stall_attempts", 1):
        time.sleep(ctx.params.get("stall_ms", 5000) / 1000)
        return output(ctx, stalled=True)
    ctx.pause(ctx.params.get("after_ms", 0))
    return output(ctx, stalled=False)


def checkpoint(ctx: Ctx) -> dict:
    if ctx.checkpoint is None:
        ctx.heartbeat(checkpoint={"step": 1, "saved_by_attempt": ctx.attempt})
        raise Retryable("checkpoint: saved one")
    return output(ctx, checkpoint=ctx.checkpoint)


def fail_always(ctx: Ctx) -> dict:
    raise (Permanent if ctx.params.get("permanent") else Retryable)("fail_always")


def echo(ctx: Ctx) -> dict:
    ctx.pause(ctx.params.get("sleep_ms", 0))
    return output(ctx, echo=ctx.params)


def fail_once(ctx: Ctx) -> dict:
    if ctx.attempt == 1:
        raise Retryable("fail_once")
    return output(ctx)


def retry_after(ctx: Ctx) -> dict:
    if ctx.attempt == 1:
        raise Retryable("retry_after", ctx.params.get("retry_after_ms", 1000))
    return output(ctx)


HANDLERS = {
    "echo": echo,
    "fail_once": fail_once,
    "fail_always": fail_always,
    "unhandled": lambda ctx: 1 / 0,
    "slow": slow,
    "stall": stall,
    "crash": lambda ctx: os._exit(3) if ctx.attempt <= ctx.params.get("crash_attempts", 1) else output(ctx),
    "wait_for_cancel": lambda ctx: output(ctx, cancelled=ctx.pause(ctx.params.get("timeout_ms", 30000))),
    "checkpoint": checkpoint,
    "retry_after": retry_after,
}
NAMES = [n for n in env.get("ORCH8_HANDLERS", "").split(",") if n] or list(HANDLERS)


def report(ctx: Ctx, kind: str, body: dict) -> None:
    """complete or fail with the lease id, re-sent while the server is unreachable."""
    body["lease_id"] = ctx.lease_id
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            status, _ = call("POST", f"/workers/tasks/{ctx.id}/{kind}", body)
            if status < 500:
                return  # done, or 409: the lease is gone and nothing is stored
        except OSError:
            pass
        time.sleep(0.5)


def run_task(ctx: Ctx) -> None:
    emit("start", ctx)
    result, kind, body = "error", "fail", {}
    try:
        body, kind, result = {"output": HANDLERS[ctx.handler_name](ctx)}, "complete", "ok"
    except Retryable as err:
        body = {"error": str(err), "retryable": True, "code": "retryable_error"}
        if err.retry_after_ms is not None:
            body["retry_after_ms"] = err.retry_after_ms
    except Permanent as err:
        body = {"error": str(err), "retryable": False, "code": "permanent_error"}
    except Exception as err:
        body = {"error": repr(err), "retryable": True, "code": "unhandled_error"}
    emit("end", ctx, result=result)
    if not ctx.cancelled.is_set():
        report(ctx, kind, body)
    with held_lock:
        held.pop(ctx.id, None)


def heartbeat_loop(interval_s: float) -> None:
    while True:
        time.sleep(interval_s)  # keeps beating during shutdown while tasks are still held
        if stopping.is_set() and not held:
            return
        with held_lock:
            ids = list(held)
        try:
            status, answer = call("POST", f"/workers/{WORKER_ID}/heartbeat", {"active_task_ids": ids})
        except OSError:
            continue
        if status != 200:
            continue
        for item in answer["tasks"]:
            ctx = held.get(item["task_id"])
            if ctx and (item["lease_lost"] or item["cancel_requested"]):
                ctx.cancelled.set()
        was_quiet = quiet["directive"]
        quiet["directive"] = answer["directive"] == "quiet"
        if answer["directive"] == "terminate":
            stopping.set()
        if (stopping.is_set() or (quiet["directive"] and not was_quiet)) and polling.is_set():
            os.kill(os.getpid(), signal.SIGUSR1)  # interrupts the main thread's long-poll


def free_slots() -> int:
    with held_lock:
        return CONCURRENCY - len(held)


def poll_loop() -> None:
    backoff = 0.5
    while not stopping.is_set():
        free = free_slots()
        if quiet["signal"] or quiet["directive"] or free <= 0:
            time.sleep(0.05)
            continue
        body = {"handler_names": NAMES, "worker_id": WORKER_ID, "batch_size": free, "wait_ms": WAIT_MS}
        if QUEUE:
            body["queue_name"] = QUEUE
        try:
            polling.set()
            status, answer = call("POST", "/workers/tasks/poll/batch", body, timeout=WAIT_MS / 1000 + 10)
        except PollAborted:
            continue  # the connection is dropped, so the server claims nothing for it
        except OSError:
            status, answer = 0, None
        finally:
            polling.clear()
        if status != 200:
            time.sleep(backoff)
            backoff = min(backoff * 2, 5.0)
            continue
        backoff = 0.5
        for task in answer["tasks"]:
            ctx = Ctx(task)
            with held_lock:
                held[ctx.id] = ctx
            threading.Thread(target=run_task, args=(ctx,), daemon=True).start()


def shutdown() -> None:
    """Grace period, then cancel and fail leftovers with code shutdown; deregister."""
    deadline = time.monotonic() + GRACE_S
    while held and time.monotonic() < deadline:
        time.sleep(0.05)
    with held_lock:
        leftovers = list(held.values())
    for ctx in leftovers:
        ctx.cancelled.set()
        report(ctx, "fail", {"error": "worker shut down", "retryable": True, "code": "shutdown"})
    with contextlib.suppress(OSError):
        call("DELETE", f"/workers/{WORKER_ID}")


def on_signal(signum, _frame) -> None:
    if signum in (signal.SIGTERM, signal.SIGINT):
        stopping.set()
    elif signum == signal.SIGTSTP:
        quiet["signal"] = True
    elif signum == signal.SIGCONT:
        quiet["signal"] = False
        return
    if polling.is_set():  # signal handlers run on the main thread, the one that polls
        raise PollAborted


def main() -> None:
    registration = {"worker_id": WORKER_ID, "handlers": NAMES, "concurrency": CONCURRENCY, "sdk": "raw-http"}
    if QUEUE:
        registration["queues"] = [QUEUE]
    while True:
        try:
            status, record = call("POST", "/workers", registration)
            if status < 300:
                break
        except OSError:
            pass
        time.sleep(0.5)
    interval = int(env.get("ORCH8_HEARTBEAT_INTERVAL_MS") or record["heartbeat_interval_ms"]) / 1000
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGTSTP, signal.SIGCONT, signal.SIGUSR1):
        signal.signal(signum, on_signal)
    threading.Thread(target=heartbeat_loop, args=(interval,), daemon=True).start()
    emit("ready", sdk="raw-http")
    poll_loop()
    shutdown()
    emit("stopped")


if __name__ == "__main__":
    sys.exit(main())
