"""Workflows (P-WF-1..10) on both backends: a real server, a raw-HTTP worker."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from typing import Any

import asyncpg
import httpx
import pytest
from conftest import assert_problem, eventually


def define(api: httpx.Client, name: str, steps: list[Any], **extra: Any) -> dict:
    r = api.post("/sequences", json={"name": name, "steps": steps, **extra})
    assert r.status_code in (200, 201), r.text
    return r.json()


def start(api: httpx.Client, name: str, **fields: Any) -> dict:
    r = api.post("/instances", json={"sequence": name, **fields})
    assert r.status_code == 201, r.text
    return r.json()


def claim_step(api: httpx.Client, handler: str, timeout_ms: int = 5000) -> dict:
    r = api.post("/workers/tasks/poll", json={"handler_names": [handler], "wait_ms": timeout_ms})
    assert r.status_code == 200, (handler, r.status_code, r.text)
    return r.json()


def work(api: httpx.Client, handler: str, fn: Callable[[dict], Any]) -> dict:
    """Claim one task of `handler` and complete it with fn(params)."""
    task = claim_step(api, handler)
    r = api.post(
        f"/workers/tasks/{task['id']}/complete",
        json={"lease_id": task["lease"]["id"], "output": fn(task["params"])},
    )
    assert r.status_code == 200, r.text
    return task


def fail(api: httpx.Client, handler: str, retryable: bool = False) -> dict:
    task = claim_step(api, handler)
    r = api.post(
        f"/workers/tasks/{task['id']}/fail",
        json={"lease_id": task["lease"]["id"], "error": "boom", "code": "boom",
              "retryable": retryable},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    return task


def wait(api: httpx.Client, inst: dict, ms: int = 10000) -> dict:
    r = api.get(f"/instances/{inst['id']}", params={"wait_ms": ms})
    assert r.status_code == 200, r.text
    return r.json()


def test_chain_outputs_flow_into_params_P_WF_2_P_WF_4(api: httpx.Client, name: str) -> None:
    a, b, c = name + "_a", name + "_b", name + "_c"
    define(api, name, [
        {"id": "resize", "handler": a, "params": {"url": {"$from": "input.image_url"}}},
        {"id": "tag", "handler": b, "params": {"src": {"$from": "steps.resize.output.url"}}},
        {"id": "store", "handler": c, "params": {"tags": {"$from": "steps.tag.output"},
                                                  "fixed": [1, {"k": "v"}]}},
    ])  # fmt: skip
    inst = start(api, name, input={"image_url": "http://x/cat.png"})
    assert inst["status"] == "running" and inst["id"].startswith("inst_")
    t1 = work(api, a, lambda p: {"url": p["url"] + "?w=800"})
    assert t1["context"] == {"instance_id": inst["id"], "step_id": "resize"}
    assert t1["params"] == {"url": "http://x/cat.png"}
    t2 = work(api, b, lambda p: ["cat", p["src"]])
    assert t2["params"] == {"src": "http://x/cat.png?w=800"}
    t3 = work(api, c, lambda p: {"stored": p})
    assert t3["params"] == {"tags": ["cat", "http://x/cat.png?w=800"], "fixed": [1, {"k": "v"}]}
    done = wait(api, inst)
    assert done["status"] == "completed", done
    assert done["output"] == {"stored": t3["params"]}
    assert [s["status"] for s in done["steps"]] == ["completed"] * 3
    assert [s["task_id"] for s in done["steps"]] == [t1["id"], t2["id"], t3["id"]]
    assert all(s["attempts"] == 1 and s["finished_at"] for s in done["steps"])
    # GET /tasks?instance_id= lists exactly the instance's tasks (P-WF-4).
    listed = api.get("/tasks", params={"instance_id": inst["id"]}).json()["tasks"]
    assert sorted(t["id"] for t in listed) == sorted([t1["id"], t2["id"], t3["id"]])


def test_parallel_group_fans_out_and_joins_P_WF_3(api: httpx.Client, name: str) -> None:
    a, b, c = name + "_a", name + "_b", name + "_c"
    define(api, name, [
        {"id": "fan", "parallel": [{"id": "left", "handler": a}, {"id": "right", "handler": b}]},
        {"id": "join", "handler": c, "params": {"both": {"$from": "steps.fan.output"}}},
    ])  # fmt: skip
    inst = start(api, name)
    work(api, b, lambda p: "R")  # both children are claimable at once
    work(api, a, lambda p: "L")
    t = work(api, c, lambda p: p["both"])
    assert t["params"] == {"both": {"left": "L", "right": "R"}}
    done = wait(api, inst)
    assert done["status"] == "completed" and done["output"] == {"left": "L", "right": "R"}
    assert [(s["id"], s["group"]) for s in done["steps"]] == [
        ("fan", None),
        ("left", "fan"),
        ("right", "fan"),
        ("join", None),
    ]


def test_sleep_step_is_run_by_the_engine_P_WF_3(api: httpx.Client, name: str) -> None:
    define(api, name, [
        {"id": "nap", "handler": "sleep", "params": {"duration_ms": 300}},
        {"id": "after", "handler": name},
    ])  # fmt: skip
    inst = start(api, name)
    assert api.post("/workers/tasks/poll", json={"handler_names": ["sleep"], "wait_ms": 0}
                    ).status_code == 204  # fmt: skip
    t = work(api, name, lambda p: 1)
    done = wait(api, inst)
    assert done["status"] == "completed" and done["steps"][0]["task_id"] is None
    assert t["created_at"] >= done["steps"][0]["finished_at"]
    from orch8_server.timefmt import parse

    slept = parse(done["steps"][0]["finished_at"]) - parse(done["steps"][0]["started_at"])
    assert slept >= 300


def test_fallback_output_becomes_the_step_output_P_WF_6(api: httpx.Client, name: str) -> None:
    define(api, name, [
        {"id": "main", "handler": name, "retry": {"max_attempts": 2, "initial_backoff_ms": 0,
                                                  "jitter": 0},
         "fallback": {"handler": name + "_fb", "params": {"why": "fallback"}}},
        {"id": "next", "handler": name + "_next", "params": {"got": {"$from": "steps.main.output"}}},
    ])  # fmt: skip
    inst = start(api, name)
    fail(api, name, retryable=True)  # P-WF-6: the step's own retry policy first
    fail(api, name, retryable=True)
    work(api, name + "_fb", lambda p: p["why"])
    t = work(api, name + "_next", lambda p: p["got"])
    assert t["params"] == {"got": "fallback"}
    done = wait(api, inst)
    assert done["status"] == "completed" and done["steps"][0]["fallback"] is True
    assert done["steps"][0]["attempts"] == 3


def test_on_error_runs_then_the_instance_fails_P_WF_6(api: httpx.Client, name: str) -> None:
    define(
        api,
        name,
        [{"id": "only", "handler": name}],
        on_error={"handler": name + "_err", "params": {"inp": {"$from": "input"}}},
    )
    inst = start(api, name, input={"x": 1})
    fail(api, name)
    t = work(api, name + "_err", lambda p: "cleaned")
    assert t["params"] == {"inp": {"x": 1}}
    assert t["context"] == {"instance_id": inst["id"], "step_id": "on_error"}
    done = wait(api, inst)
    assert done["status"] == "failed" and done["error"]["code"] == "boom"
    assert done["on_error"]["status"] == "completed" and done["on_error"]["output"] == "cleaned"
    assert done["steps"][0]["status"] == "failed"


def test_permanent_failure_fails_the_instance_and_retry_resumes_P_WF_8(
    api: httpx.Client, name: str
) -> None:
    define(
        api, name, [{"id": "one", "handler": name + "_1"}, {"id": "two", "handler": name + "_2"}]
    )
    inst = start(api, name)
    t1 = work(api, name + "_1", lambda p: 11)
    fail(api, name + "_2")
    failed = wait(api, inst)
    assert failed["status"] == "failed" and failed["error"]["code"] == "boom"
    assert_problem(api.post(f"/instances/{inst['id']}/cancel"), 409, "invalid_state")
    r = api.post(f"/instances/{inst['id']}/retry")
    assert r.status_code == 200 and r.json()["status"] == "running", r.text
    t2 = work(api, name + "_2", lambda p: 22)
    done = wait(api, inst)
    assert done["status"] == "completed" and done["output"] == 22
    assert done["steps"][0]["task_id"] == t1["id"] and done["steps"][0]["output"] == 11
    assert done["steps"][1]["task_id"] == t2["id"] and done["steps"][1]["attempts"] == 2
    assert_problem(api.post(f"/instances/{inst['id']}/retry"), 409, "invalid_state")


def test_cancel_reaches_the_worker_through_heartbeat_P_WF_7(api: httpx.Client, name: str) -> None:
    define(api, name, [{"id": "long", "handler": name}, {"id": "never", "handler": name + "_n"}])
    inst = start(api, name)
    task = claim_step(api, name)
    r = api.post(f"/instances/{inst['id']}/cancel", json={"reason": "user"})
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    assert r.json()["steps"][0]["status"] == "cancelled"
    hb = api.post(f"/workers/tasks/{task['id']}/heartbeat", json={"lease_id": task["lease"]["id"]})
    assert_problem(hb, 409, "task_cancelled")  # P-CANCEL-2: the handler learns it
    assert api.get(f"/tasks/{task['id']}").json()["status"] == "cancelled"
    again = api.post(f"/instances/{inst['id']}/cancel")
    assert again.status_code == 200 and again.json()["status"] == "cancelled"
    assert api.post("/workers/tasks/poll", json={"handler_names": [name + "_n"], "wait_ms": 300}
                    ).status_code == 204  # fmt: skip


def test_idempotent_start_and_define_P_WF_1_P_WF_4(api: httpx.Client, name: str) -> None:
    steps = [{"id": "s", "handler": name}]
    first = api.post("/sequences", json={"name": name, "steps": steps})
    same = api.post("/sequences", json={"name": name, "steps": steps})
    assert first.status_code == 201 and same.status_code == 200
    assert same.json() == first.json() and first.json()["version"] == 1
    v2 = api.post("/sequences", json={"name": name, "steps": [{"id": "t", "handler": name}]})
    assert v2.status_code == 201 and v2.json()["version"] == 2
    assert api.get(f"/sequences/{name}").json()["version"] == 2
    assert api.get(f"/sequences/{name}", params={"version": 1}).json()["steps"] == steps
    a = api.post("/instances", json={"sequence": name, "idempotency_key": name, "version": 1})
    b = api.post("/instances", json={"sequence": name, "idempotency_key": name})
    assert a.status_code == 201 and b.status_code == 200 and a.json()["id"] == b.json()["id"]
    assert a.json()["version"] == 1
    tasks = api.get("/tasks", params={"instance_id": a.json()["id"]}).json()["tasks"]
    assert len(tasks) == 1
    listed = api.get("/instances", params={"sequence": name}).json()["instances"]
    assert [i["id"] for i in listed] == [a.json()["id"]]


def test_reference_errors_at_definition_P_WF_2(api: httpx.Client, name: str) -> None:
    cases = [
        ([{"id": "a", "handler": name, "params": {"x": {"$from": "steps.b.output"}}},
          {"id": "b", "handler": name}], "/steps/0/params/x/$from"),
        ([{"id": "a", "handler": name, "params": {"x": {"$from": "steps.zz.output"}}}],
         "/steps/0/params/x/$from"),
        ([{"id": "a", "handler": name, "params": {"x": [{"$from": "steps.a.output"}]}}],
         "/steps/0/params/x/0/$from"),
        ([{"id": "g", "parallel": [{"id": "l", "handler": name},
          {"id": "r", "handler": name, "params": {"x": {"$from": "steps.l.output"}}}]}],
         "/steps/0/parallel/1/params/x/$from"),
        ([{"id": "a", "handler": name}, {"id": "a", "handler": name}], "/steps/1/id"),
        ([{"id": "a"}], "/steps/0"),
    ]  # fmt: skip
    for steps, pointer in cases:
        body = assert_problem(api.post("/sequences", json={"name": name, "steps": steps}),
                              422, "validation_error")  # fmt: skip
        assert [e["pointer"] for e in body["errors"]] == [pointer], body
    assert_problem(api.get(f"/sequences/{name}"), 404, "not_found")


def test_missing_value_at_run_time_is_bad_reference_P_WF_2(api: httpx.Client, name: str) -> None:
    define(api, name, [{"id": "a", "handler": name, "params": {"x": {"$from": "input.nope"}}}])
    done = wait(api, start(api, name, input={}))
    assert done["status"] == "failed" and done["error"]["code"] == "bad_reference"


def test_tenant_isolation_P_TEN_3(server: Any, name: str) -> None:
    with (
        httpx.Client(base_url=server.url, headers={"X-Tenant-Id": "wf-a"}) as a,
        httpx.Client(base_url=server.url, headers={"X-Tenant-Id": "wf-b"}) as b,
    ):
        define(a, name, [{"id": "s", "handler": name}])
        assert_problem(b.get(f"/sequences/{name}"), 404, "not_found")
        assert_problem(b.post("/instances", json={"sequence": name}), 404, "not_found")
        inst = start(a, name)
        assert_problem(b.get(f"/instances/{inst['id']}"), 404, "not_found")
        assert_problem(b.post(f"/instances/{inst['id']}/cancel"), 404, "not_found")
        assert b.get("/instances").json()["instances"] == []
        assert name not in [s["name"] for s in b.get("/sequences").json()["sequences"]]
        assert b.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 0}
                      ).status_code == 204  # fmt: skip


def test_wait_ms_returns_when_final_P_WF_9(api: httpx.Client, name: str) -> None:
    define(api, name, [{"id": "s", "handler": name}])
    inst = start(api, name)
    r = api.get(f"/instances/{inst['id']}", params={"wait_ms": 200})
    assert r.status_code == 200 and r.json()["status"] == "running"
    task = work(api, name, lambda p: "ok")
    assert wait(api, inst, 10000)["output"] == "ok"
    t = api.get(f"/tasks/{task['id']}", params={"wait_ms": 5000}).json()
    assert t["status"] == "completed"
    pending = api.post("/tasks", json={"handler_name": name + "_idle"}).json()
    r = api.get(f"/tasks/{pending['id']}", params={"wait_ms": 200})
    assert r.status_code == 200 and r.json()["status"] == "pending"


def test_list_sequences_cursor_paging(api: httpx.Client, name: str) -> None:
    for i in range(3):
        define(api, f"{name}-{i}", [{"id": "s", "handler": name}])
    seen, cursor = [], None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = api.get("/sequences", params=params).json()
        seen += [s["name"] for s in page["sequences"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [n for n in seen if n.startswith(name)] == [f"{name}-{i}" for i in range(3)]
    eventually(lambda: True)


def test_reaper_and_manual_results_advance_instances_P_WF_5(api: httpx.Client, name: str) -> None:
    """Paths that are not a worker's complete/fail: the reaper exhausting attempts (a
    lease that expires) and an operator's manual completion also advance the instance."""
    define(api, name, [
        {"id": "lost", "handler": name, "retry": {"max_attempts": 1}},
    ])  # fmt: skip
    inst = start(api, name)
    r = api.post("/workers/tasks/poll", json={"handler_names": [name], "lease_ms": 100})
    assert r.status_code == 200  # claimed, never reported: the reaper fails it
    done = wait(api, inst)
    assert done["status"] == "failed" and done["error"]["code"] == "lease_expired", done
    define(api, name + "-m", [{"id": "m", "handler": name + "_m"}])
    inst = start(api, name + "-m")
    task_id = api.get("/tasks", params={"instance_id": inst["id"]}).json()["tasks"][0]["id"]
    assert api.post(f"/tasks/{task_id}/complete", json={"output": "by hand"}).status_code == 200
    done = wait(api, inst)
    assert done["status"] == "completed" and done["output"] == "by hand", done


