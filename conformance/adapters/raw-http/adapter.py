#!/usr/bin/env python3
"""A foreign conformance adapter in plain Python: stdlib only, raw HTTP, no SDK.

It shows what an adapter for a new SDK must do (conformance/README.md): read the ORCH8_*
settings, run the handler table, print JSON-line events. Its worker loop is deliberately
small: batch polls for free slots (at most 100, handler_names in chunks of 50), one worker
heartbeat per interval (lease loss, cancel, quiet/terminate directives), completions sent
group-commit style through complete/batch (split when refused), fails with the lease id,
outages retried with backoff or Retry-After, SIGTERM/SIGINT with a grace period that a
second signal ends, the stats/hook events, and queue lists, weights and labels (queues.py,
refused before any request as P-SDK-23 asks). Run it with:

    .venv/bin/python -m orch8_conformance run --adapter "python3 adapters/raw-http/adapter.py"
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import sys
import threading
import time
import traceback
import urllib.error
import urllib.request

import queues
import waiting
from handlers import TABLE, HeartbeatRefused, Permanent, Retryable

env = os.environ
URL = env.get("ORCH8_URL", "http://localhost:3001").rstrip("/")
API_KEY = env.get("ORCH8_API_KEY")
TENANT = env.get("ORCH8_TENANT")  # sent as X-Tenant-Id on every request (P-SDK-24)
WORKER_ID = env.get("ORCH8_WORKER_ID") or f"{socket.gethostname()}-{os.getpid()}-{os.urandom(4).hex()}"
CONCURRENCY = int(env.get("ORCH8_CONCURRENCY") or 10)
GRACE_S = int(env.get("ORCH8_GRACE_PERIOD_MS") or 25000) / 1000
QUEUES: queues.QueueOptions  # read and checked first thing in main() (P-SDK-23)
WAIT_MS = int(env.get("ORCH8_WAIT_MS") or 5000)  # long-poll budget; a signal aborts the poll in flight
USER_AGENT = "orch8-raw-http/0.1.0"
OUTAGE = (0, 408, 429, 500, 502, 503, 504)  # 0: no answer (refused, reset, timeout)
MAX_BATCH, MAX_NAMES = 100, 50  # the poll schema's limits (P-SDK-13)
POLL_THRESHOLD = (min(CONCURRENCY, MAX_BATCH) + 1) // 2  # P-SDK-26

held: dict[str, Ctx] = {}  # task id -> the running attempt, until its outcome is known
held_lock = threading.Lock()
out_lock = threading.Lock()
stopping = threading.Event()
hurry = threading.Event()  # a second SIGTERM/SIGINT ends the grace period
signals: list[str] = []  # SIGTERM/SIGINT received, in order
quiet = {"signal": False, "directive": False}  # SIGTSTP and a quiet directive are separate reasons
polling = threading.Event()  # set while the main thread waits in a long-poll
# tasks_released stays 0: this adapter neither yields (P-SDK-32) nor skips expired tasks (P-SDK-33).
stats = dict.fromkeys(
    ("tasks_claimed", "tasks_completed", "tasks_failed", "tasks_lease_lost", "tasks_cancelled", "tasks_released"), 0
)
stats.update(polls=0, poll_errors=0)


class PollAborted(Exception):
    """Raised by the signal handler to abort the long-poll at once (P-SDK-7, P-SDK-8)."""


def call(method: str, path: str, body: dict | None = None, timeout: float = 10) -> tuple[int, dict | None, float]:
    """One request; (status, JSON body, Retry-After seconds or 0). Network failures raise OSError."""
    data = None if body is None else json.dumps(body, allow_nan=False).encode()
    req = urllib.request.Request(URL + path, data=data, method=method, headers={"User-Agent": USER_AGENT})
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if API_KEY:
        req.add_header("Authorization", f"Bearer {API_KEY}")
    if TENANT:
        req.add_header("X-Tenant-Id", TENANT)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            raw = res.read()
            return res.status, json.loads(raw) if raw else None, 0.0
    except urllib.error.HTTPError as err:
        raw = err.read()
        try:
            answer = json.loads(raw) if raw else None
        except ValueError:
            answer = None
        retry_after = err.headers.get("Retry-After", "")
        return err.code, answer, float(retry_after) if retry_after.isdigit() else 0.0


def warn(what: str, status: int, answer: dict | None, err: Exception | None = None) -> None:
    """Names the status, code and detail (P-SDK-22, P-SDK-24: `poll failed: HTTP 403 forbidden: ...`)."""
    cause = repr(err) if err else f"HTTP {status} {(answer or {}).get('code')}: {(answer or {}).get('detail')}"
    print(f"warning: {what} failed: {cause}", file=sys.stderr, flush=True)


def pause_after(retry_after: float, backoff: float) -> float:
    """Retry-After (capped at 60 s) plus 0-10% replaces the backoff (P-SDK-16); else full jitter."""
    return min(retry_after, 60) * (1 + random.random() / 10) if retry_after else random.uniform(0, backoff)


def emit(event: str, ctx: Ctx | None = None, **fields) -> None:
    record = {"event": event, "t": int(time.time() * 1000), "worker_id": WORKER_ID}
    if ctx is not None:
        record.update(task_id=ctx.id, handler=ctx.handler_name, attempt=ctx.attempt)
    with out_lock:
        print(json.dumps({**record, **fields}), flush=True)


def fire(hook: str, **payload) -> None:
    """A hook (P-SDK-11): reported as an event; one that raises (ORCH8_HOOKS_RAISE) is logged and ignored."""
    try:
        emit("hook", hook=hook, **payload)
        if env.get("ORCH8_HOOKS_RAISE"):
            raise RuntimeError(f"conformance: hook {hook} raises on purpose")
    except RuntimeError as err:
        print(f"warning: hook {hook} raised {err!r}; ignored", file=sys.stderr, flush=True)


def snapshot() -> dict:
    with held_lock:
        return {**stats, "in_flight": len(held)}


def finish(ctx: Ctx, counter: str, hook: str, **payload) -> None:
    """The task's outcome is known: count it and free its slot in one step (P-SDK-11 invariant)."""
    with held_lock:
        if held.pop(ctx.id, None) is None:
            return
        stats[counter] += 1
    fire(hook, task_id=ctx.id, **payload)
    emit("stats", stats=snapshot())


