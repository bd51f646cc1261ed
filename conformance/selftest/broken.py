"""Broken adapters: the raw-HTTP adapter with one protocol rule broken on purpose.

    python selftest/broken.py <defect>

Each defect is a small monkeypatch of adapters/raw-http/adapter.py; the SDKs are never touched.
"""

from __future__ import annotations

import importlib.util
import random
import signal
import sys
import time
from pathlib import Path

RAW = Path(__file__).resolve().parent.parent / "adapters" / "raw-http" / "adapter.py"


def load_raw():
    sys.path.insert(0, str(RAW.parent))  # the adapter imports its handler table from there
    spec = importlib.util.spec_from_file_location("raw_adapter", RAW)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def never_heartbeats(raw) -> None:
    """Sends neither worker heartbeats nor per-task heartbeats (breaks P-SDK-4, P-LEASE-5)."""
    raw.Ctx.heartbeat = lambda self, progress=None, checkpoint=None: None
    raw.heartbeat_loop = lambda interval_s: None


def completes_after_lease_loss(raw) -> None:
    """Reports without its lease id, so a late result lands on someone else's lease (breaks P-SDK-5)."""
    raw.result_lease = lambda ctx: {}


def ignores_sigterm(raw) -> None:
    """Keeps claiming and never exits on SIGTERM (breaks P-SDK-7)."""
    original = raw.on_signal

    def on_signal(signum, frame):
        if signum not in (signal.SIGTERM, signal.SIGINT):
            original(signum, frame)

    raw.on_signal = on_signal


def exceeds_concurrency(raw) -> None:
    """Polls for its full concurrency whatever it already holds (breaks P-SDK-3)."""
    raw.free_slots = lambda: raw.CONCURRENCY


def uncapped_batch_size(raw) -> None:
    """Polls for all its free slots even past the contract's 100 (breaks P-SDK-13: 422, never drains)."""
    raw.MAX_BATCH = 10**6


def holds_slots_until_answered(raw) -> None:
    """Keeps a completed task's slot until the server answers its result (breaks P-SDK-3)."""

    def free_slots() -> int:
        with raw.held_lock:
            return raw.CONCURRENCY - len(raw.held)

    raw.free_slots = free_slots


def polls_any_free_slot(raw) -> None:
    """Polls for every slot that frees, one by one, while results are being reported (breaks P-SDK-26)."""
    raw.gathering = lambda free: False


def unsplit_handler_names(raw) -> None:
    """Sends every handler name in one poll, even past the schema's 50 (breaks P-SDK-13)."""
    raw.CHUNKS = [raw.NAMES]


def drops_refused_batch(raw) -> None:
    """Gives up a completion batch the server refuses as a whole (breaks P-SDK-15, like Go did)."""
    raw.Completer.refused = lambda self, items, status, answer: None


def retryable_no_handler(raw) -> None:
    """Fails a task it has no handler for retryably with unhandled_error (breaks P-SDK-14, like TS did)."""

    def no_handler(ctx) -> None:
        raw.fail(ctx, {"error": "no handler", "retryable": True, "code": "unhandled_error"})

    raw.no_handler = no_handler


def ignores_retry_after(raw) -> None:
    """Backs off with its own jitter whatever Retry-After says (breaks P-SDK-16)."""
    raw.pause_after = lambda retry_after, backoff: random.uniform(0, backoff)


def ignores_second_signal(raw) -> None:
    """Waits out the whole grace period whatever signals follow the first (breaks P-SDK-17)."""
    original = raw.on_signal

    def on_signal(signum, frame):
        if signum in (signal.SIGTERM, signal.SIGINT) and raw.stopping.is_set():
            return
        original(signum, frame)

    raw.on_signal = on_signal


def miscounts_cancelled(raw) -> None:
    """Forgets to count cancelled tasks in stats() (breaks the P-SDK-11 invariant)."""
    original = raw.finish

    def finish(ctx, counter, hook, **payload):
        if counter == "tasks_cancelled":
            with raw.held_lock:
                raw.held.pop(ctx.id, None)
            return raw.emit("hook", hook=hook, task_id=ctx.id, **payload)
        return original(ctx, counter, hook, **payload)

    raw.finish = finish


def hook_exception_escapes(raw) -> None:
    """Lets an exception of a hook escape into the worker loop (breaks P-SDK-11: logged and ignored)."""

    def fire(hook, **payload):
        raw.emit("hook", hook=hook, **payload)
        if raw.env.get("ORCH8_HOOKS_RAISE"):
            raise RuntimeError(f"hook {hook} raises")

    raw.fire = fire


def ignores_queue_list(raw) -> None:
    """Polls only the first queue of its queue_names (breaks P-SDK-23, P-QUEUE-2)."""
    raw.queues.QueueOptions.poll_fields = lambda self: {"queue_name": (self.names or [self.name or "default"])[0]}


def reverses_queue_order(raw) -> None:
    """Sends queue_names in reverse order (breaks P-SDK-23: the list goes unchanged)."""
    original = raw.queues.QueueOptions.poll_fields

    def poll_fields(self) -> dict:
        fields = original(self)
        if "queue_names" in fields:
            fields["queue_names"] = fields["queue_names"][::-1]
        return fields

    raw.queues.QueueOptions.poll_fields = poll_fields


