"""Worker pieces without a server: failure classification, backoff, and a mocked loop."""

from __future__ import annotations

import asyncio
import datetime
import json
import threading
from typing import Any

import httpx
import pytest
import respx

from orch8 import (
    AsyncOrch8Client,
    Backoff,
    PermanentError,
    RetryableError,
    RetryPolicy,
    TaskContext,
    Worker,
)
from orch8.worker._completer import Completer, Verdict
from orch8.worker._execute import Slot, classify
from orch8.worker.observe import Observer

from .conftest import BASE, claimed_task, problem
from .fake_server import outcome_item, worker_record


def test_classify_follows_p_sdk_6() -> None:
    retry = classify(RetryableError("later", retry_after_ms=1500, checkpoint={"i": 2}))
    assert (retry.retryable, retry.code, retry.retry_after_ms) == (True, "retryable_error", 1500)
    assert retry.checkpoint == {"i": 2}
    perm = classify(PermanentError("never", code="bad_input"))
    assert (perm.retryable, perm.code) == (False, "bad_input")
    assert classify(PermanentError("never")).code == "permanent_error"
    other = classify(ZeroDivisionError("oops"))
    assert (other.retryable, other.code) == (True, "unhandled_error")
    # P-SDK-20: exactly type, message, stack.
    assert set(other.details) == {"type", "message", "stack"}
    assert other.details["type"] == "ZeroDivisionError" and other.details["message"] == "oops"
    assert "ZeroDivisionError" in other.details["stack"]
    perm_ckpt = classify(PermanentError("no", checkpoint={"cursor": 4}))
    assert perm_ckpt.checkpoint == {"cursor": 4}


def test_outage_backoff_doubles_from_500ms_to_30s_with_full_jitter() -> None:
    backoff = Backoff()
    ceilings = [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000]
    for ceiling in ceilings:
        assert 0 <= backoff.next_delay_ms() <= ceiling
    big = Backoff()
    for _ in range(20):
        big.next_delay_ms()
    assert max(big.next_delay_ms() for _ in range(200)) > 15000  # capped at 30 s, jittered
    big.reset()
    assert big.next_delay_ms() <= 500


def test_backoff_takes_retry_after_capped_at_60_s_and_keeps_its_sequence() -> None:
    """P-SDK-16: Retry-After (+0-10%) replaces the delay; the sequence still advances."""
    backoff = Backoff()
    assert 2000 <= backoff.next_delay_ms(retry_after_ms=2000) <= 2200
    assert 60000 <= backoff.next_delay_ms(retry_after_ms=120_000) <= 66000
    assert backoff.failures == 2
    assert 0 <= backoff.next_delay_ms() <= 2000  # third failure: ceiling 2 s


def test_worker_defaults_match_section_14() -> None:
    worker = Worker(handle_signals=False)
    assert (worker.concurrency, worker.wait_ms, worker.grace_period_ms) == (10, 30000, 25000)
    assert worker.heartbeat_interval_ms is None and worker.outage_backoff_ms == (500, 30000)
    with pytest.raises(ValueError):
        Worker(concurrency=0)


def test_worker_seconds_keywords_are_deprecated_aliases() -> None:
    """Decisions C: integer ms everywhere; 0.1's float seconds still work, with a warning."""
    with pytest.warns(DeprecationWarning, match="grace_period_ms"):
        worker = Worker(handle_signals=False, grace_period=2.5)
    assert worker.grace_period_ms == 2500
    with pytest.warns(DeprecationWarning, match="heartbeat_interval_ms"):
        assert Worker(heartbeat_interval=1.5).heartbeat_interval_ms == 1500
    with pytest.warns(DeprecationWarning, match="outage_backoff_ms"):
        assert Worker(outage_backoff=(0.05, 0.5)).outage_backoff_ms == (50, 500)
    with pytest.raises(TypeError):
        Worker(grace_period=1, grace_period_ms=1000)


def test_register_and_decorator() -> None:
    worker = Worker(handle_signals=False)

    @worker.handler("b")
    def b(ctx: TaskContext) -> None: ...

    worker.register("a", lambda ctx: None)
    assert list(worker.handler_names) == ["a", "b"]
    with pytest.raises(TypeError):
        worker.register("c", "not callable")  # type: ignore[arg-type]


