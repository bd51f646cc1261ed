"""Concurrency limit (P-SDK-3) and a server restart mid-run (P-SDK-9)."""

from __future__ import annotations

import threading

from orch8 import Orch8Client, TaskContext

from .conftest import make_worker, wait_until


def test_concurrency_is_never_exceeded(server, client: Orch8Client, run_worker) -> None:
    worker, transport = make_worker(server, concurrency=3)
    lock = threading.Lock()
    running = {"now": 0, "max": 0}
    full = threading.Event()  # opens once 3 handlers ran at the same time

    @worker.handler("busy")
    def busy(ctx: TaskContext) -> int:
        with lock:
            running["now"] += 1
            running["max"] = max(running["max"], running["now"])
            if running["now"] == 3:
                full.set()
        full.wait(5)
        ctx.cancelled.wait(0.02)
        with lock:
            running["now"] -= 1
        return ctx.params["i"]

    run_worker(worker)
    tasks = client.enqueue_batch([{"handler_name": "busy", "params": {"i": i}} for i in range(12)])
    wait_until(
        lambda: all(client.get_task(t.id).status == "completed" for t in tasks), 20, "all done"
    )
    assert running["max"] == 3
    sizes = [b["batch_size"] for _, p, b in transport.sent if p == "/workers/tasks/poll/batch"]
    assert sizes and all(1 <= s <= 3 for s in sizes)
    # The server shows a task completed before the worker has read the batch's answer.
    wait_until(lambda: worker.stats().tasks_completed == 12, 5, "the worker's count")


def test_worker_rides_out_a_server_restart(server_factory, run_worker) -> None:
    # Long lease so the held task survives the outage; results are re-sent until delivered.
    # The worker is not declared dead during the outage either (3 s in FAST: a loaded
    # machine took that long, and the reaper then reclaimed the held task as attempt 2).
    server = server_factory(dead_after_ms=60000)
    client = Orch8Client(server.url)
    worker, _ = make_worker(server, lease_ms=20000, wait_ms=1000)
    started = threading.Event()
    release = threading.Event()

    @worker.handler("job")
    def job(ctx: TaskContext) -> str:
        if ctx.params.get("block"):
            started.set()
            release.wait(20)
        return f"done {ctx.params['n']}"

    run_worker(worker)
    first = client.enqueue("job", params={"n": 1, "block": True})
    assert started.wait(10)
    server.stop()
    release.set()  # the result is now undeliverable until the server is back
    wait_until(lambda: worker.stats().poll_errors >= 2, 10, "polls to fail during the outage")
    server.restart()  # same port, same SQLite file
    second = client.enqueue("job", params={"n": 2})
    for task, want in ((first, "done 1"), (second, "done 2")):
        done = wait_until(
            lambda t=task: (x := client.get_task(t.id)).status == "completed" and x, 20
        )
        assert done.output == want and done.attempt == 1
    # The server can record a completion before the worker hears back (a re-send after the
    # outage may still be in its backoff); the worker counts it once its call returns.
    wait_until(lambda: worker.stats().tasks_completed == 2, 20, "the worker to count both")
