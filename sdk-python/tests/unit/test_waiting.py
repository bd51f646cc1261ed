"""P-SDK-25: wait_instance / wait_task long-poll in rounds until final, or raise on timeout."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
import respx

from orch8 import AsyncOrch8Client, NotFoundError, Orch8Client, RetryPolicy, WaitTimeoutError
from orch8.waiting import DEFAULT_WAIT_TIMEOUT_MS, _Rounds

from .conftest import BASE, instance, problem, task


class Answers:
    """A respx side effect answering the given responses in turn, recording each wait_ms."""

    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.answers = list(answers)
        self.wait_ms: list[int | None] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        # A helper that misses a final state would spin on these instant answers: fail fast.
        assert len(self.wait_ms) < 50, "still waiting after 50 rounds"
        raw = request.url.params.get("wait_ms")
        self.wait_ms.append(None if raw is None else int(raw))
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


def fast() -> RetryPolicy:
    return RetryPolicy(max_retries=3, base_delay_ms=1, max_delay_ms=2)


def test_p_sdk_25_wait_instance_polls_in_rounds_of_at_most_30_s_until_final() -> None:
    answers = Answers(
        httpx.Response(200, json=instance("running")),
        httpx.Response(200, json=instance("running")),
        httpx.Response(200, json=instance("completed")),
    )
    with respx.mock:
        respx.get(f"{BASE}/instances/inst_1").mock(side_effect=answers)
        got = Orch8Client(BASE, retry=fast()).wait_instance("inst_1")
    assert got.status == "completed" and got.output == {"url": "https://cdn.example.com/cat.png"}
    assert len(answers.wait_ms) == 3
    assert all(w is not None and 29_000 <= w <= 30_000 for w in answers.wait_ms)


def test_p_sdk_25_short_timeout_asks_for_no_more_than_is_left() -> None:
    answers = Answers(httpx.Response(200, json=instance("running")))
    with respx.mock:
        respx.get(f"{BASE}/instances/inst_1").mock(side_effect=answers)
        with pytest.raises(WaitTimeoutError) as info:
            Orch8Client(BASE, retry=fast()).wait_instance("inst_1", timeout_ms=5)
    assert info.value.last_state.status == "running" and len(answers.wait_ms) >= 1
    assert all(w is not None and w <= 40 for w in answers.wait_ms)


def test_p_sdk_25_timeout_raises_wait_timeout_error_carrying_the_last_state() -> None:
    answers = Answers(httpx.Response(200, json=task("t1", "running")))
    with respx.mock:
        respx.get(f"{BASE}/tasks/t1").mock(side_effect=answers)
        with pytest.raises(WaitTimeoutError) as info:
            Orch8Client(BASE, retry=fast()).wait_task("t1", timeout_ms=1)
    assert info.value.last_state.status == "running" and info.value.last_state.id == "t1"
    assert info.value.timeout_ms == 1 and info.value.code == "wait_timeout"
    assert isinstance(info.value, TimeoutError)
    assert answers.wait_ms in ([0], [1])  # the first round is always asked


def test_p_sdk_25_timeout_of_zero_or_less_means_the_default() -> None:
    assert _Rounds(0).timeout_ms == DEFAULT_WAIT_TIMEOUT_MS
    assert _Rounds(-5).timeout_ms == DEFAULT_WAIT_TIMEOUT_MS


def test_p_sdk_25_outages_are_ridden_out_past_one_calls_retries() -> None:
    """More 503s in a row than the client's 3 retries: the wait keeps going (P-SDK-25)."""
    answers = Answers(
        *[httpx.Response(503, json=problem(503, "unavailable"))] * 9,
        httpx.Response(200, json=task("t1", "completed")),
    )
    with respx.mock:
        respx.get(f"{BASE}/tasks/t1").mock(side_effect=answers)
        got = Orch8Client(BASE, retry=fast()).wait_task("t1", timeout_ms=20_000)
    assert got.status == "completed" and len(answers.wait_ms) == 10


def test_p_sdk_25_other_errors_end_the_wait_at_once() -> None:
    answers = Answers(httpx.Response(404, json=problem(404, "not_found")))
    with respx.mock:
        respx.get(f"{BASE}/tasks/t1").mock(side_effect=answers)
        with pytest.raises(NotFoundError):
            Orch8Client(BASE, retry=fast()).wait_task("t1")
    assert len(answers.wait_ms) == 1


@pytest.mark.parametrize("status", ["completed", "failed", "cancelled"])
def test_p_sdk_25_every_final_instance_status_is_returned_not_raised(status: str) -> None:
    answers = Answers(httpx.Response(200, json=instance(status)))
    with respx.mock:
        respx.get(f"{BASE}/instances/inst_1").mock(side_effect=answers)
        got = Orch8Client(BASE, retry=fast()).wait_instance("inst_1", timeout_ms=1000)
    assert got.status == status and len(answers.wait_ms) == 1


@pytest.mark.parametrize("status", ["completed", "failed", "cancelled", "expired"])
def test_p_sdk_25_every_final_task_status_is_returned_not_raised(status: str) -> None:
    answers = Answers(
        httpx.Response(200, json=task("t1", "pending")),
        httpx.Response(200, json=task("t1", status)),
    )
    with respx.mock:
        respx.get(f"{BASE}/tasks/t1").mock(side_effect=answers)
        got = Orch8Client(BASE, retry=fast()).wait_task("t1")
    assert got.status == status and len(answers.wait_ms) == 2


def test_p_sdk_25_outage_during_a_wait_is_retried_like_any_safe_call() -> None:
    answers = Answers(
        httpx.Response(503, json=problem(503, "unavailable")),
        httpx.ConnectError("refused"),
        httpx.Response(200, json=instance("completed")),
    )
    with respx.mock:
        respx.get(f"{BASE}/instances/inst_1").mock(side_effect=answers)
        got = Orch8Client(BASE, retry=fast()).wait_instance("inst_1")
    assert got.status == "completed" and len(answers.wait_ms) == 3


def test_p_sdk_25_async_client_waits_the_same_way() -> None:
    answers = Answers(
        httpx.Response(503, json=problem(503, "unavailable")),
        httpx.Response(200, json=instance("running")),
        httpx.Response(200, json=instance("failed")),
    )

    async def main() -> Any:
        async with AsyncOrch8Client(BASE, retry=fast()) as client:
            done = await client.wait_instance("inst_1")
            with pytest.raises(WaitTimeoutError) as info:
                await client.wait_task("t1", timeout_ms=1)
            return done, info.value

    with respx.mock:
        respx.get(f"{BASE}/instances/inst_1").mock(side_effect=answers)
        respx.get(f"{BASE}/tasks/t1").mock(side_effect=Answers(httpx.Response(200, json=task())))
        done, timed_out = asyncio.run(main())
    assert done.status == "failed" and len(answers.wait_ms) == 3
    assert timed_out.last_state.status == "pending"


def test_p_sdk_25_get_task_keeps_its_signature_and_sends_no_wait_ms() -> None:
    answers = Answers(httpx.Response(200, json=task("t1", "pending")))
    with respx.mock:
        respx.get(f"{BASE}/tasks/t1").mock(side_effect=answers)
        assert Orch8Client(BASE, retry=fast()).get_task("t1").status == "pending"
    assert answers.wait_ms == [None]