@respx.mock
def test_result_is_resent_through_an_outage_and_polls_ask_for_free_slots() -> None:
    """P-SDK-9 and P-SDK-3 against a mocked server: 503s on complete, then success."""
    far_lease = claimed_task("t1")
    far_lease["lease"]["expires_at"] = "2999-01-01T00:00:00.000Z"
    respx.post(f"{BASE}/workers").respond(200, json=worker_record("w"))
    respx.post(f"{BASE}/workers/w/heartbeat").respond(
        200, json={"directive": "running", "heartbeat_interval_ms": 50, "tasks": []}
    )
    respx.delete(f"{BASE}/workers/w").respond(200, json=worker_record("w"))
    sizes: list[int] = []

    def poll(request: httpx.Request) -> httpx.Response:
        import json

        sizes.append(json.loads(request.content)["batch_size"])
        tasks = [far_lease] if len(sizes) == 1 else []
        return httpx.Response(200, json={"tasks": tasks, "next_poll_after_ms": 20})

    respx.post(f"{BASE}/workers/tasks/poll/batch").mock(side_effect=poll)
    unavailable = httpx.Response(503, json=problem(503, "unavailable"))
    complete = respx.post(f"{BASE}/workers/tasks/complete/batch")  # P-SDK-12
    # 2 client calls of 4 tries each fail, then the third call succeeds.
    complete.side_effect = [unavailable] * 8 + [
        httpx.Response(200, json={"items": [outcome_item("t1")]})
    ]
    done = threading.Event()
    client = AsyncOrch8Client(BASE, retry=RetryPolicy(base_delay_ms=1, max_delay_ms=2))
    worker = Worker(
        client,
        worker_id="w",
        concurrency=2,
        handle_signals=False,
        outage_backoff_ms=(10, 50),
    )
    worker.register("process_image", lambda ctx: ctx.params["image_url"])
    worker.on_task_complete(lambda event: done.set())
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        assert done.wait(10)
    finally:
        worker.stop()
        thread.join(10)
    assert complete.call_count == 9
    assert all(
        json.loads(c.request.content)["items"]
        == [{"task_id": "t1", "lease_id": "lease_1", "output": "https://example.com/cat.png"}]
        for c in complete.calls
    )
    assert sizes[0] == 2 and all(1 <= s <= 2 for s in sizes)
    stats = worker.stats()
    assert (stats.tasks_claimed, stats.tasks_completed, stats.in_flight) == (1, 1, 0)


# --- P-SDK-12: completions go out group-commit style through complete/batch ----------------


def _slot(task_id: str) -> Slot:
    ctx = TaskContext(
        id=task_id,
        handler_name="noop",
        queue_name="default",
        params={},
        context={},
        headers={},
        attempt=1,
        max_attempts=3,
        lease_id=f"lease_{task_id}",
        lease_expires_at=datetime.datetime(2999, 1, 1, tzinfo=datetime.timezone.utc),
        checkpoint=None,
        worker_id="w",
    )
    return Slot(ctx=ctx, handler=lambda ctx: None)