def _run_sql(db: str, sql: str, *args: Any) -> None:
    """One statement on the server's own database, from outside the server."""
    if not db.startswith("postgresql"):
        with sqlite3.connect(db, timeout=10) as c:
            c.execute(sql.replace("$1", "?"), args)
        return

    async def run() -> None:
        conn = await asyncpg.connect(db)
        try:
            await conn.execute(sql, *args)
        finally:
            await conn.close()

    asyncio.run(run())


def test_a_step_task_that_expires_at_claim_time_fails_its_instance_P_WF_5(
    server: Any, api: httpx.Client, name: str
) -> None:
    """Expiry is the one end no result path reaches: the expiring statement records the
    instance event itself (no trigger on every status change since issue 15), and the
    pump advances the instance from it."""
    define(api, name, [{"id": "late", "handler": name}])
    inst = start(api, name)
    task_id = api.get("/tasks", params={"instance_id": inst["id"]}).json()["tasks"][0]["id"]
    _run_sql(server.db, "UPDATE tasks SET good_until = 1 WHERE id = $1", task_id)
    r = api.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 0})
    assert r.status_code in (200, 204), r.text  # P-EXPIRE-1: expired, never delivered
    assert api.get(f"/tasks/{task_id}").json()["status"] == "expired"
    done = wait(api, inst)
    assert done["status"] == "failed", done
    assert done["steps"][0]["status"] == "failed", done


