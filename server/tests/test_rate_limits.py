"""Rate limits over HTTP (P-RATE-1..5), on both backends: tasks naming a rate limit key are
admitted at its pace, at most `burst` admitted and unclaimed at once, the next token's
instant is known and a waiting poll gets the task then, and operators change the pace."""

from __future__ import annotations

from typing import Any

import httpx
from conftest import assert_problem, enqueue
from test_workflows import start, wait

from orch8_server.timefmt import parse


def paced(api: httpx.Client, handler: str, key: str, **fields: Any) -> dict:
    return enqueue(api, handler, rate_limit_key=key, **fields)


def set_limit(api: httpx.Client, key: str, **body: Any) -> dict:
    r = api.put(f"/rate-limits/{key}", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def batch(api: httpx.Client, handler: str, wait_ms: int = 0, size: int = 10) -> list[dict]:
    r = api.post("/workers/tasks/poll/batch",
                 json={"handler_names": [handler], "wait_ms": wait_ms, "batch_size": size})  # fmt: skip
    assert r.status_code == 200, r.text
    tasks: list[dict] = r.json()["tasks"]
    return tasks


def test_tasks_start_at_the_pace_of_their_rate_limit_P_RATE_1_3(
    api: httpx.Client, name: str
) -> None:
    key = name + "-api"
    limit = set_limit(api, key, limit=2, period_ms=1000, burst=2)
    assert (limit["limit"], limit["burst"], limit["tokens"], limit["held"]) == (2, 2, 2, 0)
    tasks = [paced(api, name, key) for _ in range(4)]
    plain = enqueue(api, name)  # enqueued last, claimed with the first two: held block nothing
    first = batch(api, name)
    assert [t["id"] for t in first] == [tasks[0]["id"], tasks[1]["id"], plain["id"]]
    body = api.get(f"/tasks/{tasks[2]['id']}").json()
    assert body["status"] == "pending" and body["rate_limit_key"] == key
    waiting = body["waiting"]
    assert waiting["reason"] == "rate_limited" and waiting["until"], waiting
    listed = api.get("/rate-limits").json()["rate_limits"]
    mine = next(r for r in listed if r["key"] == key)
    assert mine["held"] == 2 and mine["tokens"] < 1 and mine["next_token_at"] == waiting["until"]
    # A long-poll gets the next task when its token comes (the timer), not before.
    third = batch(api, name, wait_ms=3000)  # under the 5 s safety net (reaper.KEYS_S)
    assert [t["id"] for t in third] == [tasks[2]["id"]]
    started = [
        parse(api.get(f"/tasks/{t['id']}").json()["started_at"]) for t in (first[0], third[0])
    ]
    assert started[1] - started[0] >= 400, started  # one token per 500 ms (P-RATE-1)
    assert started[1] >= parse(waiting["until"]) - 5, (started, waiting["until"])


def test_at_most_burst_tasks_wait_admitted_for_workers_P_RATE_2(
    api: httpx.Client, name: str
) -> None:
    key = name + "-api"
    set_limit(api, key, limit=1000, period_ms=1000, burst=3)
    for _ in range(8):
        paced(api, name, key)
    mine = next(r for r in api.get("/rate-limits").json()["rate_limits"] if r["key"] == key)
    assert mine["held"] == 5 and mine["next_token_at"] is None, mine  # waiting for claims
    assert len(batch(api, name)) == 3  # workers that come back start `burst` at once
    got = 3
    while got < 8:  # then the rest as claims let them in, never more than burst at once
        more = batch(api, name, wait_ms=3000)
        assert 1 <= len(more) <= 3, more
        got += len(more)


def test_an_operator_changes_and_removes_the_pace_P_RATE_4(api: httpx.Client, name: str) -> None:
    key = name + "-api"
    free = paced(api, name, key)  # no limit defined: not paced
    assert [t["id"] for t in batch(api, name)] == [free["id"]]
    set_limit(api, key, limit=1, period_ms=3_600_000, burst=1)  # one an hour
    tasks = [paced(api, name, key) for _ in range(4)]
    assert [t["id"] for t in batch(api, name)] == [tasks[0]["id"]]
    assert batch(api, name) == []
    # Faster: the next token comes within milliseconds, and a waiting poll gets it.
    assert set_limit(api, key, limit=1000, period_ms=1000, burst=1)["limit"] == 1000
    assert [t["id"] for t in batch(api, name, wait_ms=3000, size=1)] == [tasks[1]["id"]]
    set_limit(api, key, limit=1, period_ms=3_600_000, burst=1)  # slow again
    left = {t["id"] for t in tasks[2:]}
    first = batch(api, name, size=1)  # tasks[2] may have been admitted by tasks[1]'s claim
    left -= {t["id"] for t in first}
    assert batch(api, name) == []  # the rest waits for a token an hour away
    r = api.delete(f"/rate-limits/{key}")
    assert r.status_code == 204, r.text
    assert {t["id"] for t in batch(api, name)} == left  # held ones go at once
    assert_problem(api.delete(f"/rate-limits/{key}"), 404, "not_found")
    assert_problem(
        api.put(f"/rate-limits/{key}", json={"limit": 0, "period_ms": 1}), 422, "validation_error"
    )


def test_a_task_names_one_kind_of_key_P_RATE_5(api: httpx.Client, name: str) -> None:
    r = api.post("/tasks", json={"handler_name": name, "rate_limit_key": "a",
                                 "concurrency_key": "b"})  # fmt: skip
    body = assert_problem(r, 422, "validation_error")
    assert body["errors"][0]["pointer"] == "/rate_limit_key"
    r = api.post("/sequences", json={"name": name, "blocks": [
        {"type": "step", "id": "s", "handler": name, "rate_limit_key": "a",
         "concurrency_key": "b"}]})  # fmt: skip
    body = assert_problem(r, 422, "validation_error")
    assert body["errors"][0]["pointer"] == "/blocks/0/rate_limit_key", body


def test_a_workflow_steps_rate_limit_key_is_rendered_P_RATE_5(api: httpx.Client, name: str) -> None:
    set_limit(api, name + "-acme", limit=1, period_ms=3_600_000, burst=1)
    r = api.post("/sequences", json={"name": name, "blocks": [
        {"type": "for_each", "id": "each", "collection": "context.data.items", "body": [
            {"type": "step", "id": "call", "handler": name, "params": {"i": "{{item}}"},
             "rate_limit_key": name + "-{{context.data.vendor}}"}]}]})  # fmt: skip
    assert r.status_code == 201, r.text
    inst = start(api, name, context={"data": {"vendor": "acme", "items": [1, 2]}})
    got = batch(api, name)
    assert len(got) == 1 and got[0]["params"]["i"] == 1, got  # one token an hour
    task = api.get(f"/tasks/{got[0]['id']}").json()
    assert task["rate_limit_key"] == name + "-acme"
    api.delete(f"/rate-limits/{name}-acme").raise_for_status()
    for t in got + batch(api, name):
        api.post(f"/workers/tasks/{t['id']}/complete",
                 json={"lease_id": t["lease"]["id"], "output": t["params"]["i"]}).raise_for_status()  # fmt: skip
    assert wait(api, inst)["status"] == "completed"
