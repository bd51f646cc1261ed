"""P-SDK-23 a Worker polling several queues, through the real server (P-QUEUE-2, P-QUEUE-3)."""

from __future__ import annotations

import re
import threading
from pathlib import Path

from orch8 import Orch8Client, TaskContext

from .conftest import make_worker, wait_until


def _recording_worker(server, **options: object):
    """A concurrency-1 worker recording the queue of each task it runs, in order."""
    order: list[str] = []
    lock = threading.Lock()
    worker, transport = make_worker(server, concurrency=1, **options)

    @worker.handler("job")
    def job(ctx: TaskContext) -> None:
        with lock:
            order.append(ctx.queue_name)  # the claimed task's own queue (P-SDK-23)

    return worker, transport, order


def _enqueue(client: Orch8Client, queue: str, count: int) -> None:
    for start in range(0, count, 100):  # the contract's batch limit
        n = min(100, count - start)
        client.enqueue_batch([{"handler_name": "job", "queue_name": queue}] * n)


def test_p_sdk_23_strict_list_drains_high_before_low(server, client, run_worker) -> None:
    """P-QUEUE-2: with ["high", "low"] no "low" task runs while "high" has one."""
    _enqueue(client, "low", 5)  # enqueued first: FIFO alone would run these first
    _enqueue(client, "high", 5)
    worker, transport, order = _recording_worker(server, queue_names=["high", "low"])
    rw = run_worker(worker)
    wait_until(lambda: len(order) == 10, 20, "all 10 tasks run")
    rw.stop_and_join()
    assert order == ["high"] * 5 + ["low"] * 5
    polls = [b for m, p, b in transport.sent if p == "/workers/tasks/poll/batch"]
    assert polls and all(b["queue_names"] == ["high", "low"] for b in polls)
    registration = next(b for m, p, b in transport.sent if (m, p) == ("POST", "/workers"))
    assert registration["queues"] == ["high", "low"]


def test_p_sdk_23_weighted_list_shares_claims_by_weight(server, client, run_worker) -> None:
    """P-QUEUE-3: weights {a: 3, b: 1}: "a" takes 3/4 of the first 400 claims (+-0.12: 5.5
    standard deviations of Binomial(400, 0.75); with 100 draws it was 2.8, a false failure
    in about 1 run of 200); strict order gives 1.0, ignored weights 0.5."""
    _enqueue(client, "a", 500)
    _enqueue(client, "b", 500)
    worker, transport, order = _recording_worker(
        server, queue_names=["a", "b"], queue_weights={"a": 3, "b": 1}
    )
    rw = run_worker(worker)
    wait_until(lambda: len(order) >= 400, 60, "400 tasks run")
    rw.stop_and_join()
    share = order[:400].count("a") / 400
    assert 0.63 <= share <= 0.87, f"share of 'a' among the first 400: {share}"
    polls = [b for m, p, b in transport.sent if p == "/workers/tasks/poll/batch"]
    assert polls and all(b["queue_weights"] == {"a": 3, "b": 1} for b in polls)


def _readme_block(name: str) -> str:
    """The python block after `<!-- consumer-test: NAME -->` in this package's README."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    match = re.search(rf"<!-- consumer-test: {name} -->\s*```python\n(.*?)```", readme, re.S)
    assert match, f"README.md has no consumer-test {name} block"
    return match.group(1)


def test_p_sdk_23_readme_several_queues_example_runs(
    server, client, run_worker, monkeypatch
) -> None:
    """The README's "Several queues" example, as written, against the real server."""
    monkeypatch.setenv("ORCH8_URL", server.url)
    names: dict[str, object] = {"__name__": "readme_queues"}
    exec(_readme_block("queues"), names)
    strict, weighted = names["strict"], names["weighted"]
    assert weighted.queue_weights == {"bulk": 3, "trickle": 1}
    strict.handle_signals = False
    low = client.enqueue("word_count", queue_name="low", params={"text": "a b c"})
    rw = run_worker(strict)
    done = wait_until(lambda: (t := client.get_task(low.id)).status == "completed" and t, 10)
    rw.stop_and_join()
    assert done.output == {"queue": "low", "words": 3}


def test_p_ctrl_readme_queue_controls_example_runs(server, monkeypatch, capsys) -> None:
    """The README's "Queue controls" example, as written, against the real server."""
    monkeypatch.setenv("ORCH8_URL", server.url)
    exec(_readme_block("controls"), {"__name__": "readme_controls"})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "[('emails', 4, 0)]"  # the capped queue is listed (P-CTRL-3)
    assert len(printed) == 2 + 15  # one history point per minute asked for (P-OBS-5)
