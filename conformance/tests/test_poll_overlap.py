"""P-SDK-3's overlap check (checks_sdk.polls_overlap_reporting) on synthetic proxy records:
a poll that asks for more than the slots a worker holding every unanswered task has left."""

from __future__ import annotations

from types import SimpleNamespace

from orch8_conformance.checks_sdk import polls_overlap_reporting

POLL = "/workers/tasks/poll/batch"
BATCH = "/workers/tasks/complete/batch"


def run_of(*records: dict, concurrency: int = 10) -> SimpleNamespace:
    w1 = SimpleNamespace(worker_id="w1")
    return SimpleNamespace(
        scenario={"worker": {"concurrency": concurrency}},
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