# Issue hardening: definitions that cannot collide, strict references, read-back ----------


def test_reserved_step_ids_are_refused_P_WF_1(api: httpx.Client, name: str) -> None:
    """`on_error` names the sequence's on_error step (its record, its task's step_id): a
    step may not take it, at the top level or in a group."""
    steps = [{"id": f"s{i}", "handler": name} for i in range(3)]
    cases = [
        ([*steps, {"id": "on_error", "handler": name, "fallback": {"handler": name}}],
         "/steps/3/id"),
        ([{"id": "g", "parallel": [{"id": "a", "handler": name},
                                   {"id": "on_error", "handler": name}]}],
         "/steps/0/parallel/1/id"),
    ]  # fmt: skip
    for body_steps, pointer in cases:
        r = api.post("/sequences", json={"name": name, "steps": body_steps,
                                         "on_error": {"handler": name + "_err"}})  # fmt: skip
        body = assert_problem(r, 422, "validation_error")
        assert [e["pointer"] for e in body["errors"]] == [pointer], body
        assert "reserved" in body["errors"][0]["detail"], body
    assert_problem(api.get(f"/sequences/{name}"), 404, "not_found")


def _store_definition(db: str, tenant: str, name: str, definition: dict) -> None:
    """A version 1 stored as an older server accepted it (no definition checks)."""
    sql = (
        "INSERT INTO sequences (tenant, name, version, definition, created_at) "
        f"VALUES ('{tenant}', '{name}', 1, $1, 0)"
    )
    _run_sql(db, sql, json.dumps(definition))