class Ctx:
    """One claimed attempt, as a handler sees it."""

    def __init__(self, task: dict) -> None:
        self.task = task
        self.id, self.handler_name, self.attempt = task["id"], task["handler_name"], task["attempt"]
        self.params, self.checkpoint, self.lease_id = task["params"], task.get("checkpoint"), task["lease"]["id"]
        self.headers = task.get("headers") or {}  # trace context travels here (P-TEL-1)
        self.context = task.get("context") or {}  # a workflow step's instance_id, step_id (P-WF-4)
        self.cancelled = threading.Event()
        self.reason = "cancelled"
        self.reported = False
        self.reporting = False  # the handler returned: its result is on its way (P-SDK-26)
        self.handed = False  # its completion is with the completer: its slot is free (P-SDK-3)
        self.started = time.monotonic()

    def heartbeat(self, progress=None, checkpoint=None) -> None:
        body = {"lease_id": self.lease_id, "progress": progress}
        if checkpoint is not None:
            body["checkpoint"] = checkpoint
        try:
            status, answer, _ = call("POST", f"/workers/tasks/{self.id}/heartbeat", body)
        except OSError:
            return
        if status == 409:  # lease_lost or task_cancelled
            self.abandon((answer or {}).get("code") == "task_cancelled")
            raise HeartbeatRefused((answer or {}).get("code") or "lease_lost")

    def abandon(self, cancelled: bool) -> None:
        self.reason = "cancelled" if cancelled else "lease_lost"
        self.cancelled.set()

    def pause(self, ms: float) -> bool:
        if self.cancelled.wait(ms / 1000):
            if not self.reported:
                self.reported = True
                emit("cancelled", self, reason=self.reason)
            return True
        return False

    def output(self, **extra) -> dict:
        return {"handler": self.handler_name, "attempt": self.attempt, "worker_id": WORKER_ID, **extra}

    def emit(self, event: str, **fields) -> None:
        emit(event, self, **fields)