def ignores_weights(raw) -> None:
    """Drops queue_weights from its polls: strict order instead of weighted (breaks P-SDK-23, P-QUEUE-3)."""
    original = raw.queues.QueueOptions.poll_fields
    raw.queues.QueueOptions.poll_fields = lambda self: {k: v for k, v in original(self).items() if k != "queue_weights"}


def accepts_bad_queue_config(raw) -> None:
    """Starts with queue options the SDK must refuse, and polls with them (breaks P-SDK-23)."""
    raw.queues.check = lambda name, names, weights: None


def ignores_labels(raw) -> None:
    """Registers without its labels (breaks P-SDK-21; its gpu tasks are never routed to it, P-LABEL-1)."""
    original = raw.queues.from_env

    def from_env(env):
        options = original(env)
        options.labels = {}
        return options

    raw.queues.from_env = from_env


def drops_trace_context(raw) -> None:
    """Hands handlers a task without its headers, so traceparent never arrives (breaks P-TEL-1)."""
    original = raw.Ctx.__init__

    def init(self, task: dict) -> None:
        original(self, task)
        self.headers = {}

    raw.Ctx.__init__ = init


def unparented_process_span(raw) -> None:
    """Claims tracing but runs each handler in a new root span, ignoring traceparent (breaks P-TEL-3)."""
    emit = raw.emit

    def claims_tracing(event, ctx=None, **fields) -> None:
        emit(event, ctx, **({**fields, "tracing": True} if event == "ready" else fields))

    raw.emit = claims_tracing
    echo_trace = raw.HANDLERS["echo_trace"]

    def root_span(ctx) -> dict:
        return {**echo_trace(ctx), "trace_id": random.randbytes(16).hex(), "parent_span_id": None}

    raw.HANDLERS["echo_trace"] = root_span


def ignores_tenant(raw) -> None:
    """Never sends X-Tenant-Id, so it works in the default tenant whatever ORCH8_TENANT says (breaks P-SDK-24)."""
    raw.TENANT = None


def stops_when_forbidden(raw) -> None:
    """Gives up when its registration is refused with 401/403 and exits (breaks P-SDK-24: keep running)."""
    original = raw.call

    def call(method, path, body=None, timeout=10):
        status, answer, wait = original(method, path, body, timeout)
        if path == "/workers" and status in (401, 403):
            raw.stopping.set()  # the loop in register() ends: never registered, shutdown, exit 0
        return status, answer, wait

    raw.call = call


def drops_context(raw) -> None:
    """Hands handlers a task without its context, so a workflow step never learns its instance (breaks P-WF-4)."""
    original = raw.Ctx.__init__

    def init(self, task: dict) -> None:
        original(self, task)
        self.context = {}

    raw.Ctx.__init__ = init


def reports_cancelled_step(raw) -> None:
    """Sends the result of a handler whose cancellation signal fired (breaks P-SDK-5, P-WF-7: no result)."""
    original = raw.HANDLERS["wait_for_cancel"]

    def forgets(ctx) -> dict:
        out = original(ctx)
        ctx.cancelled.clear()  # as if the signal had never fired: run_task reports the output
        return out

    raw.HANDLERS["wait_for_cancel"] = forgets


def wait_returns_early(raw) -> None:
    """Its waitInstance returns the first answer, final or not (breaks P-SDK-25)."""
    raw.waiting.FINAL = ("running", "completed", "failed", "cancelled")


def ignores_lost_lease(raw) -> None:
    """Takes a 409 on a task heartbeat for success: the handler runs on (breaks P-SDK-5)."""
    original = raw.Ctx.heartbeat

    def heartbeat(self, progress=None, checkpoint=None) -> None:
        try:
            original(self, progress, checkpoint)
        except raw.HeartbeatRefused:
            self.cancelled.clear()  # abandon() had set it

    raw.Ctx.heartbeat = heartbeat


def sleeps_between_polls(raw) -> None:
    """Polls without waiting and pauses 6 s after an empty answer instead of a long-poll the
    server wakes, so a task a clock advance makes due waits (breaks P-CLOCK-2's woken polls).
    6 s, not less: the scenario allows 4 s, and one pause of 3 s once fit in it."""
    original = raw.call

    def call(method, path, body=None, timeout=10):
        if path != "/workers/tasks/poll/batch":
            return original(method, path, body, timeout)
        status, answer, wait = original(method, path, {**body, "wait_ms": 0}, timeout)
        if status == 200 and not answer["tasks"]:
            time.sleep(6)
        return status, answer, wait

    raw.call = call


DEFECTS = {
    f.__name__: f
    for f in (
        never_heartbeats,
        completes_after_lease_loss,
        ignores_sigterm,
        exceeds_concurrency,
        uncapped_batch_size,
        holds_slots_until_answered,
        polls_any_free_slot,
        unsplit_handler_names,
        drops_refused_batch,
        retryable_no_handler,
        ignores_retry_after,
        ignores_second_signal,
        miscounts_cancelled,
        hook_exception_escapes,
        ignores_queue_list,
        reverses_queue_order,
        ignores_weights,
        accepts_bad_queue_config,
        ignores_labels,
        drops_trace_context,
        unparented_process_span,
        ignores_tenant,
        stops_when_forbidden,
        drops_context,
        reports_cancelled_step,
        wait_returns_early,
        ignores_lost_lease,
        sleeps_between_polls,
    )
}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in DEFECTS:
        sys.exit(f"usage: broken.py {{{','.join(DEFECTS)}}}")
    raw = load_raw()
    DEFECTS[sys.argv[1]](raw)
    raw.main()
