"""P-KEY-1: enqueue carries concurrency_key / max_concurrency; a Task reads them back, and a
held task's `waiting` says `concurrency_key` with its slots. P-KEY-7: the same for
start_instance and an Instance (mocked HTTP, no network)."""

from __future__ import annotations

import asyncio
import json

import respx

from orch8 import AsyncOrch8Client, Orch8Client
from orch8.models import Task

from .conftest import BASE, instance, task

KEYED = {"concurrency_key": "customer-42", "max_concurrency": 2}


@respx.mock
def test_p_key_1_enqueue_and_enqueue_batch_send_the_key_and_read_it_back() -> None:
    one = respx.post(f"{BASE}/tasks").respond(201, json={**task("t1"), **KEYED})
    many = respx.post(f"{BASE}/tasks/batch").respond(201, json={"tasks": [task("t2")]})
    client = Orch8Client(BASE)
    created = client.enqueue("sync_invoices", concurrency_key="customer-42", max_concurrency=2)
    sent = json.loads(one.calls.last.request.content)
    assert (sent["concurrency_key"], sent["max_concurrency"]) == ("customer-42", 2)
    assert (created.concurrency_key, created.max_concurrency) == ("customer-42", 2)
    client.enqueue_batch([{"handler_name": "sync_invoices", "concurrency_key": "customer-7"}])
    item = json.loads(many.calls.last.request.content)["tasks"][0]
    assert item == {"handler_name": "sync_invoices", "concurrency_key": "customer-7"}
    # Without a key neither field is sent: max_concurrency alone is a 422 (P-KEY-5).
    client.enqueue("sync_invoices")
    assert json.loads(one.calls.last.request.content) == {"handler_name": "sync_invoices"}


@respx.mock
def test_p_key_1_a_held_task_says_concurrency_key_with_its_slots() -> None:
    held = {
        **task("t3"),
        **KEYED,
        "waiting": {
            "reason": "concurrency_key",
            "detail": "concurrency key customer-42 has 2 tasks in slots, its cap",
            "running": 2,
            "cap": 2,
        },
    }
    respx.get(f"{BASE}/tasks/t3").respond(200, json=held)

    async def read() -> Task:
        async with AsyncOrch8Client(BASE) as client:
            return await client.get_task("t3")

    got = asyncio.run(read())
    assert got.status == "pending" and got.concurrency_key == "customer-42"
    assert got.waiting is not None
    assert (got.waiting.reason, got.waiting.running, got.waiting.cap) == ("concurrency_key", 2, 2)


@respx.mock
def test_p_key_7_start_instance_sends_the_key_and_a_waiting_instance_says_so() -> None:
    started = respx.post(f"{BASE}/instances").respond(201, json={**instance(), **KEYED})
    waiting = {
        "reason": "concurrency_key",
        "detail": "2 instance(s) of concurrency key customer-42 hold its 2 slot(s)",
        "running": 2,
        "cap": 2,
    }
    respx.get(f"{BASE}/instances/inst_1").respond(
        200, json={**instance(), **KEYED, "waiting": waiting}
    )
    client = Orch8Client(BASE)
    created = client.start_instance(
        "thumbnail", input={"image": "cat.png"}, concurrency_key="customer-42", max_concurrency=2
    )
    sent = json.loads(started.calls.last.request.content)
    assert sent == {"sequence": "thumbnail", "input": {"image": "cat.png"}, **KEYED}
    assert (created.concurrency_key, created.max_concurrency) == ("customer-42", 2)
    got = client.get_instance("inst_1")
    assert got.status == "running" and got.waiting
    assert (got.waiting.reason, got.waiting.running, got.waiting.cap) == ("concurrency_key", 2, 2)
    # Without a key neither field is sent: max_concurrency alone is a 422 (P-KEY-7).
    client.start_instance("thumbnail")
    assert json.loads(started.calls.last.request.content) == {"sequence": "thumbnail"}


@respx.mock
def test_p_key_7_an_instance_from_an_older_server_without_the_fields_still_parses() -> None:
    # A 1.10.0 server sends none of concurrency_key, max_concurrency, waiting: all optional.
    respx.get(f"{BASE}/instances/inst_1").respond(200, json=instance())
    got = Orch8Client(BASE).get_instance("inst_1")
    assert got.id == "inst_1" and got.status == "running"
    assert not got.concurrency_key and not got.max_concurrency and not got.waiting


@respx.mock
def test_a_task_from_a_1_9_server_without_the_key_fields_reads_them_as_null() -> None:
    # Contract 1.10.0 added concurrency_key, max_concurrency and rate_limit_key to Task as
    # required and nullable: a server of 1.9 sends none of them, and they read as null.
    older = {k: v for k, v in task().items()
             if k not in ("concurrency_key", "max_concurrency", "rate_limit_key")}  # fmt: skip
    respx.get(f"{BASE}/tasks/task_1").respond(200, json=older)
    got = Orch8Client(BASE).get_task("task_1")
    assert got.id == "task_1"
    assert (got.concurrency_key, got.max_concurrency, got.rate_limit_key) == (None, None, None)