HANDLERS = dict(TABLE)
HANDLERS["video_renderer"] = TABLE["echo_context"]  # seed 000's step JSON, verbatim (workflow-block-step)
HANDLERS.update({f"extra_{i}": TABLE["echo"] for i in range(1, int(env.get("ORCH8_EXTRA_HANDLERS") or 0) + 1)})
NAMES = [n for n in env.get("ORCH8_HANDLERS", "").split(",") if n] or list(HANDLERS)
NAMES += [n for n in HANDLERS if n.startswith("extra_") and n not in NAMES]
CHUNKS = [NAMES[i : i + MAX_NAMES] for i in range(0, len(NAMES), MAX_NAMES)]


def result_lease(ctx: Ctx) -> dict:
    """Results carry the attempt's lease id, so a late one cannot land on another attempt (P-SDK-5)."""
    return {"lease_id": ctx.lease_id}


def bounded(body: dict) -> dict:
    """P-SDK-27: `error` over 16,384 bytes of UTF-8 and `details` over 65,536 bytes of JSON are cut."""
    raw = body["error"].encode("utf-8", "replace")
    if len(raw) > 16384:  # `ignore` drops a character cut in two
        body["error"] = raw[:16384].decode("utf-8", "ignore") + f" [truncated from {len(raw)} bytes]"
    text = json.dumps(body.get("details"), ensure_ascii=False, separators=(",", ":")).encode()
    if len(text) > 65536:
        body["details"] = {"truncated": True, "bytes": len(text), "preview": text[:4096].decode("utf-8", "ignore")}
    return body


def fail(ctx: Ctx, body: dict) -> None:
    """fail with the lease id, re-sent through outages; 409 means the lease is gone.

    A report refused with another 4xx goes once more without checkpoint (P-SDK-27); a second refusal
    gives the task up as lease lost.
    """
    body = bounded({**body, **result_lease(ctx)})
    deadline, backoff, refused = time.monotonic() + 30, 0.5, None
    while time.monotonic() < deadline:
        try:
            status, answer, wait = call("POST", f"/workers/tasks/{ctx.id}/fail", body)
        except OSError as err:
            (status, answer, wait), error = (0, None, 0.0), err
        else:
            error = None
        if status == 200:
            return finish(ctx, "tasks_failed", "task_fail", code=body["code"], retryable=body["retryable"],
                          duration_ms=(time.monotonic() - ctx.started) * 1000)  # fmt: skip
        if status == 409:
            return finish(ctx, "tasks_lease_lost", "task_abandoned", reason="lease_lost")
        warn(f"fail of {ctx.id}", status, answer, error)
        fire("error", operation="fail", error=f"HTTP {status}" if not error else repr(error))
        if 400 <= status < 500 and status not in OUTAGE and refused is None:
            refused = {"status": status, "code": (answer or {}).get("code")}
            body = {k: v for k, v in body.items() if k != "checkpoint"} | {"details": {"report_refused": refused}}
            continue
        if status not in OUTAGE:
            print(f"error: fail of {ctx.id} given up: first refused {refused}, then HTTP {status}",
                  file=sys.stderr, flush=True)  # fmt: skip
            break
        time.sleep(pause_after(wait, backoff))
        backoff = min(backoff * 2, 30)
    finish(ctx, "tasks_lease_lost", "task_abandoned", reason="lease_lost")  # undeliverable (P-SDK-9)