def test_a_step_named_on_error_cannot_take_the_on_error_task_P_WF_4_P_WF_6(
    server: Any, api: httpx.Client, name: str
) -> None:
    """The original reproduction, on a definition stored before ids were reserved: the
    step `on_error` fails, its fallback fails, and the sequence's on_error step still gets
    its own task (its idempotency key cannot be the fallback's), runs, and the instance
    ends failed instead of staying running for ever."""
    _store_definition(server.db, "default", name, {
        "steps": [{"id": "on_error", "handler": name, "fallback": {"handler": name + "_fb"}}],
        "on_error": {"handler": name + "_err"},
    })  # fmt: skip
    inst = start(api, name)
    fail(api, name)
    fail(api, name + "_fb")
    cleanup = work(api, name + "_err", lambda p: "cleaned")
    done = wait(api, inst)
    assert done["status"] == "failed" and done["error"]["code"] == "boom", done
    assert done["on_error"]["status"] == "completed", done
    assert done["on_error"]["task_id"] == cleanup["id"]
    tasks = api.get("/tasks", params={"instance_id": inst["id"]}).json()["tasks"]
    assert len({t["id"] for t in tasks}) == 3, tasks


def test_an_on_error_step_that_sleeps_ends_the_instance_P_WF_3_P_WF_6(
    api: httpx.Client, name: str
) -> None:
    """The built-in sleep as on_error: its timer names the on_error record, not a step."""
    define(api, name, [{"id": "only", "handler": name}],
           on_error={"handler": "sleep", "params": {"duration_ms": 50}})  # fmt: skip
    inst = start(api, name)
    fail(api, name)
    done = wait(api, inst)
    assert done["status"] == "failed" and done["on_error"]["status"] == "completed", done


