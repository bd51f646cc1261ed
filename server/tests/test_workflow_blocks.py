"""Orch8's block format (P-WF-11..13) on both backends: a real server, a raw-HTTP worker.
Orch8's documented examples (docs/SEQUENCES.md of orch8-io/engine) are tests here."""

from __future__ import annotations

from typing import Any

import httpx
from conftest import assert_problem
from test_workflows import claim_step, fail, start, wait, work


def define_blocks(api: httpx.Client, name: str, blocks: list[Any], **extra: Any) -> dict:
    r = api.post("/sequences", json={"name": name, "blocks": blocks, **extra})
    assert r.status_code in (200, 201), r.text
    return r.json()


def steps_by_key(inst: dict) -> dict[str, dict]:
    return {s["key"]: s for s in inst["steps"]}


def test_seed_000_step_json_verbatim_with_a_template_P_WF_11_P_WF_12(
    api: httpx.Client, name: str
) -> None:
    """Seed 000's step, as written there: `type: step` and a `{{context.data...}}` param."""
    step = {"type": "step", "id": "render_video", "handler": name, "queue_name": "gpu-workers",
            "params": {"input_url": "{{context.data.video_url}}", "resolution": "1080p"}}  # fmt: skip
    seq = define_blocks(api, name, [step])
    assert seq["blocks"] == [step] and seq["steps"] == [step]
    # Read back and posted again: accepted as written, the same version (P-WF-1).
    again = api.post(
        "/sequences", json={k: seq[k] for k in ("name", "steps", "blocks", "on_error")}
    )
    assert again.status_code == 200 and again.json()["version"] == seq["version"], again.text
    inst = start(api, name, context={"data": {"video_url": "s3://v/1.mp4"}})
    r = api.post("/workers/tasks/poll", json={"handler_names": [name],
                                              "queue_names": ["gpu-workers"], "wait_ms": 5000})  # fmt: skip
    task = r.json()
    assert task["params"] == {"input_url": "s3://v/1.mp4", "resolution": "1080p"}
    assert task["queue_name"] == "gpu-workers"
    assert inst["context"] == {"data": {"video_url": "s3://v/1.mp4"}, "config": {}}
    assert inst["input"] == {"video_url": "s3://v/1.mp4"}


def test_whole_string_templates_keep_their_type_and_text_interpolates_P_WF_12(
    api: httpx.Client, name: str
) -> None:
    define_blocks(api, name, [
        {"type": "step", "id": "a", "handler": name, "params": {
            "count": "{{context.data.count}}", "items": "{{ data.items }}",
            "greeting": "Hello {{context.data.name}}, {{len(data.items)}} items",
            "tier": "{{context.config.tier}}", "id": "{{instance_id}}"}},
        {"type": "step", "id": "b", "handler": name,
         "params": {"first": "{{steps.a.output.items[0]}}", "same": "{{outputs.a.count}}"}},
    ])  # fmt: skip
    inst = start(api, name, input={"count": 3, "items": [1, 2], "name": "Ada"},
                 context={"config": {"tier": "gold"}})  # fmt: skip
    a = work(api, name, lambda p: p)
    assert a["params"] == {"count": 3, "items": [1, 2], "greeting": "Hello Ada, 2 items",
                           "tier": "gold", "id": inst["id"]}  # fmt: skip
    b = work(api, name, lambda p: "done")
    assert b["params"] == {"first": 1, "same": 3}
    assert wait(api, inst)["status"] == "completed"