class _Server:
    """An httpx mock transport for complete/batch recording each request's items."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer  # async (items, call number) -> httpx.Response
        self.requests: list[tuple[str, list[dict]]] = []

    async def handle(self, request: httpx.Request) -> httpx.Response:
        items = json.loads(request.content)["items"] if request.content else []
        self.requests.append((request.url.path, items))
        return await self.answer(items, len(self.requests))

    def completer(self) -> Completer:
        return Completer(_Deps(self.handle))


class _Deps:
    """What the Completer needs from the runtime (DeliverDeps)."""

    def __init__(self, handle: Any) -> None:
        self.client = AsyncOrch8Client(
            BASE, transport=httpx.MockTransport(handle), retry=RetryPolicy(max_retries=0)
        )
        self.observer = Observer("w")

    def new_backoff(self) -> Backoff:
        return Backoff(1, 2)


COMPLETED = Verdict("completed")


async def _all_completed(items: list[dict], n: int) -> httpx.Response:
    return httpx.Response(200, json={"items": [outcome_item(i["task_id"]) for i in items]})


def test_a_lone_result_goes_out_at_once_as_a_batch_of_one() -> None:
    server = _Server(_all_completed)

    async def main() -> Verdict:
        return await server.completer().complete(_slot("t1"), {"ok": True})

    assert asyncio.run(main()) == COMPLETED
    assert server.requests == [
        (
            "/workers/tasks/complete/batch",
            [{"task_id": "t1", "lease_id": "lease_t1", "output": {"ok": True}}],
        )
    ]


def test_results_ready_in_the_same_loop_turn_go_out_in_one_request() -> None:
    """P-SDK-12: the handlers of one poll answer returning at once: one request, not 1 + rest."""
    server = _Server(_all_completed)

    async def main() -> list[Verdict]:
        completer = server.completer()
        ids = [f"s{i}" for i in range(1, 6)]
        return list(await asyncio.gather(*(completer.complete(_slot(t), t) for t in ids)))

    assert asyncio.run(main()) == [COMPLETED] * 5
    assert [[i["task_id"] for i in items] for _, items in server.requests] == [
        ["s1", "s2", "s3", "s4", "s5"]
    ]


def test_results_ready_while_a_request_is_in_flight_go_together_next() -> None:
    async def main() -> tuple[_Server, list[Verdict]]:
        first_in_flight = asyncio.Event()
        release = asyncio.Event()

        async def answer(items: list[dict], n: int) -> httpx.Response:
            if n == 1:
                first_in_flight.set()
                await release.wait()
            return await _all_completed(items, n)

        server = _Server(answer)
        completer = server.completer()
        first = asyncio.ensure_future(completer.complete(_slot("t1"), 1))
        await first_in_flight.wait()
        later = [asyncio.ensure_future(completer.complete(_slot(f"t{i}"), i)) for i in (2, 3, 4)]
        await asyncio.sleep(0.01)
        assert len(server.requests) == 1  # they wait: no timer, no second request yet
        release.set()
        return server, list(await asyncio.gather(first, *later))

    server, results = asyncio.run(main())
    assert results == [COMPLETED] * 4
    assert [[i["task_id"] for i in items] for _, items in server.requests] == [
        ["t1"],
        ["t2", "t3", "t4"],
    ]


def test_no_more_than_100_items_per_request() -> None:
    async def main() -> _Server:
        release = asyncio.Event()

        async def answer(items: list[dict], n: int) -> httpx.Response:
            if n == 1:
                await release.wait()
            return await _all_completed(items, n)

        server = _Server(answer)
        completer = server.completer()
        runs = [asyncio.ensure_future(completer.complete(_slot(f"t{i}"), i)) for i in range(151)]
        await asyncio.sleep(0.01)
        release.set()
        assert set(await asyncio.gather(*runs)) == {COMPLETED}
        return server

    server = asyncio.run(main())
    assert [len(items) for _, items in server.requests] == [100, 51]  # ready in one turn (P-SDK-12)


def test_503_on_the_batch_resends_the_same_items() -> None:
    async def answer(items: list[dict], n: int) -> httpx.Response:
        if n <= 2:
            return httpx.Response(503, json=problem(503, "unavailable"))
        return await _all_completed(items, n)

    server = _Server(answer)

    async def main() -> list[Verdict]:
        completer = server.completer()
        release = [asyncio.ensure_future(completer.complete(_slot(t), t)) for t in ("t1", "t2")]
        return list(await asyncio.gather(*release))

    assert asyncio.run(main()) == [COMPLETED, COMPLETED]
    sent = [[i["task_id"] for i in items] for _, items in server.requests]
    assert sent == [["t1", "t2"]] * 3  # ready in one turn: one request, re-sent whole


def test_lease_lost_item_is_not_resent_and_counts_as_lease_lost() -> None:
    lost = {"code": "lease_lost", "status": 409, "detail": "lease is no longer current"}

    async def answer(items: list[dict], n: int) -> httpx.Response:
        return httpx.Response(200, json={"items": [outcome_item("t1", "error", lost)]})

    server = _Server(answer)
    slot = _slot("t1")

    async def main() -> Verdict:
        return await server.completer().complete(slot, "stale")

    assert asyncio.run(main()) == Verdict("lease_lost")
    assert (slot.ctx.is_cancelled, slot.ctx.cancel_reason) == (True, "lease_lost")
    assert len(server.requests) == 1  # neither re-sent nor turned into a fail


@respx.mock
def test_worker_counts_a_lease_lost_batch_item_and_sends_nothing_more() -> None:
    far_lease = claimed_task("t1")
    far_lease["lease"]["expires_at"] = "2999-01-01T00:00:00.000Z"
    respx.post(f"{BASE}/workers").respond(200, json=worker_record("w"))
    respx.post(f"{BASE}/workers/w/heartbeat").respond(
        200, json={"directive": "running", "heartbeat_interval_ms": 50, "tasks": []}
    )
    respx.delete(f"{BASE}/workers/w").respond(200, json=worker_record("w"))
    polls = iter([[far_lease]])
    respx.post(f"{BASE}/workers/tasks/poll/batch").mock(
        side_effect=lambda request: httpx.Response(
            200, json={"tasks": next(polls, []), "next_poll_after_ms": 20}
        )
    )
    lost = {"code": "lease_lost", "status": 409, "detail": "lease is no longer current"}
    batch = respx.post(f"{BASE}/workers/tasks/complete/batch").respond(
        200, json={"items": [outcome_item("t1", "error", lost)]}
    )
    fail = respx.post(f"{BASE}/workers/tasks/t1/fail").respond(500)
    single = respx.post(f"{BASE}/workers/tasks/t1/complete").respond(500)
    client = AsyncOrch8Client(BASE, retry=RetryPolicy(base_delay_ms=1, max_delay_ms=2))
    worker = Worker(client, worker_id="w", handle_signals=False, outage_backoff_ms=(10, 50))
    completed: list[object] = []
    worker.register("process_image", lambda ctx: "stale")
    worker.on_task_complete(lambda event: completed.append(event))
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        for _ in range(500):
            if worker.stats().tasks_lease_lost:
                break
            threading.Event().wait(0.01)
    finally:
        worker.stop()
        thread.join(10)
    stats = worker.stats()
    assert (stats.tasks_lease_lost, stats.tasks_completed, stats.tasks_failed) == (1, 0, 0)
    assert (batch.call_count, fail.call_count, single.call_count) == (1, 0, 0)
    assert completed == []


# --- P-TEL-5 health --------------------------------------------------------------------------


class _HealthState:
    stop_requested = False
    started_at = 1000.0
    last_poll_at: float | None = None
    last_heartbeat_at: float | None = None
    heartbeat_interval_ms = 1000
    worker_id = "w"

    def free_slots(self) -> int:
        return 2

    def slots(self) -> list[object]:
        return [object()]


def test_health_turns_unhealthy_after_3_heartbeat_intervals_without_success() -> None:
    """P-TEL-5: ok while the last poll/heartbeat is <= 3 intervals old, then 503 unhealthy."""
    from orch8.worker._health import health

    state = _HealthState()
    assert health(state, now=1002.9)[0] == 200  # just started: the start stands in
    state.last_heartbeat_at = 1010.0
    code, body = health(state, now=1013.0)
    assert (code, body["status"]) == (200, "ok")
    assert body["last_heartbeat_at"] == "1970-01-01T00:16:50.000Z" and body["last_poll_at"] is None
    assert health(state, now=1013.1) == (503, {**body, "status": "unhealthy"})
    state.last_poll_at = 1012.0  # a poll answered later keeps it healthy
    assert health(state, now=1014.5)[0] == 200
    state.stop_requested = True
    assert health(state, now=1014.5)[1]["status"] == "stopping"
    assert health(state, now=1014.5)[0] == 503


# --- P-SDK-5: the cancellation signals, made when first asked for ----------------------------


def test_cancellation_signals_asked_for_after_they_fired_are_set() -> None:
    ctx = _slot("t1").ctx
    assert ctx._cancel("lease_lost") and not ctx._cancel("cancelled")  # fires once
    assert ctx.is_cancelled and ctx.cancel_reason == "lease_lost"
    assert ctx.cancelled.wait(0)  # made after the cancellation: already set

    async def wait() -> bool:
        ctx._bind(AsyncOrch8Client(base_url="http://x"), asyncio.get_running_loop())
        return await ctx.wait_cancelled(timeout_ms=1000)

    assert asyncio.run(wait())


def test_cancellation_signals_asked_for_before_they_fired_fire() -> None:
    ctx = _slot("t1").ctx
    event = ctx.cancelled
    assert not event.is_set() and not ctx.is_cancelled
    seen: dict[str, bool] = {}

    async def main() -> None:
        ctx._bind(AsyncOrch8Client(base_url="http://x"), asyncio.get_running_loop())
        waiter = asyncio.ensure_future(ctx.wait_cancelled(timeout_ms=5000))
        await asyncio.sleep(0)  # the waiter made its asyncio.Event
        thread = threading.Thread(target=lambda: seen.setdefault("fired", ctx._cancel("cancelled")))
        thread.start()
        seen["waited"] = await waiter
        thread.join()

    asyncio.run(main())
    assert seen == {"fired": True, "waited": True}
    assert event.is_set() and ctx.cancelled is event and ctx.cancel_reason == "cancelled"
