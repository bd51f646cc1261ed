"""The worker loop: poll, claim order, leases, complete, fail, retry, release, batches."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone

import httpx
from conftest import assert_problem, claim, enqueue, eventually


def test_poll_with_nothing_to_claim_returns_204_and_batch_returns_empty(
    api: httpx.Client, name: str
) -> None:
    r = api.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 0})
    assert r.status_code == 204 and r.content == b""
    r = api.post("/workers/tasks/poll/batch", json={"handler_names": [name], "wait_ms": 0})
    assert r.status_code == 200 and r.json() == {"tasks": [], "next_poll_after_ms": 0}


def test_claim_creates_a_lease_and_complete_finishes_the_task(api: httpx.Client, name: str) -> None:
    task = enqueue(api, name, params={"n": 1}, context={"step": "a"}, headers={"h": "v"})
    claimed = claim(api, name, worker_id="w1", lease_ms=5000)
    assert claimed["id"] == task["id"] and claimed["params"] == {"n": 1}
    assert claimed["context"] == {"step": "a"} and claimed["headers"] == {"h": "v"}
    lease = claimed["lease"]
    assert lease["worker_id"] == "w1" and lease["attempt"] == 1 and lease["id"].startswith("lease_")
    assert claimed["metadata"]["attempt"] == 1  # seed 000 shape
    running = api.get(f"/tasks/{task['id']}").json()
    assert running["status"] == "running" and running["lease"] == lease

    r = api.post(
        f"/workers/tasks/{task['id']}/complete", json={"lease_id": lease["id"], "output": {"ok": 1}}
    )
    assert r.status_code == 200
    assert r.json() == {
        "task_id": task["id"],
        "status": "completed",
        "attempt": 1,
        "attempts_left": 2,
        "next_attempt_at": None,
        "error_code": None,
    }
    done = api.get(f"/tasks/{task['id']}").json()
    assert done["status"] == "completed" and done["output"] == {"ok": 1} and done["lease"] is None
    assert done["finished_at"] is not None


def test_complete_is_idempotent_per_lease(api: httpx.Client, name: str) -> None:
    """P-IDEM-1: the same call again returns the same outcome and changes nothing."""
    enqueue(api, name)
    claimed = claim(api, name)
    body = {"lease_id": claimed["lease"]["id"], "output": {"v": 1}}
    first = api.post(f"/workers/tasks/{claimed['id']}/complete", json=body)
    again = api.post(f"/workers/tasks/{claimed['id']}/complete", json={**body, "output": {"v": 2}})
    assert first.status_code == again.status_code == 200 and first.json() == again.json()
    assert api.get(f"/tasks/{claimed['id']}").json()["output"] == {"v": 1}
    # Without a lease id (a curl worker) the repeat is also a no-op.
    assert api.post(f"/workers/tasks/{claimed['id']}/complete", json={}).json() == first.json()


def test_stale_lease_gets_lease_lost_and_task_is_unchanged(api: httpx.Client, name: str) -> None:
    """P-LEASE-3: a late complete from an expired lease is rejected."""
    enqueue(api, name)
    first = claim(api, name, lease_ms=100)
    eventually(lambda: api.get(f"/tasks/{first['id']}").json()["status"] == "pending", timeout=5)
    second = claim(api, name, lease_ms=5000)
    assert second["lease"]["attempt"] == 2
    late = api.post(
        f"/workers/tasks/{first['id']}/complete",
        json={"lease_id": first["lease"]["id"], "output": 1},
    )
    assert_problem(late, 409, "lease_lost")
    for op in ("fail", "heartbeat", "release"):
        body = {"lease_id": first["lease"]["id"], **({"error": "x"} if op == "fail" else {})}
        assert_problem(api.post(f"/workers/tasks/{first['id']}/{op}", json=body), 409, "lease_lost")
    task = api.get(f"/tasks/{first['id']}").json()
    assert (
        task["status"] == "running"
        and task["lease"]["id"] == second["lease"]["id"]
        and task["output"] is None
    )


def test_priority_then_fifo(api: httpx.Client, name: str) -> None:
    """P-ORDER-1."""
    low = [enqueue(api, name, priority=5)["id"] for _ in range(2)]
    high = [enqueue(api, name, priority=-1)["id"] for _ in range(2)]
    mid = enqueue(api, name)["id"]
    order = [claim(api, name)["id"] for _ in range(5)]
    assert order == [*high, mid, *low]
    # Across several handlers the merged claim keeps priority, then FIFO.
    a_low = enqueue(api, name + "_a", priority=3)["id"]
    b_high = enqueue(api, name + "_b", priority=1)["id"]
    a_high = enqueue(api, name + "_a", priority=1)["id"]
    r = api.post(
        "/workers/tasks/poll/batch",
        json={"handler_names": [name + "_a", name + "_b"], "batch_size": 3, "wait_ms": 0},
    )
    assert [t["id"] for t in r.json()["tasks"]] == [b_high, a_high, a_low]


def test_named_queue_isolation(api: httpx.Client, name: str) -> None:
    """P-QUEUE-1: default-queue polls never see named-queue tasks, and vice versa."""
    gpu = enqueue(api, name, queue_name="gpu-" + name)
    default = enqueue(api, name)
    r = api.post(
        "/workers/tasks/poll/batch", json={"handler_names": [name], "wait_ms": 0, "batch_size": 10}
    )
    assert [t["id"] for t in r.json()["tasks"]] == [default["id"]]
    r = api.post(
        "/workers/tasks/poll/batch",
        json={"handler_names": [name], "queue_name": "gpu-" + name, "wait_ms": 0, "batch_size": 10},
    )
    assert [t["id"] for t in r.json()["tasks"]] == [gpu["id"]]


def test_handler_filter_and_any_handler(api: httpx.Client, name: str) -> None:
    """P-POLL-4."""
    queue = "q-" + name
    a = enqueue(api, name + "_a", queue_name=queue)
    b = enqueue(api, name + "_b", queue_name=queue)
    only_b = claim(api, name + "_b", queue_name=queue)
    assert only_b["id"] == b["id"]
    anything = api.post("/workers/tasks/poll", json={"queue_name": queue, "wait_ms": 0}).json()
    assert anything["id"] == a["id"]


def test_batch_poll_claims_at_most_batch_size(api: httpx.Client, name: str) -> None:
    ids = [enqueue(api, name)["id"] for _ in range(5)]
    r = api.post(
        "/workers/tasks/poll/batch", json={"handler_names": [name], "batch_size": 3, "wait_ms": 0}
    )
    first = [t["id"] for t in r.json()["tasks"]]
    r = api.post(
        "/workers/tasks/poll/batch", json={"handler_names": [name], "batch_size": 3, "wait_ms": 0}
    )
    second = [t["id"] for t in r.json()["tasks"]]
    assert first == ids[:3] and second == ids[3:]


def test_retryable_failure_backs_off_then_runs_again(api: httpx.Client, name: str) -> None:
    """P-RETRY-1/2: scheduled with next_attempt_at, then claimable once the delay passes.
    The backoff is long enough (1 s) that the poll right after the fail still finds
    nothing on a loaded machine; 300 ms was not (a flake on PostgreSQL)."""
    retry = {"initial_backoff_ms": 1000, "jitter": 0, "max_attempts": 3}
    task = enqueue(api, name, retry=retry)
    first = claim(api, name)
    r = api.post(
        f"/workers/tasks/{task['id']}/fail",
        json={"error": "flaky", "retryable": True, "code": "E1"},
    )
    outcome = r.json()
    assert r.status_code == 200 and outcome["status"] == "scheduled"
    assert (
        outcome["attempt"] == 1 and outcome["attempts_left"] == 2 and outcome["error_code"] == "E1"
    )
    assert outcome["next_attempt_at"] is not None
    assert (
        api.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 0}).status_code
        == 204
    )
    # A long-poll is woken by the scheduled-task timer (P-STATE-2): it gets the task
    # within its wait, well before the wait would end empty.
    started = time.monotonic()
    r = api.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 10000})
    assert r.status_code == 200 and r.json()["attempt"] == 2
    assert time.monotonic() - started < 8.0
    task = api.get(f"/tasks/{task['id']}").json()
    assert task["error"] == {"message": "flaky", "code": "E1", "retryable": True, "details": None}
    assert first["lease"]["id"] != r.json()["lease"]["id"]


def test_retry_after_overrides_backoff(api: httpx.Client, name: str) -> None:
    """P-RETRY-4."""
    enqueue(api, name, retry={"initial_backoff_ms": 0})
    claimed = claim(api, name)
    r = api.post(
        f"/workers/tasks/{claimed['id']}/fail",
        json={"error": "429", "retryable": True, "retry_after_ms": 60000},
    )
    outcome = r.json()
    assert outcome["status"] == "scheduled"
    task = api.get(f"/tasks/{claimed['id']}").json()
    assert task["next_attempt_at"] == outcome["next_attempt_at"]
    assert task["run_at"] > task["updated_at"]


def test_attempts_exhausted_and_permanent_failure(api: httpx.Client, name: str) -> None:
    """P-RETRY-3 and P-RETRY-5; failed tasks stay listable (the dead-letter view)."""
    task = enqueue(api, name, retry={"max_attempts": 2, "initial_backoff_ms": 0})
    for attempt in (1, 2):
        claimed = claim(api, name)
        assert claimed["attempt"] == attempt
        outcome = api.post(
            f"/workers/tasks/{task['id']}/fail", json={"error": "boom", "retryable": True}
        ).json()
    assert outcome["status"] == "failed" and outcome["attempts_left"] == 0
    permanent = enqueue(api, name)
    claim(api, name)
    outcome = api.post(f"/workers/tasks/{permanent['id']}/fail", json={"error": "bad input"}).json()
    assert outcome["status"] == "failed" and outcome["attempt"] == 1
    failed = api.get("/tasks", params={"status": "failed", "handler_name": name}).json()["tasks"]
    assert {t["id"] for t in failed} == {task["id"], permanent["id"]}
    assert (
        api.post(f"/workers/tasks/{permanent['id']}/fail", json={"error": "bad input"}).json()
        == outcome
    )


def test_release_does_not_spend_an_attempt(api: httpx.Client, name: str) -> None:
    """P-LEASE-7."""
    task = enqueue(api, name)
    claimed = claim(api, name)
    r = api.post(f"/workers/tasks/{task['id']}/release", json={"lease_id": claimed["lease"]["id"]})
    assert r.status_code == 200 and r.json()["status"] == "pending" and r.json()["attempt"] == 0
    again = claim(api, name)
    assert again["attempt"] == 1
    history = api.get(f"/tasks/{task['id']}/attempts").json()["attempts"]
    assert [a["outcome"] for a in history] == ["released", "running"]


def test_release_with_checkpoint_yields_and_resumes(api: httpx.Client, name: str) -> None:
    """P-CKPT-1 and P-LEASE-7: a yield (seed 002) keeps the checkpoint, spends no attempt."""
    task = enqueue(api, name)
    claimed = claim(api, name)
    assert claimed["checkpoint"] is None
    lease = claimed["lease"]["id"]
    r = api.post(
        f"/workers/tasks/{task['id']}/release", json={"lease_id": lease, "checkpoint": {"page": 3}}
    )
    assert r.status_code == 200 and r.json()["attempt"] == 0
    again = claim(api, name)
    assert again["checkpoint"] == {"page": 3} and again["attempt"] == 1
    assert api.get(f"/tasks/{task['id']}").json()["checkpoint"] == {"page": 3}


def test_heartbeat_extends_lease_and_checkpoint_reaches_next_attempt(
    api: httpx.Client, name: str
) -> None:
    """P-LEASE-5 and P-CKPT-1."""
    task = enqueue(api, name, retry={"initial_backoff_ms": 0})
    claimed = claim(api, name, lease_ms=400)
    deadline = time.monotonic() + 1.2  # three lease lengths, kept alive by heartbeats
    while time.monotonic() < deadline:
        r = api.post(
            f"/workers/tasks/{task['id']}/heartbeat",
            json={
                "lease_id": claimed["lease"]["id"],
                "progress": {"p": 1},
                "checkpoint": {"cursor": 7},
            },
        )
        assert r.status_code == 200 and r.json()["cancel_requested"] is False
        time.sleep(0.1)
    assert api.get(f"/tasks/{task['id']}").json()["status"] == "running"
    # An empty body (the seed's curl) also extends the current lease.
    assert api.post(f"/workers/tasks/{task['id']}/heartbeat").status_code == 200
    api.post(f"/workers/tasks/{task['id']}/fail", json={"error": "retry me", "retryable": True})
    next_attempt = claim(api, name)
    assert next_attempt["checkpoint"] == {"cursor": 7} and next_attempt["attempt"] == 2
    assert api.get(f"/tasks/{task['id']}").json()["progress"] == {"p": 1}


def test_batch_complete_and_fail_report_per_item(api: httpx.Client, name: str) -> None:
    """P-BATCH-1: one bad item never sinks the batch."""
    tasks = [
        enqueue(api, name, retry={"max_attempts": 2, "initial_backoff_ms": 0}) for _ in range(4)
    ]
    claimed = {
        t["id"]: t
        for t in api.post(
            "/workers/tasks/poll/batch",
            json={"handler_names": [name], "batch_size": 4, "wait_ms": 0},
        ).json()["tasks"]
    }
    a, b, c, d = (claimed[t["id"]] for t in tasks)
    r = api.post(
        "/workers/tasks/complete/batch",
        json={
            "items": [
                {"task_id": a["id"], "lease_id": a["lease"]["id"], "output": "A"},
                {"task_id": "task_does_not_exist"},
                {"task_id": b["id"], "lease_id": "lease_wrong"},
            ]
        },
    )
    items = r.json()["items"]
    assert [i["status"] for i in items] == ["completed", "error", "error"]
    assert (
        items[1]["problem"]["code"] == "not_found" and items[2]["problem"]["code"] == "lease_lost"
    )
    r = api.post(
        "/workers/tasks/fail/batch",
        json={
            "items": [
                {"task_id": b["id"], "lease_id": b["lease"]["id"], "error": "x", "retryable": True},
                {
                    "task_id": c["id"],
                    "lease_id": c["lease"]["id"],
                    "error": "y",
                    "retryable": False,
                },
                {"task_id": a["id"], "lease_id": a["lease"]["id"], "error": "z"},
            ]
        },
    )
    assert [i["status"] for i in r.json()["items"]] == ["requeued", "failed", "error"]
    assert api.get(f"/tasks/{a['id']}").json()["status"] == "completed"
    assert api.get(f"/tasks/{b['id']}").json()["status"] == "pending"
    assert api.get(f"/tasks/{d['id']}").json()["status"] == "running"


def test_long_poll_is_woken_by_enqueue(api: httpx.Client, server, name: str) -> None:
    """P-POLL-3: a waiting poll gets a new task at once, long before wait_ms."""
    result: dict = {}

    def poll() -> None:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            start = time.monotonic()
            r = c.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 8000})
            result.update(status=r.status_code, body=r.json(), waited=time.monotonic() - start)

    thread = threading.Thread(target=poll)
    thread.start()
    eventually(
        lambda: (
            api.get("/queues").json()["queues"]
            and any(
                q["handler_name"] == name and q["active_pollers"]
                for q in api.get("/queues").json()["queues"]
            )
        )
    )
    time.sleep(0.2)  # let the poll park; the assertion below is what matters
    enqueued_at = time.monotonic()
    task = enqueue(api, name)
    thread.join(10)
    assert result["status"] == 200 and result["body"]["id"] == task["id"]
    assert result["waited"] < 6.0 and time.monotonic() - enqueued_at < 4.0  # woken, not 8 s


def test_good_until_expiry_is_never_delivered(api: httpx.Client, name: str) -> None:
    """P-EXPIRE-1."""
    past = enqueue(api, name, good_until="2000-01-01T00:00:00Z")
    assert past["status"] == "expired"
    soon = enqueue(api, name, good_until=_iso_in(0.3))
    eventually(lambda: api.get(f"/tasks/{soon['id']}").json()["status"] == "expired", timeout=3)
    assert (
        api.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 0}).status_code
        == 204
    )


def test_scheduled_task_becomes_claimable_at_run_at(api: httpx.Client, name: str) -> None:
    """P-STATE-2."""
    task = enqueue(api, name, delay_ms=400)
    assert task["status"] == "scheduled"
    assert (
        api.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 0}).status_code
        == 204
    )
    r = api.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 5000})
    assert r.status_code == 200 and r.json()["id"] == task["id"]
    at = enqueue(api, name, run_at=_iso_in(3600))
    assert at["status"] == "scheduled" and at["run_at"] > at["created_at"]


def _iso_in(seconds: float) -> str:
    from orch8_server.timefmt import iso, now_ms

    return iso(now_ms() + int(seconds * 1000))


def test_batch_with_pending_and_scheduled_tasks_of_one_handler(start_server, name: str) -> None:
    """P-STATE-2 / P-POLL-3 in one batch: the pending task is claimable now, and the
    scheduled one of the same handler is promoted by the timer (the reaper's fallback
    promotion is slowed to 10 s here so only the timer can do it in time)."""
    server = start_server(**{"reaper-interval-ms": 10000})
    with httpx.Client(base_url=server.url, timeout=20) as api:
        tasks = [{"handler_name": name}, {"handler_name": name, "delay_ms": 300}]
        now_id, later_id = (
            t["id"] for t in api.post("/tasks/batch", json={"tasks": tasks}).json()["tasks"]
        )
        assert claim(api, name)["id"] == now_id
        started = time.monotonic()
        later = api.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 5000})
        assert later.status_code == 200 and later.json()["id"] == later_id
        assert time.monotonic() - started < 2.5


def test_single_poll_accepts_batch_size_and_still_claims_one(api: httpx.Client, name: str) -> None:
    """P-POLL-8: seed 000's batch_size is accepted; the answer is one task or 204."""
    for i in range(3):
        enqueue(api, name, params={"i": i})
    body = {"handler_names": [name], "wait_ms": 0, "batch_size": 5}
    first = api.post("/workers/tasks/poll", json=body)
    assert first.status_code == 200 and first.json()["params"] == {"i": 0}
    counts = api.get("/queues").json()["queues"]
    row = next(q for q in counts if q["handler_name"] == name)
    assert row["running"] == 1 and row["pending"] == 2
    assert api.post("/workers/tasks/poll", json={**body, "batch_size": 1}).status_code == 200
    assert api.post("/workers/tasks/poll", json={**body, "batch_size": 50}).status_code == 200
    assert api.post("/workers/tasks/poll", json=body).status_code == 204
    for bad in (0, 51, "2"):
        problem = assert_problem(
            api.post("/workers/tasks/poll", json={**body, "batch_size": bad}),
            422,
            "validation_error",
        )
        assert problem["errors"][0]["pointer"] == "/batch_size"