def test_router_takes_the_first_matching_route_or_the_default_P_WF_11(
    api: httpx.Client, name: str
) -> None:
    """Orch8's route_by_plan example."""
    define_blocks(api, name, [{"type": "router", "id": "route_by_plan", "routes": [
        {"condition": 'context.data.plan == "enterprise"',
         "blocks": [{"type": "step", "id": "assign_csm", "handler": name + "_csm", "params": {}}]},
        {"condition": 'context.data.plan == "trial"',
         "blocks": [{"type": "step", "id": "send_trial_tips", "handler": name + "_mail",
                     "params": {"template": "trial_tips"}}]},
    ], "default": [{"type": "step", "id": "send_standard_tips", "handler": name + "_mail",
                    "params": {"template": "standard_tips"}}]}])  # fmt: skip
    trial = start(api, name, input={"plan": "trial"})
    task = work(api, name + "_mail", lambda p: p["template"])
    assert task["params"] == {"template": "trial_tips"}
    done = wait(api, trial)
    steps = steps_by_key(done)
    assert done["status"] == "completed" and done["output"] == "trial_tips"
    assert steps["route_by_plan"]["chosen"] == "route:1"
    assert steps["send_trial_tips"]["lane"] == "route:1"
    assert steps["assign_csm"]["status"] == "pending"  # never ran
    other = start(api, name, input={"plan": "free"})
    assert (
        work(api, name + "_mail", lambda p: p["template"])["params"]["template"] == "standard_tips"
    )
    assert steps_by_key(wait(api, other))["route_by_plan"]["chosen"] == "default"


def test_for_each_fans_out_and_collects_outputs_in_order_P_WF_11(
    api: httpx.Client, name: str
) -> None:
    define_blocks(api, name, [
        {"type": "for_each", "id": "process_line_items", "collection": "context.data.items",
         "item_var": "item", "max_iterations": 500, "body": [
             {"type": "step", "id": "process_item", "handler": name,
              "params": {"item": "{{item}}", "i": "{{iteration}}"}}]},
        {"type": "step", "id": "total", "handler": name + "_sum",
         "params": {"all": "{{steps.process_line_items.output}}"}},
    ])  # fmt: skip
    items = [{"sku": f"s{i}"} for i in range(5)]
    inst = start(api, name, input={"items": items})
    r = api.post("/workers/tasks/poll/batch", json={"handler_names": [name], "batch_size": 10,
                                                    "wait_ms": 5000})  # fmt: skip
    tasks = r.json()["tasks"]
    assert sorted(t["params"]["i"] for t in tasks) == list(range(5))  # all at once
    for t in reversed(tasks):  # completed out of order, collected in order
        api.post(f"/workers/tasks/{t['id']}/complete",
                 json={"lease_id": t["lease"]["id"], "output": t["params"]["item"]["sku"]})  # fmt: skip
        assert t["context"]["step_key"] == f"process_line_items[{t['params']['i']}]/process_item"
    total = work(api, name + "_sum", lambda p: len(p["all"]))
    assert total["params"] == {"all": [f"s{i}" for i in range(5)]}
    done = wait(api, inst)
    assert done["status"] == "completed" and done["output"] == 5
    steps = steps_by_key(done)
    assert steps["process_line_items"]["iterations"] == 5
    assert steps["process_line_items[3]/process_item"]["lane"] == "iteration:3"


def test_for_each_over_max_iterations_fails_the_block_P_WF_11(api: httpx.Client, name: str) -> None:
    define_blocks(api, name, [{"type": "for_each", "id": "each", "collection": "data.items",
                               "max_iterations": 2, "body": [
                                   {"type": "step", "id": "x", "handler": name}]}])  # fmt: skip
    done = wait(api, start(api, name, input={"items": [1, 2, 3]}))
    assert done["status"] == "failed" and done["error"]["code"] == "max_iterations_exceeded"


def test_try_catch_recovers_reads_the_error_and_runs_finally_P_WF_11(
    api: httpx.Client, name: str
) -> None:
    """Orch8's charge_with_backup example; the catch reads the failed step's error."""
    define_blocks(api, name, [{"type": "try_catch", "id": "charge_with_backup",
        "try_block": [{"type": "step", "id": "charge_primary", "handler": name + "_stripe"}],
        "catch_block": [{"type": "step", "id": "charge_backup", "handler": name + "_bt",
                         "params": {"why": "{{steps.charge_primary.error.message}}",
                                    "code": "{{error.code}}"}}],
        "finally_block": [{"type": "step", "id": "record_payment_attempt",
                           "handler": name + "_log", "params": {"event": "payment_attempted"}}],
    }])  # fmt: skip
    inst = start(api, name)
    fail(api, name + "_stripe")
    backup = work(api, name + "_bt", lambda p: {"charged": True})
    assert backup["params"] == {"why": "boom", "code": "boom"}
    work(api, name + "_log", lambda p: None)
    done = wait(api, inst)
    assert done["status"] == "completed" and done["output"] == {"charged": True}, done
    steps = steps_by_key(done)
    assert steps["charge_primary"]["status"] == "failed"
    assert steps["charge_backup"]["lane"] == "catch"
    assert steps["record_payment_attempt"]["lane"] == "finally"


