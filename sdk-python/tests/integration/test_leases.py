"""Leases kept by heartbeats, lost to the reaper, and cancelled by an operator (P-SDK-4/5)."""

from __future__ import annotations

import threading

from orch8 import Orch8Client, TaskContext

from .conftest import make_worker, wait_until


def test_long_handler_keeps_its_lease_through_worker_heartbeats(
    server, client: Orch8Client, run_worker
) -> None:
    # Lease 600 ms, worker heartbeats every 300 ms (server setting), handler runs 2 s.
    worker, transport = make_worker(server, lease_ms=600)
    observed: dict[str, object] = {}

    @worker.handler("slow")
    def slow(ctx: TaskContext) -> str:
        observed["cancelled"] = ctx.cancelled.wait(2.0)
        observed["lease_expires_at"] = ctx.lease_expires_at
        return "done"

    run_worker(worker)
    task = client.enqueue("slow")
    done = wait_until(lambda: (t := client.get_task(task.id)).status == "completed" and t, 10)
    assert observed["cancelled"] is False
    assert done.output == "done" and done.attempt == 1
    assert [a.outcome for a in client.list_task_attempts(task.id).attempts] == ["completed"]
    heartbeats = [
        b for m, p, b in transport.sent if p.endswith(f"/workers/{worker.worker_id}/heartbeat")
    ]
    assert any(task.id in (b or {}).get("active_task_ids", []) for b in heartbeats)


def test_lease_lost_cancels_handler_and_sends_no_stale_result(
    server, client: Orch8Client, run_worker
) -> None:
    # A 500 ms lease and worker heartbeats only every 1.5 s: the reaper takes attempt 1 away.
    worker, transport = make_worker(server, lease_ms=500, heartbeat_interval_ms=1500)
    first: dict[str, object] = {}

    @worker.handler("slow")
    def slow(ctx: TaskContext) -> str:
        if ctx.attempt == 1:
            first["cancelled"] = ctx.cancelled.wait(10)
            first["reason"] = ctx.cancel_reason
            first["lease_id"] = ctx.lease_id
            return "stale"
        return f"fresh {ctx.attempt}"

    rw = run_worker(worker)
    task = client.enqueue("slow", retry={"max_attempts": 5, "initial_backoff_ms": 10})
    done = wait_until(lambda: (t := client.get_task(task.id)).status == "completed" and t, 15)
    wait_until(lambda: "reason" in first, 10, "attempt 1 to observe cancellation")
    assert first["cancelled"] is True and first["reason"] == "lease_lost"
    assert done.output == f"fresh {done.attempt}" and done.attempt >= 2
    outcomes = [a.outcome for a in client.list_task_attempts(task.id).attempts]
    assert outcomes[0] == "lease_expired" and outcomes[-1] == "completed"
    rw.stop_and_join()
    sent = transport.results_for(task.id)
    assert all(body.get("lease_id") != first["lease_id"] for _, body in sent), sent
    assert worker.stats().tasks_lease_lost >= 1


def test_operator_cancel_reaches_running_handler(server, client: Orch8Client, run_worker) -> None:
    worker, transport = make_worker(server)
    started = threading.Event()
    seen: dict[str, object] = {}

    @worker.handler("wait_for_cancel")
    async def wait_for_cancel(ctx: TaskContext) -> str:
        started.set()
        seen["cancelled"] = await ctx.wait_cancelled(timeout_ms=10_000)
        seen["reason"] = ctx.cancel_reason
        return "should not be sent"

    rw = run_worker(worker)
    task = client.enqueue("wait_for_cancel")
    assert started.wait(10)
    client.cancel_task(task.id, reason="customer withdrew")
    wait_until(lambda: worker.stats().tasks_cancelled == 1, 10, "the worker to see the cancel")
    assert seen == {"cancelled": True, "reason": "cancelled"}
    rw.stop_and_join()
    final = client.get_task(task.id)
    assert final.status == "cancelled" and final.cancel_reason == "customer withdrew"
    assert transport.results_for(task.id) == []


def test_task_heartbeat_saves_checkpoint_for_next_attempt(
    server, client: Orch8Client, run_worker
) -> None:
    worker, _ = make_worker(server)
    checkpoints: list[object] = []

    @worker.handler("resume")
    def resume(ctx: TaskContext) -> dict:
        checkpoints.append(ctx.checkpoint)
        if ctx.attempt == 1:
            ctx.heartbeat(progress={"pct": 50}, checkpoint={"cursor": 4000})
            raise RuntimeError("crashed half way")
        return {"resumed_from": ctx.checkpoint["cursor"]}

    run_worker(worker)
    task = client.enqueue("resume", retry={"initial_backoff_ms": 10})
    done = wait_until(lambda: (t := client.get_task(task.id)).status == "completed" and t, 10)
    assert checkpoints == [None, {"cursor": 4000}]
    assert done.output == {"resumed_from": 4000}


def test_manual_completion_of_running_task_reaches_worker_as_lease_lost(
    server, client: Orch8Client, run_worker
) -> None:
    worker, transport = make_worker(server)
    started = threading.Event()
    seen: dict[str, object] = {}

    @worker.handler("slow")
    def slow(ctx: TaskContext) -> str:
        started.set()
        seen["cancelled"] = ctx.cancelled.wait(10)
        seen["reason"] = ctx.cancel_reason
        return "worker result"

    rw = run_worker(worker)
    task = client.enqueue("slow")
    assert started.wait(10)
    client.complete_task_manually(task.id, output={"by": "hand"}, reason="stuck")  # P-MANUAL-1
    wait_until(lambda: "reason" in seen, 10, "the handler to see the lease loss")
    assert seen == {"cancelled": True, "reason": "lease_lost"}
    rw.stop_and_join()
    final = client.get_task(task.id)
    assert final.status == "completed" and final.output == {"by": "hand"}
    assert transport.results_for(task.id) == []
    assert worker.stats().tasks_lease_lost == 1
