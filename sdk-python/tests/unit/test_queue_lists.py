"""P-SDK-23 several queues, label routing and the queue controls (mocked HTTP, no network)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import respx

import orch8
from orch8 import Orch8Client, TaskContext, Worker
from orch8.models import HandlerControl, QueueControl, QueueHistory

from .conftest import BASE, task
from .fake_server import FakeServer, Running, wait_until

# --- P-SDK-23 refusals, when the worker is built -------------------------------------------

REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"queue_name": "a", "queue_names": ["b"]}, "queue_name or queue_names"),
    ({"queue_names": []}, "queue_names must name at least one"),
    ({"queue_names": ["a", "b", "a"]}, "queue_names repeats 'a'"),
    ({"queue_names": [f"q{n}" for n in range(11)]}, "queue_names takes at most 10"),
    ({"queue_names": "high"}, "queue_names must be a list"),
    ({"queue_names": ["a", ""]}, "queue_names: '' is not"),
    ({"queue_names": ["a", "b"], "queue_weights": {"a": 1}}, "queue_weights must weigh.*'b'"),
    ({"queue_names": ["a"], "queue_weights": {"a": 1, "z": 2}}, "queue_weights.*'z' not in"),
    ({"queue_names": ["a"], "queue_weights": {"a": 0}}, r"queue_weights\['a'\] is 0"),
    ({"queue_names": ["a"], "queue_weights": {"a": 1001}}, r"queue_weights\['a'\] is 1001"),
    ({"queue_names": ["a"], "queue_weights": {"a": 1.5}}, "must be an integer"),
    ({"queue_names": ["a"], "queue_weights": {"a": True}}, "must be an integer"),
    ({"queue_weights": {"a": 1}}, "queue_weights needs queue_names"),
    ({"queue_name": "a", "queue_weights": {"a": 1}}, "queue_weights needs queue_names"),
]


@pytest.mark.parametrize(("options", "message"), REFUSED)
def test_p_sdk_23_bad_queue_options_are_refused_before_any_request(
    options: dict[str, Any], message: str
) -> None:
    """P-SDK-23: ValueError at construction, naming the option; the server never hears of it."""
    server = FakeServer()
    with pytest.raises(ValueError, match=message):
        server.worker(**options)
    assert server.requests == []


@pytest.mark.parametrize(
    "options",
    [
        {"queue_names": ["a"]},
        {"queue_names": [f"q{n}" for n in range(10)]},
        {"queue_names": ("a", "b"), "queue_weights": {"b": 1000, "a": 1}},
    ],
)
def test_p_sdk_23_valid_queue_lists_are_accepted(options: dict[str, Any]) -> None:
    worker = Worker(base_url=BASE, **options)
    assert worker.queue_names == list(options["queue_names"])
    assert worker.queue_weights == options.get("queue_weights")


# --- P-SDK-23 what goes on the wire --------------------------------------------------------


def _run_once(server: FakeServer, **options: Any) -> list[TaskContext]:
    """Run a worker until it handled every task the fake server holds; the contexts seen."""
    expected = len(server.pending)
    seen: list[TaskContext] = []
    worker = server.worker(concurrency=1, **options)
    worker.register("process_image", seen.append)
    run = Running(worker)
    try:
        wait_until(lambda: len(server.completed) == expected and server.pending == [])
        wait_until(lambda: len(server.sent("POST", "/workers/tasks/poll/batch")) >= 2)
    finally:
        run.stop()
    return seen


def test_p_sdk_23_strict_list_is_sent_in_every_poll_and_registered() -> None:
    server = FakeServer()
    server.add("t1", queue_name="high")
    _run_once(server, queue_names=["high", "low"])
    polls = server.sent("POST", "/workers/tasks/poll/batch")
    assert polls and all(p["queue_names"] == ["high", "low"] for p in polls)
    assert all("queue_name" not in p and "queue_weights" not in p for p in polls)
    (registration,) = server.sent("POST", "/workers")
    assert registration["queues"] == ["high", "low"]  # P-SDK-21 with P-SDK-23


def test_p_sdk_23_weights_are_sent_unchanged_in_every_poll() -> None:
    server = FakeServer()
    server.add("t1", queue_name="a")
    _run_once(server, queue_names=["a", "b"], queue_weights={"a": 3, "b": 1})
    polls = server.sent("POST", "/workers/tasks/poll/batch")
    assert polls and all(
        p["queue_names"] == ["a", "b"] and p["queue_weights"] == {"a": 3, "b": 1} for p in polls
    )
    assert server.sent("POST", "/workers")[0]["queues"] == ["a", "b"]


@pytest.mark.parametrize(
    ("options", "queues", "queue_name"),
    [({}, ["default"], None), ({"queue_name": "emails"}, ["emails"], "emails")],
)
def test_p_sdk_23_one_queue_or_none_polls_as_before(
    options: dict[str, Any], queues: list[str], queue_name: str | None
) -> None:
    server = FakeServer()
    server.add("t1")
    _run_once(server, **options)
    polls = server.sent("POST", "/workers/tasks/poll/batch")
    assert all(p.get("queue_name") == queue_name for p in polls)
    assert all("queue_names" not in p and "queue_weights" not in p for p in polls)
    assert server.sent("POST", "/workers")[0]["queues"] == queues


def test_p_sdk_23_the_context_names_the_claimed_tasks_own_queue() -> None:
    server = FakeServer()
    server.add("t1", queue_name="high")
    server.add("t2", queue_name="low")
    seen = _run_once(server, queue_names=["high", "low"])
    assert {c.id: c.queue_name for c in seen} == {"t1": "high", "t2": "low"}


def test_p_label_1_worker_labels_are_sent_at_registration() -> None:
    server = FakeServer()
    server.add("t1")
    _run_once(server, labels={"gpu": "a100"})
    assert server.sent("POST", "/workers")[0]["labels"] == {"gpu": "a100"}


# --- producer side: required_labels (P-LABEL-1) --------------------------------------------


@respx.mock
def test_p_label_1_enqueue_and_enqueue_batch_take_required_labels() -> None:
    one = respx.post(f"{BASE}/tasks").respond(201, json=task("t1"))
    many = respx.post(f"{BASE}/tasks/batch").respond(201, json={"tasks": [task("t2")]})
    client = Orch8Client(BASE)
    client.enqueue("render", required_labels={"gpu": "a100"})
    assert json.loads(one.calls.last.request.content)["required_labels"] == {"gpu": "a100"}
    client.enqueue_batch([{"handler_name": "render", "required_labels": {"region": "eu"}}])
    sent = json.loads(many.calls.last.request.content)
    assert sent["tasks"][0]["required_labels"] == {"region": "eu"}


# --- queue controls (P-CTRL-1..2, P-OBS-5): typed answers, retried as safe ------------------


def control(queue: str = "emails", **over: Any) -> dict[str, Any]:
    body = {
        "queue_name": queue,
        "paused": False,
        "paused_at": None,
        "max_running": None,
        "running": 0,
        "updated_at": "2026-11-21T10:31:00.000Z",
    }
    return {**body, **over}


@respx.mock
def test_p_ctrl_1_pause_and_resume_are_typed_and_retried_on_outages(fast_retry) -> None:
    pause = respx.post(f"{BASE}/queues/emails/pause")
    pause.side_effect = [
        httpx.Response(503, json={"code": "unavailable"}),
        httpx.Response(200, json=control(paused=True, paused_at="2026-11-21T10:31:00.000Z")),
    ]
    respx.post(f"{BASE}/queues/emails/resume").respond(200, json=control())
    client = Orch8Client(BASE, retry=fast_retry)
    paused = client.pause_queue("emails")
    assert isinstance(paused, QueueControl) and paused.paused is True
    assert pause.call_count == 2  # P-SDK-2: x-orch8-retry safe
    assert client.resume_queue("emails").paused is False


@respx.mock
def test_p_ctrl_2_limits_send_max_running_and_null_removes_it() -> None:
    queue = respx.put(f"{BASE}/queues/emails/limit").respond(200, json=control(max_running=4))
    handler = respx.put(f"{BASE}/handlers/render/limit").respond(
        200,
        json={
            "handler_name": "render",
            "max_running": None,
            "running": 0,
            "updated_at": "2026-11-21T10:31:00.000Z",
        },
    )
    client = Orch8Client(BASE)
    got = client.set_queue_limit("emails", max_running=4)
    assert isinstance(got, QueueControl) and got.max_running == 4
    assert json.loads(queue.calls.last.request.content) == {"max_running": 4}
    removed = client.set_handler_limit("render", max_running=None)
    assert isinstance(removed, HandlerControl) and removed.max_running is None
    assert json.loads(handler.calls.last.request.content) == {"max_running": None}


@respx.mock
def test_p_obs_5_queue_history_is_typed() -> None:
    point = {
        "at": "2026-11-21T10:30:00.000Z",
        "enqueued": 10,
        "completed": 9,
        "failed": 0,
        "depth": 1,
        "wait_p50_ms": 3,
        "wait_p95_ms": 12,
    }
    route = respx.get(f"{BASE}/queues/emails/history").respond(
        200,
        json={
            "queue_name": "emails",
            "bucket_ms": 60000,
            "generated_at": "2026-11-21T10:30:20.000Z",
            "points": [point],
        },
    )
    history = Orch8Client(BASE).queue_history("emails", minutes=5)
    assert isinstance(history, QueueHistory) and history.points[0].completed == 9
    assert route.calls.last.request.url.params["minutes"] == "5"


def test_queue_controls_are_on_both_clients() -> None:
    for name in ("pause_queue", "resume_queue", "set_queue_limit", "set_handler_limit"):
        assert callable(getattr(orch8.Orch8Client, name))
        assert callable(getattr(orch8.AsyncOrch8Client, name))
    assert callable(orch8.AsyncOrch8Client.queue_history)
