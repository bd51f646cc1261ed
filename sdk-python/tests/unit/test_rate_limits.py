"""P-RATE-1, P-RATE-4: the rate-limit operator calls send their path, method and body; enqueue
carries rate_limit_key; a held task's `waiting` says `rate_limited` with `until` (mocked HTTP,
no network)."""

from __future__ import annotations

import asyncio
import datetime
import json

import pytest
import respx

import orch8
from orch8 import AsyncOrch8Client, Orch8Client
from orch8._generated.models import TaskWaiting
from orch8.models import RateLimit, RateLimitList

from .conftest import BASE, task

LIMIT = {
    "key": "crm-api",
    "limit": 10,
    "period_ms": 1000,
    "burst": 2,
    "tokens": 2,
    "next_token_at": None,
    "held": 0,
    "updated_at": "2026-11-27T10:00:00.000Z",
}


@respx.mock
def test_p_rate_1_set_list_and_delete_a_rate_limit() -> None:
    put = respx.put(f"{BASE}/rate-limits/crm-api").respond(200, json=LIMIT)
    listed = respx.get(f"{BASE}/rate-limits").respond(200, json={"rate_limits": [LIMIT]})
    deleted = respx.delete(f"{BASE}/rate-limits/crm-api").respond(204)
    client = Orch8Client(BASE)
    got = client.set_rate_limit("crm-api", limit=10, period_ms=1000, burst=2)
    assert isinstance(got, RateLimit) and (got.key, got.burst, got.held) == ("crm-api", 2, 0)
    assert json.loads(put.calls.last.request.content) == {
        "limit": 10,
        "period_ms": 1000,
        "burst": 2,
    }
    client.set_rate_limit("crm-api", limit=10, period_ms=1000)  # burst defaults on the server
    assert json.loads(put.calls.last.request.content) == {"limit": 10, "period_ms": 1000}
    limits = client.list_rate_limits()
    assert isinstance(limits, RateLimitList) and [r.key for r in limits.rate_limits] == ["crm-api"]
    assert listed.called
    client.delete_rate_limit("crm-api")
    assert deleted.called
    assert deleted.calls.last.request.content == b""


@respx.mock
def test_p_rate_4_an_unknown_limit_is_not_found() -> None:
    respx.delete(f"{BASE}/rate-limits/nope").respond(
        404, json={"code": "not_found", "title": "Not found", "status": 404}
    )
    with pytest.raises(orch8.NotFoundError):
        Orch8Client(BASE).delete_rate_limit("nope")


@respx.mock
def test_p_rate_1_enqueue_and_enqueue_batch_send_the_key() -> None:
    one = respx.post(f"{BASE}/tasks").respond(201, json={**task("t1"), "rate_limit_key": "crm-api"})
    many = respx.post(f"{BASE}/tasks/batch").respond(201, json={"tasks": [task("t2")]})
    client = Orch8Client(BASE)
    created = client.enqueue("sync_contacts", rate_limit_key="crm-api")
    assert json.loads(one.calls.last.request.content) == {
        "handler_name": "sync_contacts",
        "rate_limit_key": "crm-api",
    }
    assert created.rate_limit_key == "crm-api"
    client.enqueue_batch([{"handler_name": "sync_contacts", "rate_limit_key": "crm-api"}])
    item = json.loads(many.calls.last.request.content)["tasks"][0]
    assert item == {"handler_name": "sync_contacts", "rate_limit_key": "crm-api"}
    client.enqueue("sync_contacts")  # no key, no field
    assert "rate_limit_key" not in json.loads(one.calls.last.request.content)


@respx.mock
def test_p_rate_1_a_held_task_says_rate_limited_until_the_next_token() -> None:
    held = {
        **task("t3"),
        "rate_limit_key": "crm-api",
        "waiting": {
            "reason": "rate_limited",
            "detail": "rate limit crm-api (10 per 1000 ms, burst 2): waiting for a token",
            "until": "2026-11-27T10:00:00.100Z",
        },
    }
    respx.get(f"{BASE}/tasks/t3").respond(200, json=held)

    async def read() -> orch8.models.Task:
        async with AsyncOrch8Client(BASE) as client:
            return await client.get_task("t3")

    got = asyncio.run(read())
    waiting = got.waiting
    assert isinstance(waiting, TaskWaiting) and waiting.reason == "rate_limited"
    assert isinstance(waiting.until, datetime.datetime) and waiting.until.microsecond == 100_000


def test_rate_limit_calls_are_on_both_clients() -> None:
    for name in ("set_rate_limit", "list_rate_limits", "delete_rate_limit"):
        assert callable(getattr(Orch8Client, name))
        assert callable(getattr(AsyncOrch8Client, name))
