"""Issue 13's measure: Worker(concurrency=150) drains 1,000 tasks; no poll is rejected."""

from __future__ import annotations

import re
import time

from orch8 import Orch8Client

from .conftest import make_worker, wait_until

TASKS = 1000


def test_concurrency_150_drains_1000_tasks_without_a_rejected_poll(
    server, client: Orch8Client, run_worker
) -> None:
    worker, transport = make_worker(server, concurrency=150, wait_ms=1000)
    worker.register("square", lambda ctx: {"square": ctx.params["n"] ** 2})
    for start in range(0, TASKS, 100):  # enqueue_batch takes at most 100 (P-TASK-2)
        client.enqueue_batch(
            [{"handler_name": "square", "params": {"n": n}} for n in range(start, start + 100)]
        )
    began = time.monotonic()
    run_worker(worker)
    wait_until(lambda: worker.stats().tasks_completed == TASKS, 120, "1,000 completions")
    elapsed = time.monotonic() - began
    stats = worker.stats()
    assert (stats.tasks_claimed, stats.tasks_failed, stats.poll_errors) == (TASKS, 0, 0)
    polls = [b for m, p, b in transport.sent if p == "/workers/tasks/poll/batch"]
    assert polls and all(1 <= b["batch_size"] <= 100 for b in polls)  # P-SDK-13
    assert max(b["batch_size"] for b in polls) == 100
    # The server's own count of problem answers: not one validation_error (422).
    metrics = client.metrics()
    rejected = re.findall(r'^orch8_problems_total\{code="validation_error"\} (\S+)$', metrics, re.M)
    assert not rejected or float(rejected[0]) == 0, rejected
    done = client.list_tasks(status=["completed"], limit=1)
    assert done.tasks and done.tasks[0].output is not None
    print(f"\n1,000 tasks drained by Worker(concurrency=150) in {elapsed:.1f} s")