class Completer:
    """Group commit (P-SDK-12): one batch in flight; results ready meanwhile go in the next one."""

    def __init__(self) -> None:
        self.ready: list[tuple[Ctx, object]] = []
        self.cond = threading.Condition()
        threading.Thread(target=self.loop, daemon=True).start()

    def add(self, ctx: Ctx, out) -> None:
        with self.cond:
            self.ready.append((ctx, out))
            self.cond.notify()

    def loop(self) -> None:
        while True:
            with self.cond:
                while not self.ready:
                    self.cond.wait()
                items, self.ready = self.ready[:100], self.ready[100:]
            self.send(items)

    def send(self, items: list[tuple[Ctx, object]]) -> None:
        body = {"items": [{"task_id": c.id, "output": o, **result_lease(c)} for c, o in items]}
        deadline, backoff = time.monotonic() + 30, 0.5
        while time.monotonic() < deadline:
            try:
                status, answer, wait = call("POST", "/workers/tasks/complete/batch", body)
            except OSError as err:
                (status, answer, wait), error = (0, None, 0.0), err
            else:
                error = None
            if status == 200:
                for (ctx, _), item in zip(items, answer["items"], strict=True):
                    self.settle(ctx, item)
                return
            warn(f"completion batch of {len(items)}", status, answer, error)
            fire("error", operation="complete", error=f"HTTP {status}" if not error else repr(error))
            if status not in OUTAGE:
                return self.refused(items, status, answer)
            time.sleep(pause_after(wait, backoff))  # re-send: an outage (P-SDK-16)
            backoff = min(backoff * 2, 30)
        for ctx, _ in items:  # still undeliverable: given up as lease lost (P-SDK-9)
            finish(ctx, "tasks_lease_lost", "task_abandoned", reason="lease_lost")

    def refused(self, items: list[tuple[Ctx, object]], status: int, answer: dict | None) -> None:
        """Refused as a whole: split in halves; an item refused alone is output_rejected (P-SDK-15)."""
        if len(items) > 1:
            self.send(items[: len(items) // 2])
            return self.send(items[len(items) // 2 :])
        details = {"status": status, "code": (answer or {}).get("code")}
        fail(
            items[0][0], {"error": "output refused", "retryable": False, "code": "output_rejected", "details": details}
        )

    @staticmethod
    def settle(ctx: Ctx, item: dict) -> None:
        if item["status"] == "completed":
            finish(ctx, "tasks_completed", "task_complete", duration_ms=(time.monotonic() - ctx.started) * 1000)
        elif (item.get("problem") or {}).get("code") == "task_cancelled":
            finish(ctx, "tasks_cancelled", "task_abandoned", reason="cancelled")
        else:
            finish(ctx, "tasks_lease_lost", "task_abandoned", reason="lease_lost")


COMPLETER = Completer()


def no_handler(ctx: Ctx) -> None:
    """P-SDK-14: failed at once, permanently."""
    details = {"handler_name": ctx.handler_name, "known_handlers": NAMES}
    fail(
        ctx,
        {"error": f"no handler for {ctx.handler_name}", "retryable": False, "code": "no_handler", "details": details},
    )


def run_task(ctx: Ctx) -> None:
    if ctx.handler_name not in NAMES:
        return no_handler(ctx)
    fire("task_start", task_id=ctx.id)
    emit("start", ctx)
    result, body = "error", {}
    try:
        out = HANDLERS[ctx.handler_name](ctx)
        result = "ok"
    except Retryable as err:
        body = {"error": str(err), "retryable": True, "code": err.code}
        extra = {"retry_after_ms": err.retry_after_ms, "details": err.details, "checkpoint": err.checkpoint}
        body.update({k: v for k, v in extra.items() if v is not None})
    except Permanent as err:
        body = {"error": str(err), "retryable": False, "code": err.code}
        extra = {"details": err.details, "checkpoint": err.checkpoint}
        body.update({k: v for k, v in extra.items() if v is not None})
    except Exception as err:
        details = {"type": type(err).__name__, "message": str(err), "stack": traceback.format_exc()}
        body = {"error": repr(err), "retryable": True, "code": "unhandled_error", "details": details}
    emit("end", ctx, result=result)
    ctx.reporting = True
    if ctx.cancelled.is_set():  # lease lost, cancelled, or already failed by the shutdown
        return finish(ctx, f"tasks_{ctx.reason}", "task_abandoned", reason=ctx.reason)
    if result == "ok":
        try:
            json.dumps(out, allow_nan=False)
        except (ValueError, TypeError) as err:  # P-SDK-15: never re-sent
            details = {"type": type(err).__name__, "message": str(err)}
            return fail(ctx, {"error": "output is not JSON", "retryable": False, "code": "invalid_output",
                              "details": details})  # fmt: skip
        ctx.handed = True  # P-SDK-3: the next poll need not wait for this answer
        return COMPLETER.add(ctx, out)
    fail(ctx, body)


def heartbeat_loop(interval_s: float) -> None:
    while True:
        time.sleep(interval_s)  # keeps beating during shutdown while tasks are still held
        if stopping.is_set() and not held:
            return
        with held_lock:
            ids = list(held)
        try:
            status, answer, _ = call("POST", f"/workers/{WORKER_ID}/heartbeat", {"active_task_ids": ids})
        except OSError:
            continue
        if status != 200:
            continue
        for item in answer["tasks"]:
            ctx = held.get(item["task_id"])
            if ctx and (item["lease_lost"] or item["cancel_requested"]):
                ctx.abandon(item["cancel_requested"] and not item["lease_lost"])
        was_quiet = quiet["directive"]
        quiet["directive"] = answer["directive"] == "quiet"  # `running` clears only this flag (P-SDK-18)
        if answer["directive"] == "terminate":
            stopping.set()
        if (stopping.is_set() or (quiet["directive"] and not was_quiet)) and polling.is_set():
            os.kill(os.getpid(), signal.SIGUSR1)  # interrupts the main thread's long-poll


def free_slots() -> int:
    """P-SDK-3: a handed-over completion frees its slot; at most CONCURRENCY of them do."""
    with held_lock:
        handed = sum(1 for ctx in held.values() if ctx.handed)
        return CONCURRENCY - len(held) + min(handed, CONCURRENCY)


def gathering(free: int) -> bool:
    """P-SDK-26: while results are being reported, wait for their slots (poll threshold)."""
    with held_lock:
        return free < POLL_THRESHOLD and any(ctx.reporting for ctx in held.values())


def poll_loop() -> None:
    backoff, chunk = 0.5, 0
    while not stopping.is_set():
        free = free_slots()
        if quiet["signal"] or quiet["directive"] or free <= 0 or gathering(free):
            time.sleep(0.05)
            continue
        names, chunk = CHUNKS[chunk % len(CHUNKS)], chunk + 1
        body = {"handler_names": names, "worker_id": WORKER_ID, "batch_size": min(free, MAX_BATCH), "wait_ms": WAIT_MS}
        body.update(QUEUES.poll_fields())  # queue_name, or queue_names (+ queue_weights)
        started, error = time.monotonic(), None
        stats["polls"] += 1
        try:
            polling.set()
            status, answer, wait = call("POST", "/workers/tasks/poll/batch", body, timeout=WAIT_MS / 1000 + 10)
        except PollAborted:
            continue  # the connection is dropped, so the server claims nothing for it
        except OSError as err:
            (status, answer, wait), error = (0, None, 0.0), err
        finally:
            polling.clear()
        if status != 200:
            stats["poll_errors"] += 1
            warn("poll", status, answer, error)
            fire("error", operation="poll", error=f"HTTP {status}" if not error else repr(error))
            time.sleep(pause_after(wait, backoff))
            backoff = min(backoff * 2, 30.0)
            continue
        backoff = 0.5
        fire("poll", claimed=len(answer["tasks"]), duration_ms=(time.monotonic() - started) * 1000)
        for task in answer["tasks"]:
            ctx = Ctx(task)
            with held_lock:
                held[ctx.id] = ctx
                stats["tasks_claimed"] += 1
            threading.Thread(target=run_task, args=(ctx,), daemon=True).start()


def shutdown() -> None:
    """Grace period (a second signal ends it), then cancel and fail leftovers with shutdown; deregister."""
    deadline = time.monotonic() + GRACE_S
    while held and time.monotonic() < deadline and not hurry.is_set():
        time.sleep(0.05)
    with held_lock:
        leftovers = [ctx for ctx in held.values() if not ctx.cancelled.is_set()]
    why = (
        f"worker {WORKER_ID} shut down: second signal {signals[1]} ended the grace period"  # P-SDK-29
        if hurry.is_set() and len(signals) > 1
        else f"worker {WORKER_ID} shut down: grace period of {round(GRACE_S * 1000)} ms ended"
    )
    for ctx in leftovers:
        ctx.cancelled.set()
        fail(ctx, {"error": why, "retryable": True, "code": "shutdown"})
    with contextlib.suppress(OSError):
        call("DELETE", f"/workers/{WORKER_ID}")


def on_signal(signum, _frame) -> None:
    if signum in (signal.SIGTERM, signal.SIGINT):
        name = signal.Signals(signum).name
        signals.append(name)  # named in the shutdown message (P-SDK-29)
        # P-SDK-29: each signal is logged by name (os.write: a print could re-enter one in progress)
        level = "warning" if stopping.is_set() else "info"
        os.write(2, f"{level}: received {name}\n".encode())
        if stopping.is_set():
            hurry.set()  # P-SDK-17
        stopping.set()
    elif signum == signal.SIGTSTP:
        quiet["signal"] = True
    elif signum == signal.SIGCONT:
        quiet["signal"] = False  # clears only the local flag (P-SDK-18)
        return
    if polling.is_set():  # signal handlers run on the main thread, the one that polls
        raise PollAborted


def register(registration: dict) -> dict | None:
    """Until accepted or stopped: outages and refusals (401/403, P-SDK-24) back off and retry; anything
    else ends the adapter (P-SDK-28)."""
    backoff = 0.5
    while not stopping.is_set():
        try:
            status, record, wait = call("POST", "/workers", registration)
            if status < 300:
                return record
            warn("registration", status, record)
            if status not in OUTAGE and status not in (401, 403):  # P-SDK-28: not an Orch8 server
                code = (record or {}).get("code") or f"http_{status}"
                sys.exit(f"orch8-raw-http: registration at {URL} refused: HTTP {status} {code}; not retried")
        except OSError as err:
            warn("registration", 0, None, err)
            wait = 0.0
        stopping.wait(pause_after(wait, backoff))  # a SIGTERM ends the wait
        backoff = min(backoff * 2, 30.0)
    return None


def main() -> None:
    global QUEUES
    try:
        QUEUES = queues.from_env(env)
    except queues.QueueOptionsError as err:  # P-SDK-23: refused before any request
        sys.exit(f"orch8-raw-http: invalid worker options: {err}")
    registration = {"worker_id": WORKER_ID, "handlers": NAMES, "concurrency": CONCURRENCY, "sdk": USER_AGENT}
    registration.update(queues=QUEUES.registered_queues(), hostname=socket.gethostname(), pid=os.getpid())
    registration["labels"] = QUEUES.labels  # P-LABEL-1
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGTSTP, signal.SIGCONT, signal.SIGUSR1):
        signal.signal(signum, on_signal)
    emit("ready", sdk="raw-http", tracing=False)  # no tracer: trace-context checks only the headers
    waiting.start(env, call, emit)  # ORCH8_WAIT_INSTANCE (P-SDK-25)
    record = register(registration)
    if record is not None:
        interval = int(env.get("ORCH8_HEARTBEAT_INTERVAL_MS") or record["heartbeat_interval_ms"]) / 1000
        threading.Thread(target=heartbeat_loop, args=(interval,), daemon=True).start()
        poll_loop()
    shutdown()
    emit("stopped", stats=snapshot())


if __name__ == "__main__":
    sys.exit(main())