def test_a_failing_catch_fails_the_instance_after_finally_P_WF_11(
    api: httpx.Client, name: str
) -> None:
    define_blocks(api, name, [{"type": "try_catch", "id": "tc",
        "try_block": [{"type": "step", "id": "t", "handler": name}],
        "catch_block": [{"type": "step", "id": "c", "handler": name}],
        "finally_block": [{"type": "step", "id": "f", "handler": name + "_f"}]}])  # fmt: skip
    inst = start(api, name)
    fail(api, name)
    fail(api, name)
    work(api, name + "_f", lambda p: None)
    done = wait(api, inst)
    assert done["status"] == "failed" and steps_by_key(done)["f"]["status"] == "completed"


def test_race_cancels_the_losers_running_task_and_refuses_its_late_result_P_WF_11(
    api: httpx.Client, name: str
) -> None:
    define_blocks(api, name, [{"type": "race", "id": "fetch", "semantics": "first_to_succeed",
        "branches": [[{"type": "step", "id": "primary", "handler": name + "_p"}],
                     [{"type": "step", "id": "backup", "handler": name + "_b"}]]}])  # fmt: skip
    inst = start(api, name)
    loser = claim_step(api, name + "_p")
    work(api, name + "_b", lambda p: "from backup")
    done = wait(api, inst)
    assert done["status"] == "completed" and done["output"] == "from backup"
    steps = steps_by_key(done)
    assert steps["fetch"]["chosen"] == "branch:1" and steps["primary"]["status"] == "cancelled"
    beat = api.post(
        f"/workers/tasks/{loser['id']}/heartbeat", json={"lease_id": loser["lease"]["id"]}
    )
    assert_problem(beat, 409, "task_cancelled")  # the loser's worker learns it (P-CANCEL-1)
    late = api.post(f"/workers/tasks/{loser['id']}/complete",
                    json={"lease_id": loser["lease"]["id"], "output": "late"})  # fmt: skip
    assert_problem(late, 409, "task_cancelled")
    assert wait(api, inst) == done


def test_race_fails_only_when_every_branch_fails_P_WF_11(api: httpx.Client, name: str) -> None:
    define_blocks(api, name, [{"type": "race", "id": "r", "branches": [
        [{"type": "step", "id": "a", "handler": name}],
        [{"type": "step", "id": "b", "handler": name}]]}])  # fmt: skip
    inst = start(api, name)
    fail(api, name)
    assert wait(api, inst, 0)["status"] == "running"
    fail(api, name)
    assert wait(api, inst)["status"] == "failed"


def test_loop_repeats_while_its_condition_holds_P_WF_11(api: httpx.Client, name: str) -> None:
    """An agent loop: the condition reads the last iteration's step."""
    define_blocks(api, name, [{"type": "loop", "id": "agent", "max_iterations": 10,
        "condition": "iteration == 0 || steps.think.output.done != true",
        "body": [{"type": "step", "id": "think", "handler": name,
                  "params": {"n": "{{iteration}}"}}]}])  # fmt: skip
    inst = start(api, name)
    seen = [work(api, name, lambda p: {"done": p["n"] == 2, "n": p["n"]})["params"]["n"]
            for _ in range(3)]  # fmt: skip
    done = wait(api, inst)
    assert seen == [0, 1, 2] and done["status"] == "completed"
    assert done["output"] == {"done": True, "n": 2}
    assert steps_by_key(done)["agent"]["iterations"] == 3


