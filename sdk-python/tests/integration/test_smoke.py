"""Happy path and failure classification through the real server."""

from __future__ import annotations

import pytest

from orch8 import NotFoundError, Orch8Client, PermanentError, RetryableError, TaskContext, Worker

from .conftest import make_worker, wait_until


def new_worker(server, **kw) -> Worker:
    kw.setdefault("wait_ms", 1000)
    kw.setdefault("grace_period_ms", 5000)
    return Worker(base_url=server.url, handle_signals=False, **kw)


def test_happy_path(server, client: Orch8Client, run_worker) -> None:
    worker, transport = make_worker(server, worker_id="w-happy")
    seen: list[TaskContext] = []

    @worker.handler("process_image")
    def process_image(ctx: TaskContext) -> dict:
        seen.append(ctx)
        return {"url": f"https://cdn.example.com/{ctx.params['name']}.png"}

    rw = run_worker(worker)
    task = client.enqueue("process_image", params={"name": "cat"}, context={"step": "resize"})
    done = wait_until(lambda: (t := client.get_task(task.id)).status == "completed" and t, 10)
    assert done.output == {"url": "https://cdn.example.com/cat.png"}
    assert seen[0].context == {"step": "resize"} and seen[0].attempt == 1
    assert seen[0].worker_id == "w-happy" and seen[0].max_attempts == 3
    rw.stop_and_join()
    stats = worker.stats()
    assert (stats.tasks_claimed, stats.tasks_completed, stats.tasks_failed) == (1, 1, 0)
    assert stats.in_flight == 0 and stats.polls >= 1
    assert ("DELETE", "/workers/w-happy", None) in transport.sent
    with pytest.raises(NotFoundError):  # P-WORKER-5: deregistering removes the record
        client.get_worker("w-happy")


def test_retryable_then_success(server, client: Orch8Client, run_worker) -> None:
    worker = new_worker(server)

    @worker.handler("flaky")
    async def flaky(ctx: TaskContext) -> str:
        if ctx.attempt == 1:
            raise RetryableError("upstream 503", retry_after_ms=50)
        return f"ok on {ctx.attempt}"

    run_worker(worker)
    task = client.enqueue("flaky")
    done = wait_until(lambda: (t := client.get_task(task.id)).status == "completed" and t, 10)
    assert done.output == "ok on 2" and done.attempt == 2
    attempts = client.list_task_attempts(task.id).attempts
    assert [a.outcome for a in attempts] == ["failed", "completed"]
    assert attempts[0].error.code == "retryable_error" and attempts[0].error.retryable


def test_permanent_failure(server, client: Orch8Client, run_worker) -> None:
    worker = new_worker(server)

    @worker.handler("bad_input")
    def bad_input(ctx: TaskContext) -> None:
        raise PermanentError("width must be positive")

    run_worker(worker)
    task = client.enqueue("bad_input")
    failed = wait_until(lambda: (t := client.get_task(task.id)).status == "failed" and t, 10)
    assert failed.attempt == 1
    assert failed.error.code == "permanent_error" and not failed.error.retryable
    assert failed.error.message == "width must be positive"


def test_unhandled_exception_is_retryable(server, client: Orch8Client, run_worker) -> None:
    worker = new_worker(server)

    @worker.handler("crash")
    def crash(ctx: TaskContext) -> None:
        raise KeyError("boom")

    run_worker(worker)
    task = client.enqueue("crash", retry={"max_attempts": 2, "initial_backoff_ms": 10})
    failed = wait_until(lambda: (t := client.get_task(task.id)).status == "failed" and t, 10)
    assert failed.attempt == 2 and failed.error.code == "unhandled_error"
    assert failed.error.retryable


def test_seed_000_loop_with_the_plain_client(server, client: Orch8Client) -> None:
    """The README's twin of seed 000's TypeScript loop, bounded to two tasks."""

    def process_image(params: dict) -> dict:
        if params["width"] <= 0:
            raise ValueError("Out of memory")
        return {"url": "https://cdn.example.com/processed.png", "width": params["width"]}

    good = client.enqueue("process_image", params={"width": 800})
    bad = client.enqueue("process_image", params={"width": 0}, retry={"max_attempts": 1})
    handled = 0
    while handled < 2:
        task = client.poll_task(
            handler_names=["process_image"], worker_id="img-worker-1", wait_ms=2000
        )
        assert task is not None, "a task was expected within wait_ms"
        try:
            result = process_image(task.params.to_dict())
            client.complete_task(task.id, output=result)
        except Exception as err:
            client.fail_task(task.id, error=str(err), retryable=True)
        handled += 1
    assert client.poll_task(handler_names=["process_image"], wait_ms=0) is None  # 204
    assert client.get_task(good.id).output == {
        "url": "https://cdn.example.com/processed.png",
        "width": 800,
    }
    failed = client.get_task(bad.id)
    assert failed.status == "failed" and failed.error.message == "Out of memory"
