"""P-SDK-3's overlap check (checks_sdk.polls_overlap_reporting) on synthetic proxy records:
a poll that asks for more than the slots a worker holding every unanswered task has left;
and P-SDK-26's threshold check (checks_sdk.poll_threshold) with handlers that take time."""

from __future__ import annotations

from types import SimpleNamespace

from orch8_conformance.checks_sdk import poll_threshold, polls_overlap_reporting

POLL = "/workers/tasks/poll/batch"
BATCH = "/workers/tasks/complete/batch"


def run_of(*records: dict, concurrency: int = 10, sleeps: dict[str, int] | None = None) -> SimpleNamespace:
    """`sleeps`: task id -> its handler's sleep_ms (the scenario's task params)."""
    w1 = SimpleNamespace(worker_id="w1")
    sleeps = sleeps or {}
    return SimpleNamespace(
        scenario={"worker": {"concurrency": concurrency}},
        ids={tid: tid for tid in sleeps},
        sent={tid: {"params": {"sleep_ms": ms}} for tid, ms in sleeps.items()},
        workers={"w1": w1},
        worker=lambda name: w1,
        proxy=SimpleNamespace(requests=list(records)),
    )


def poll(t: float, answered: float, size: int, claimed: int) -> dict:
    ids = [f"p{t}-{i}" for i in range(claimed)]
    return {"t": t, "answered": answered, "path": POLL, "status": 200, "claimed_ids": ids,
            "body": {"worker_id": "w1", "batch_size": size}}  # fmt: skip


def batch(t: float, answered: float, n: int) -> dict:
    return {"t": t, "answered": answered, "path": BATCH, "status": 200, "task_ids": [f"b{t}-{i}" for i in range(n)]}


def test_a_poll_that_reaches_the_proxy_before_the_batch_beside_it_passes():
    # A Go run of poll-threshold (CI, 2026-11-28): the 10 results were handed over, the next
    # poll for 10 arrived 3 ms before their first batch. The old check wanted it after.
    records = [poll(43, 81, 10, 10), poll(88, 101, 10, 10), batch(91, 400, 1), batch(402, 708, 19),
               poll(711, 714, 10, 10), batch(717, 1028, 1), batch(1029, 1341, 9)]  # fmt: skip
    assert polls_overlap_reporting(run_of(*records), "w1") == []


def test_a_worker_that_keeps_slots_until_results_are_answered_fails():
    # Polls again only once each batch is answered, for the slots that freed.
    records = [poll(0, 40, 10, 10), batch(45, 345, 10), poll(350, 390, 10, 10), batch(395, 695, 10),
               poll(700, 740, 10, 10), batch(745, 1045, 10)]  # fmt: skip
    assert polls_overlap_reporting(run_of(*records), "w1") == [
        "w1 never polled for more than the slots left while its results were unanswered (concurrency 10; "
        "polls: 10 holding 0, 10 holding 0, 10 holding 0): the slots of handed-over results stayed taken (P-SDK-3)"
    ]


def test_a_poll_during_a_batch_for_the_slots_it_left_free_is_not_proof():
    # 7 tasks came for 10 slots; 3 of their results are in flight when a poll asks for the
    # 3 slots never taken: what a worker keeping slots until the answer sends too. The old
    # check, any poll while a batch is unanswered, passed it.
    records = [poll(0, 40, 10, 7), batch(45, 345, 3), poll(50, 90, 3, 0)]
    assert polls_overlap_reporting(run_of(*records), "w1") != []


def test_a_small_poll_while_the_other_tasks_are_still_in_their_handlers_passes():
    # 10 tasks of 400 ms: 150 ms after delivery they are still running, not being reported,
    # so a poll for the 2 slots never filled is no breach (P-SDK-26 applies while reporting).
    first = poll(0, 10, 10, 8)
    sleeps = {tid: 400 for tid in first["claimed_ids"]}
    assert poll_threshold(run_of(first, poll(200, 205, 2, 0), sleeps=sleeps), "w1", 5) == []


def test_a_poll_for_the_first_freed_slots_while_their_batch_is_held_fails():
    # poll-threshold's staggered handlers: three 0 ms tasks' batch reaches the proxy at 12
    # (held 300 ms); 40 ms later three more are handed over and the worker polls for 3.
    first = poll(0, 10, 10, 10)
    ids = first["claimed_ids"]
    sleeps = dict(zip(ids, [0, 0, 0, 40, 40, 40, 80, 80, 80, 120], strict=True))
    held = {"t": 12, "answered": 312, "path": BATCH, "status": 200, "task_ids": ids[:3]}
    assert poll_threshold(run_of(first, held, poll(52, 60, 3, 3), sleeps=sleeps), "w1", 5) == [
        "w1 polled for [3] tasks while results were being reported, expected at least 5 (P-SDK-26); "
        "poll sizes in order: [10, 3]"
    ]