@pytest.mark.parametrize(
    ("params", "pointer"),
    [
        ({"a": {"$from": 5}}, "/steps/0/params/a/$from"),
        ({"a": {"$from": None}}, "/steps/0/params/a/$from"),
        ({"a": {"$from": "input.x", "x": 1}}, "/steps/0/params/a"),
        ({"a": [{"$from": ["input"]}]}, "/steps/0/params/a/0/$from"),
        ({"a": {"b": {"x": 1, "$from": "input"}}}, "/steps/0/params/a/b"),
    ],
)
def test_a_malformed_from_is_refused_P_WF_2(
    api: httpx.Client, name: str, params: dict, pointer: str
) -> None:
    """An object with a `$from` member is a reference, exactly {"$from": "<path>"}, or an
    error: never literal params."""
    r = api.post("/sequences", json={"name": name, "steps": [
        {"id": "s", "handler": name, "params": params}]})  # fmt: skip
    body = assert_problem(r, 422, "validation_error")
    assert [e["pointer"] for e in body["errors"]] == [pointer], body
    fb = api.post("/sequences", json={"name": name, "steps": [
        {"id": "s", "handler": name, "fallback": {"handler": name, "params": params}}],
        "on_error": {"handler": name, "params": params}})  # fmt: skip
    body = assert_problem(fb, 422, "validation_error")
    fb_pointer = pointer.replace("/steps/0/", "/steps/0/fallback/")
    err_pointer = pointer.replace("/steps/0/", "/on_error/")
    assert [e["pointer"] for e in body["errors"]] == [fb_pointer, err_pointer], body