def test_sub_sequence_runs_a_child_instance_and_takes_its_output_P_WF_13(
    api: httpx.Client, name: str
) -> None:
    child = name + "_child"
    define_blocks(api, child, [{"type": "step", "id": "score", "handler": child,
                                "params": {"c": "{{context.data.customer_id}}"}}])  # fmt: skip
    define_blocks(api, name, [{"type": "sub_sequence", "id": "run_risk_review",
        "sequence_name": child, "input": {"customer_id": "{{context.data.customer_id}}"}}])  # fmt: skip
    inst = start(api, name, input={"customer_id": "c9"})
    task = work(api, child, lambda p: {"risk": "low", "for": p["c"]})
    assert task["params"] == {"c": "c9"}
    done = wait(api, inst)
    assert done["status"] == "completed" and done["output"] == {"risk": "low", "for": "c9"}
    child_id = steps_by_key(done)["run_risk_review"]["child_instance_id"]
    child_row = api.get(f"/instances/{child_id}").json()
    assert child_row["status"] == "completed"
    # Its key is the engine's: a caller cannot start (or find) an instance under it.
    assert child_row["idempotency_key"].startswith("wf:")
    r = api.post(
        "/instances", json={"sequence": child, "idempotency_key": child_row["idempotency_key"]}
    )
    assert_problem(r, 422, "validation_error")


def test_cancelling_a_parent_cancels_its_child_instance_P_WF_13(
    api: httpx.Client, name: str
) -> None:
    child = name + "_child"
    define_blocks(api, child, [{"type": "step", "id": "slow", "handler": child}])
    define_blocks(api, name, [{"type": "sub_sequence", "id": "sub", "sequence_name": child}])
    inst = start(api, name)
    child_id = steps_by_key(wait(api, inst, 0))["sub"]["child_instance_id"]
    assert api.post(f"/instances/{inst['id']}/cancel", json={}).status_code == 200
    assert api.get(f"/instances/{child_id}").json()["status"] == "cancelled"


def test_definition_errors_point_at_the_block_P_WF_12(api: httpx.Client, name: str) -> None:
    step = {"type": "step", "id": "a", "handler": name}
    cases = [
        ([{"type": "router", "id": "r", "routes": [{"condition": "data.x ==", "blocks": []}]}],
         "/blocks/0/routes/0/condition"),
        ([{**step, "params": {"u": "{{steps.b.output}}"}}, {**step, "id": "b"}],
         "/blocks/0/params/u"),
        ([{**step, "params": {"u": "{{nope.x}}"}}], "/blocks/0/params/u"),
        ([{"type": "loop", "id": "l", "condition": "true", "body": [{**step, "id": "in"}]},
          {**step, "params": {"u": "{{steps.in.output}}"}}], "/blocks/1/params/u"),
        ([{"type": "parallel", "id": "p", "branches": [[{**step, "id": "x"}],
          [{**step, "id": "y", "params": {"v": "{{steps.x.output}}"}}]]}],
         "/blocks/0/branches/1/0/params/v"),
        ([{"type": "step", "id": "s"}], "/blocks/0"),
        ([{"type": "router", "id": "r", "routes": [{"condition": "true", "blocks": []}],
           "handler": name}], "/blocks/0/handler"),
        ([{**step, "params": {"u": "{{ data.x | upper }}"}}], "/blocks/0/params/u"),
    ]  # fmt: skip
    for blocks, pointer in cases:
        r = api.post("/sequences", json={"name": name, "blocks": blocks})
        body = assert_problem(r, 422, "validation_error")
        assert pointer in [e["pointer"] for e in body["errors"]], (blocks, body)


def test_an_error_handler_reads_the_error_and_the_instance_still_fails_P_WF_6(
    api: httpx.Client, name: str
) -> None:
    define_blocks(api, name, [{"type": "step", "id": "charge", "handler": name}],
                  on_error={"handler": name + "_err",
                            "params": {"msg": "{{steps.charge.error.message}}",
                                       "code": "{{error.code}}"}})  # fmt: skip
    inst = start(api, name)
    fail(api, name)
    handler = work(api, name + "_err", lambda p: "notified")
    assert handler["params"] == {"msg": "boom", "code": "boom"}
    done = wait(api, inst)
    assert done["status"] == "failed" and done["on_error"]["status"] == "completed"


