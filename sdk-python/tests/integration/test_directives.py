"""Operator directives through the server (P-WORKER-3/4, P-SDK-8)."""

from __future__ import annotations

from orch8 import Orch8Client, TaskContext

from .conftest import make_worker, wait_until


def _heartbeats(transport, worker_id: str) -> int:
    return sum(1 for _, p, _ in transport.sent if p == f"/workers/{worker_id}/heartbeat")


def test_quiet_stops_claiming_and_resume_restarts(server, client: Orch8Client, run_worker) -> None:
    worker, transport = make_worker(server, wait_ms=30000)
    worker.register("echo", lambda ctx: ctx.params)
    run_worker(worker)
    wait_until(lambda: _heartbeats(transport, worker.worker_id) >= 1, 10, "a first heartbeat")
    client.quiet_worker(worker.worker_id)
    wait_until(lambda: worker.state == "quiet", 10, "the quiet directive")
    # The next heartbeat reports state quiet: the aborted poll is long gone by then.
    wait_until(lambda: client.get_worker(worker.worker_id).state == "quiet", 10, "state quiet")
    task = client.enqueue("echo", params={"n": 1})
    # Three more heartbeats (about 1 s) without a claim: quiet holds.
    seen = _heartbeats(transport, worker.worker_id)
    wait_until(lambda: _heartbeats(transport, worker.worker_id) >= seen + 3, 10, "heartbeats")
    assert client.get_task(task.id).status == "pending"
    assert worker.state == "quiet"
    client.resume_worker(worker.worker_id)
    done = wait_until(lambda: (t := client.get_task(task.id)).status == "completed" and t, 10)
    assert done.output == {"n": 1}


def test_terminate_directive_shuts_the_worker_down(server, client: Orch8Client, run_worker) -> None:
    worker, transport = make_worker(server, wait_ms=30000)
    seen: list[str] = []

    @worker.handler("echo")
    def echo(ctx: TaskContext) -> str:
        seen.append(ctx.id)
        return "ok"

    rw = run_worker(worker)
    task = client.enqueue("echo")
    wait_until(lambda: client.get_task(task.id).status == "completed", 10)
    client.terminate_worker(worker.worker_id)
    rw.join(10)
    assert seen == [task.id]
    assert ("DELETE", f"/workers/{worker.worker_id}", None) in transport.sent