def test_a_from_object_reaches_a_worker_only_through_input_P_WF_2(
    api: httpx.Client, name: str
) -> None:
    """The documented way to pass a literal `$from` member: references resolve once, so
    input data holding one is delivered as it is."""
    define(api, name, [{"id": "s", "handler": name, "params": {"raw": {"$from": "input.raw"}}}])
    inst = start(api, name, input={"raw": {"$from": "input.secret", "x": 1}})
    task = work(api, name, lambda p: p["raw"])
    assert task["params"] == {"raw": {"$from": "input.secret", "x": 1}}
    assert wait(api, inst)["status"] == "completed"


def test_a_definition_read_back_is_accepted_as_written_P_WF_1(api: httpx.Client, name: str) -> None:
    """GET /sequences/{name} answers what POST /sequences accepts: the read-back body,
    less what the server adds (tenant, version, created_at), defines the same version."""
    server_fields = ("tenant", "version", "created_at")
    for extra in ({}, {"on_error": {"handler": name + "_err"}}):
        seq = f"{name}-{len(extra)}"
        first = define(api, seq, [{"id": "s", "handler": name}], **extra)
        read = api.get(f"/sequences/{seq}").json()
        again = api.post("/sequences", json={k: v for k, v in read.items()
                                               if k not in server_fields})  # fmt: skip
        assert again.status_code == 200, again.text  # the same definition: no new version
        assert again.json() == first


def test_a_repeated_start_key_returns_the_original_whatever_the_body_P_WF_4(
    api: httpx.Client, name: str
) -> None:
    """As P-TASK-3 for tasks: the original instance, unchanged, whatever the new body."""
    define(api, name, [{"id": "s", "handler": name}])
    define(api, name + "-other", [{"id": "t", "handler": name + "_o"}])
    key = {"idempotency_key": name}
    first = api.post("/instances", json={"sequence": name, "input": {"n": 1}, **key})
    assert first.status_code == 201, first.text
    for body in (
        {"sequence": name, "input": {"n": 2}},
        {"sequence": name, "input": {"n": 1}, "version": 1},
        {"sequence": name + "-other"},
    ):
        again = api.post("/instances", json={**body, **key})
        assert again.status_code == 200, again.text
        assert again.json() == first.json()
    tasks = api.get("/tasks", params={"instance_id": first.json()["id"]}).json()["tasks"]
    assert len(tasks) == 1
    assert api.get("/instances", params={"sequence": name + "-other"}).json()["instances"] == []