def test_task_heartbeat_lease_ms_and_deprecated_extend_ms(api: httpx.Client, name: str) -> None:
    """TaskHeartbeat.lease_ms (spec 1.1.0); extend_ms stays a deprecated alias."""
    task = enqueue(api, name)
    lease = {"lease_id": claim(api, name, lease_ms=1000)["lease"]["id"]}
    url = f"/workers/tasks/{task['id']}/heartbeat"

    def expires_in_ms(body: dict) -> float:
        r = api.post(url, json={**lease, **body})
        assert r.status_code == 200, r.text
        expires = datetime.fromisoformat(r.json()["lease_expires_at"].replace("Z", "+00:00"))
        return (expires - datetime.now(timezone.utc)).total_seconds() * 1000

    assert 590_000 < expires_in_ms({"lease_ms": 600_000}) <= 600_000
    assert 290_000 < expires_in_ms({"extend_ms": 300_000}) <= 300_000
    assert 190_000 < expires_in_ms({"lease_ms": 200_000, "extend_ms": 200_000}) <= 200_000
    assert 0 < expires_in_ms({}) <= 1000  # the lease's own length
    problem = assert_problem(
        api.post(url, json={**lease, "lease_ms": 5000, "extend_ms": 6000}), 422, "validation_error"
    )
    assert problem["errors"] == [
        {"pointer": "/extend_ms", "detail": "differs from lease_ms; send lease_ms only"}
    ]


