"""P-LABEL-1: a task's required_labels reach only a worker registered with those labels."""

from __future__ import annotations

from orch8 import TaskContext

from .conftest import make_worker, wait_until


def test_p_label_1_required_labels_route_to_the_labelled_worker(server, client, run_worker) -> None:
    plain, _ = make_worker(server, worker_id="w-plain", concurrency=1)
    gpu, transport = make_worker(
        server, worker_id="w-gpu", concurrency=1, labels={"gpu": "a100", "region": "eu"}
    )
    ran: dict[str, str] = {}
    for worker in (plain, gpu):

        @worker.handler("render")
        def render(ctx: TaskContext) -> None:
            ran[ctx.id] = ctx.worker_id

    run_worker(plain)
    wait_until(lambda: plain.state == "running" and plain.stats().polls > 0, 10, "plain polls")
    task = client.enqueue_batch([{"handler_name": "render", "required_labels": {"gpu": "a100"}}])[0]
    assert task.required_labels.to_dict() == {"gpu": "a100"}
    run_worker(gpu)
    wait_until(lambda: client.get_task(task.id).status == "completed", 10, "labelled task done")
    assert ran == {task.id: "w-gpu"}  # the unlabelled worker polled all along, never claimed it
    registration = next(b for m, p, b in transport.sent if (m, p) == ("POST", "/workers"))
    assert registration["labels"] == {"gpu": "a100", "region": "eu"}