def test_retry_resumes_the_failed_block_inside_a_container_P_WF_8(
    api: httpx.Client, name: str
) -> None:
    define_blocks(api, name, [
        {"type": "step", "id": "first", "handler": name + "_1"},
        {"type": "parallel", "id": "p", "branches": [
            [{"type": "step", "id": "ok", "handler": name + "_ok"}],
            [{"type": "step", "id": "flaky", "handler": name + "_flaky"}]]},
    ])  # fmt: skip
    inst = start(api, name)
    work(api, name + "_1", lambda p: 1)
    work(api, name + "_ok", lambda p: "ok")
    fail(api, name + "_flaky")
    assert wait(api, inst)["status"] == "failed"
    assert api.post(f"/instances/{inst['id']}/retry", json={}).status_code == 200
    work(api, name + "_flaky", lambda p: "fixed")
    done = wait(api, inst)
    assert done["status"] == "completed" and done["output"] == {"ok": "ok", "flaky": "fixed"}


def test_for_each_of_1000_items_fans_out_in_one_transaction_P_WF_11(
    api: httpx.Client, name: str
) -> None:
    """1,000 items: 1,000 worker tasks created by the start itself (one transaction: the
    answer to the start already lists every iteration running), outputs in order."""
    define_blocks(api, name, [{"type": "for_each", "id": "each", "collection": "data.items",
                               "max_iterations": 1000, "body": [
                                   {"type": "step", "id": "double", "handler": name,
                                    "params": {"n": "{{item}}"}}]}])  # fmt: skip
    inst = start(api, name, input={"items": list(range(1000))})
    running = [s for s in inst["steps"] if s["status"] == "running" and s["type"] == "step"]
    assert len(running) == 1000 and all(s["task_id"] for s in running)
    done_tasks = 0
    while done_tasks < 1000:
        r = api.post("/workers/tasks/poll/batch", json={"handler_names": [name],
                                                        "batch_size": 100, "wait_ms": 5000})  # fmt: skip
        tasks = r.json()["tasks"]
        assert tasks, f"only {done_tasks} of 1000 tasks were claimable"
        items = [{"task_id": t["id"], "lease_id": t["lease"]["id"], "output": t["params"]["n"] * 2}
                 for t in tasks]  # fmt: skip
        assert api.post("/workers/tasks/complete/batch", json={"items": items}).status_code == 200
        done_tasks += len(tasks)
    done = wait(api, inst)
    assert done["status"] == "completed" and done["output"] == [n * 2 for n in range(1000)]


def test_a_huge_bad_definition_lists_the_first_100_errors_P_WF_12(
    api: httpx.Client, name: str
) -> None:
    """Schemathesis sent 700 KB of blocks with every field set: each error was listed and
    the answer took over 10 s. The list stops at 100, and says so."""
    bad = {"type": "loop", "handler": name, "branches": [[]], "condition": "true", "body": []}
    r = api.post("/sequences", json={"name": name,
                                     "blocks": [{**bad, "id": f"b{i}"} for i in range(2000)]})  # fmt: skip
    errors = assert_problem(r, 422, "validation_error")["errors"]
    assert len(errors) == 101 and errors[-1]["detail"].startswith("more errors not listed")


def test_a_step_carries_static_headers_beside_the_trace_headers_P_WF_11(
    api: httpx.Client, name: str
) -> None:
    """Seed 001: a step's static `headers` reach its task; the start's trace context too."""
    define_blocks(api, name, [{"type": "step", "id": "a", "handler": name,
                               "headers": {"x-region": "eu", "traceparent": "ignored"}}])  # fmt: skip
    trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    r = api.post("/instances", json={"sequence": name}, headers={"traceparent": trace})
    assert r.status_code == 201, r.text
    task = claim_step(api, name)
    assert task["headers"] == {"x-region": "eu", "traceparent": trace}


def test_input_and_context_data_are_one_value_P_WF_10(api: httpx.Client, name: str) -> None:
    define_blocks(api, name, [{"type": "step", "id": "a", "handler": name,
                               "params": {"x": "{{input.x}}", "y": "{{data.x}}"}}])  # fmt: skip
    same = start(api, name, input={"x": 1}, context={"data": {"x": 1}, "config": {"c": 2}})
    assert same["context"] == {"data": {"x": 1}, "config": {"c": 2}}
    assert claim_step(api, name)["params"] == {"x": 1, "y": 1}
    r = api.post("/instances", json={"sequence": name, "input": {"x": 1},
                                     "context": {"data": {"x": 2}}})  # fmt: skip
    body = assert_problem(r, 422, "validation_error")
    assert body["errors"][0]["pointer"] == "/context/data"