def test_batch_complete_repeats_and_mixed_items_keep_their_answers(
    api: httpx.Client, name: str
) -> None:
    """P-IDEM-1, P-BATCH-1 through the set-based completion: an item repeated in the batch
    and a repeated batch get the stored reply, the output is stored, one attempt each."""
    tasks = [enqueue(api, name) for _ in range(3)]
    claimed = api.post(
        "/workers/tasks/poll/batch", json={"handler_names": [name], "batch_size": 3, "wait_ms": 0}
    ).json()["tasks"]
    a, b, c = sorted(claimed, key=lambda t: t["id"])
    items = [
        {"task_id": a["id"], "lease_id": a["lease"]["id"], "output": {"n": 1}},
        {"task_id": a["id"], "lease_id": a["lease"]["id"], "output": {"n": 1}},
        {"task_id": b["id"]},  # no lease_id: acts on the current lease
        {"task_id": c["id"], "lease_id": "lease_wrong"},
    ]
    first = api.post("/workers/tasks/complete/batch", json={"items": items}).json()["items"]
    assert [i["status"] for i in first] == ["completed", "completed", "completed", "error"]
    assert first[0] == first[1] and first[3]["problem"]["code"] == "lease_lost"
    again = api.post("/workers/tasks/complete/batch", json={"items": items[:1]}).json()["items"]
    assert again == first[:1]
    done = api.get(f"/tasks/{a['id']}").json()
    assert (done["status"], done["output"], done["attempt"]) == ("completed", {"n": 1}, 1)
    attempts = api.get(f"/tasks/{a['id']}/attempts").json()["attempts"]
    assert [x["outcome"] for x in attempts] == ["completed"]
    assert api.get(f"/tasks/{c['id']}").json()["status"] == "running"
    assert {t["id"] for t in tasks} == {a["id"], b["id"], c["id"]}
