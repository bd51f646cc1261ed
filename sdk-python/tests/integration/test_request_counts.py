"""Issue 32: the requests a worker needs for N tasks, against the real server.

A poll claims at most `min(concurrency, 100)` tasks (P-SDK-13) and a completion request
carries every result that became ready together (P-SDK-12), so a full queue drains in
about N / min(concurrency, 100) polls and as many completion requests; the TypeScript
worker sends the same (the bench's SDK rows count both for all three SDKs). Async handlers
of one poll answer return in the same loop turn, so their results go in one request. Sync
handlers come back from their threads spread over milliseconds (each thread needs the GIL
again), so a poll answer's results go in two or three requests, as Go's goroutines do.
"""

from __future__ import annotations

import math

import pytest

from orch8 import Orch8Client

from .conftest import make_worker, wait_until

TASKS = 500
CONCURRENCY = 100
POLL = "/workers/tasks/poll/batch"
COMPLETE = "/workers/tasks/complete/batch"


async def _async_noop(ctx: object) -> None:
    return None


def _sync_noop(ctx: object) -> None:
    return None


# Requests of each kind a full queue may take, per batch of min(concurrency, 100) tasks.
@pytest.mark.parametrize(("handler", "per_batch"), [(_async_noop, 1), (_sync_noop, 4)])
def test_a_full_queue_drains_in_about_one_poll_and_one_completion_per_batch(
    server, client: Orch8Client, run_worker, handler, per_batch: int
) -> None:
    for start in range(0, TASKS, 100):  # enqueue_batch takes at most 100 (P-TASK-2)
        client.enqueue_batch([{"handler_name": "noop"} for _ in range(start, start + 100)])
    worker, transport = make_worker(server, concurrency=CONCURRENCY)
    worker.register("noop", handler)
    run_worker(worker)
    wait_until(lambda: worker.stats().tasks_completed == TASKS, 60, f"{TASKS} completions")
    paths = [path for _, path, _ in transport.sent]
    polls, completions = paths.count(POLL), paths.count(COMPLETE)
    batches = math.ceil(TASKS / min(CONCURRENCY, 100))
    # + 1 poll: the one the worker parks once the queue is empty.
    assert batches <= polls <= per_batch * batches + 1, (polls, completions)
    assert batches <= completions <= per_batch * batches, (polls, completions)
    singles = [p for p in paths if p.endswith("/complete") and p != COMPLETE]
    assert not singles  # every completion goes through the batch endpoint (P-SDK-12)
