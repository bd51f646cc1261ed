"""The task state machine: every way a task ends, goes back to its queue or comes back
from the end, as pure functions (docs/protocol.md P-STATE-1).

Each function takes the task row as stored and the instant `now`, reads nothing else,
writes nothing, and returns a `Transition`: the columns that change, the new row, the
record of the attempt it ends when a lease was held (P-DONE-1, with the reply that
replays of the same call get, P-IDEM-1), and its `kind`. The kind is all that the rest of
the server needs to know: `effects.py` maps it to counters, history, wake-ups and freed
slots, and the workflow hook reads the new row. A caller applies a transition with
`UnitOfWork.apply` (one place writes it); the set-based SQL fast paths (completion of a
batch, good_until expiry) are checked against `complete` and `expire` by
tests/test_transitions.py on both backends.

    pending/scheduled --claim--> running --complete--> completed
                                  |  |  `--fail(retryable, attempts left)--> scheduled|pending  (requeued)
                                  |  `----fail / last attempt-------------> failed
                                  |--lease expired, worker lost----------> pending | failed  (reclaimed)
                                  `--release-----------------------------> scheduled|pending  (released)
    pending/scheduled/running --cancel--> cancelled      --resolve--> completed | failed  (manual)
    pending/scheduled --good_until passed--> expired
    failed/cancelled/expired --retry--> scheduled|pending  (retried)
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from orch8_server.lifecycle.attempts import DEFAULT_FAILURE_CODE, MANUAL_CODE
from orch8_server.lifecycle.retry import backoff_ms
from orch8_server.problems import Problem
from orch8_server.storage.rows import AttemptRow, TaskRow, TaskUpdate
from orch8_server.timefmt import iso

if TYPE_CHECKING:
    from orch8_server._generated.models import TaskOutcome

Kind = Literal[
    "completed",  # a worker completed it
    "failed",  # a worker failed it for good (P-RETRY-3, P-RETRY-5)
    "requeued",  # a worker failed it; it runs again (P-RETRY-1)
    "reclaimed",  # its lease ended without a result: pending again or failed (P-LEASE-6)
    "released",  # its worker gave it back without spending the attempt (P-LEASE-7)
    "cancelled",  # P-CANCEL-1, by a producer or a workflow (P-WF-7)
    "resolved",  # an operator completed or failed it (P-MANUAL-1)
    "retried",  # an operator sent a finished task back to its queue (P-RETRY-6)
    "expired",  # good_until passed before a claim (P-EXPIRE-1)
]
UNFINISHED = ("pending", "scheduled", "running", "held")  # held: pending for a key (P-KEY-1)
FINISHED = ("completed", "failed", "cancelled", "expired")


@dataclass(slots=True)  # not frozen: one per task ending, a frozen __init__ costs more
class Transition:
    kind: Kind
    task: TaskRow  # the row after the transition (a new dict; the input is not changed)
    fields: TaskUpdate  # the columns that changed, to store
    attempt: AttemptRow | None  # the ended attempt's record, when a lease was held
    freed: bool  # a running task stopped running: a capped slot is free (P-CTRL-2)

    @property
    def reply(self) -> TaskOutcome:
        """What the call that made it is answered (and what its repeats replay)."""
        if self.attempt is not None and self.attempt["reply"] is not None:
            reply: TaskOutcome = self.attempt["reply"]
            return reply
        return outcome(self.task)


def outcome(row: TaskRow, error_code: str | None = None) -> TaskOutcome:
    """The TaskOutcome of a row (complete, fail and release answers)."""
    status = "pending" if row["status"] == "held" else row["status"]  # P-KEY-6
    left = (
        0 if status in ("failed", "cancelled", "expired") else row["max_attempts"] - row["attempt"]
    )
    return {
        "task_id": row["id"],
        "status": status,
        "attempt": row["attempt"],
        "attempts_left": max(0, left),
        "next_attempt_at": iso(row["run_at"]) if status == "scheduled" else None,
        "error_code": error_code,
    }


def _ended_attempt(
    before: TaskRow, now: int, outcome_: str, error: Any = None, reply: Any = None
) -> AttemptRow:
    """The record of the attempt `before`'s lease held, ended now as `outcome_`."""
    lease_id, started_at = before["lease_id"], before["lease_started_at"]
    assert lease_id is not None and started_at is not None, "an attempt ends under a lease"
    return {
        "task_id": before["id"],
        "lease_id": lease_id,
        "attempt": before["attempt"],
        "worker_id": before["worker_id"],
        "started_at": started_at,
        "ended_at": now,
        "outcome": outcome_,
        "error": error,
        "reply": reply,
    }


def _merged(task: TaskRow, fields: TaskUpdate) -> TaskRow:
    """The row after `fields` are stored over `task` (a new dict)."""
    merged: TaskRow = {**task, **fields}
    return merged


def _back_in_queue(now: int, run_at: int) -> TaskUpdate:
    return {"status": "scheduled" if run_at > now else "pending", "run_at": run_at}


def complete(task: TaskRow, now: int, output: Any) -> Transition:
    """P-DONE-1: the running attempt ends as completed with its output. Its record is the
    completed row itself (`completed_attempt`): nothing is stored in attempts."""
    fields: TaskUpdate = {
        "status": "completed",
        "output": output,
        "finished_at": now,
        "updated_at": now,
    }
    return Transition("completed", _merged(task, fields), fields, None, True)


def completed_attempt(task: TaskRow, stored_leases: Iterable[str | None]) -> AttemptRow | None:
    """The record of the attempt that completed `task`, read from the row: a success is
    never stored in attempts (one insert and one index entry less per task, issue 30), as
    the completed row keeps that attempt's lease, worker, start (lease_started_at) and end
    (finished_at), and a replay's reply is its `outcome` (P-IDEM-1). None unless a worker
    completed the task: `stored_leases` are the leases of its stored attempts, and an
    operator's resolution of a running task stored its last lease's attempt (P-MANUAL-1).
    Databases written before keep their stored successes, which win."""
    lease_id, started_at = task["lease_id"], task["lease_started_at"]
    if task["status"] != "completed" or lease_id is None or lease_id in stored_leases:
        return None
    assert started_at is not None and task["finished_at"] is not None, "a completed lease"
    return {
        "task_id": task["id"],
        "lease_id": lease_id,
        "attempt": task["attempt"],
        "worker_id": task["worker_id"],
        "started_at": started_at,
        "ended_at": task["finished_at"],
        "outcome": "completed",
        "error": None,
        "reply": outcome(task),
    }


def fail(
    task: TaskRow,
    now: int,
    message: str,
    *,
    code: str | None = None,
    retryable: bool = False,
    details: Any = None,
    retry_after_ms: int | None = None,
    checkpoint: tuple[Any] | None = None,
    rng: random.Random | None = None,
) -> Transition:
    """A worker's failure report: run again after a backoff while attempts are left and
    the failure is retryable (P-RETRY-1, P-RETRY-2, P-RETRY-4), else failed for good.
    `checkpoint` is a 1-tuple when the report carried one (null is a value, P-CKPT-1)."""
    code = code or DEFAULT_FAILURE_CODE
    error = {"message": message, "code": code, "retryable": retryable, "details": details}
    fields: TaskUpdate = {"error": error, "updated_at": now}
    if checkpoint is not None:
        fields["checkpoint"] = checkpoint[0]
    if retryable and task["attempt"] < task["max_attempts"]:
        if retry_after_ms is not None:
            delay = retry_after_ms
        else:
            delay = backoff_ms(task["retry"], task["attempt"], rng or random.Random())
        fields.update(_back_in_queue(now, now + delay))
        kind: Kind = "requeued"
    else:
        fields.update({"status": "failed", "finished_at": now})
        kind = "failed"
    after = _merged(task, fields)
    reply = outcome(after, code)
    return Transition(kind, after, fields, _ended_attempt(task, now, "failed", error, reply), True)


def release(
    task: TaskRow, now: int, delay_ms: int = 0, checkpoint: tuple[Any] | None = None
) -> Transition:
    """P-LEASE-7: back to the queue; the attempt it held is not spent. `checkpoint` as in
    `fail` (P-CKPT-1): a 1-tuple when the release carried one."""
    fields: TaskUpdate = {**_back_in_queue(now, now + delay_ms), "attempt": task["attempt"] - 1,
                   "updated_at": now}  # fmt: skip
    if checkpoint is not None:
        fields["checkpoint"] = checkpoint[0]
    after = _merged(task, fields)
    reply = outcome(after)
    return Transition(
        "released", after, fields, _ended_attempt(task, now, "released", None, reply), True
    )


def reclaim(task: TaskRow, now: int, code: str, message: str) -> Transition:
    """P-LEASE-6, P-WORKER-5: the lease ended without a result (expired, or its worker
    was lost); the attempt counts, so the task runs again only if attempts are left."""
    error = {"message": message, "code": code, "retryable": True, "details": None}
    fields: TaskUpdate = {"error": error, "updated_at": now}
    if task["attempt"] < task["max_attempts"]:
        fields.update({"status": "pending", "run_at": now})
    else:
        fields.update({"status": "failed", "finished_at": now})
    return Transition(
        "reclaimed", _merged(task, fields), fields, _ended_attempt(task, now, code, error), True
    )


def cancel(task: TaskRow, now: int, reason: str | None) -> Transition | None:
    """P-CANCEL-1: an unfinished task ends cancelled; None for one already cancelled (a
    repeat changes nothing). A running task's lease id stays on the row, so its worker's
    complete and fail answer task_cancelled, not lease_lost (P-CANCEL-2)."""
    status = task["status"]
    if status == "cancelled":
        return None
    if status not in UNFINISHED:
        raise Problem(
            "invalid_state",
            f"task {task['id']} is {status}; only unfinished tasks can be cancelled",
        )
    fields: TaskUpdate = {"status": "cancelled", "finished_at": now, "updated_at": now,
                   "cancel_reason": reason}  # fmt: skip
    running = status == "running"
    attempt = _ended_attempt(task, now, "cancelled") if running else None
    return Transition("cancelled", _merged(task, fields), fields, attempt, running)


def resolve(
    task: TaskRow, now: int, status: Literal["completed", "failed"], body: Mapping[str, Any]
) -> Transition:
    """P-MANUAL-1: an operator completes (with `output`) or fails (with `error`, `code`,
    `details`) an unfinished task. A running attempt ends with the `manual` code, which
    makes its worker's calls answer lease_lost."""
    if task["status"] not in UNFINISHED:
        raise Problem(
            "invalid_state",
            f"task {task['id']} is {task['status']}; only unfinished tasks can be resolved",
        )
    fields: TaskUpdate = {"status": status, "finished_at": now, "updated_at": now}
    if status == "completed":
        fields["output"] = body.get("output")
    else:
        fields["error"] = {"message": body["error"], "code": body.get("code", MANUAL_CODE),
                           "retryable": False, "details": body.get("details")}  # fmt: skip
    running = task["status"] == "running"
    attempt = None
    if running:
        ended = {"message": f"task {status} manually by an operator", "code": MANUAL_CODE,
                 "retryable": False, "details": None}  # fmt: skip
        attempt = _ended_attempt(task, now, "cancelled", ended)
    return Transition("resolved", _merged(task, fields), fields, attempt, running)


def retry(task: TaskRow, now: int, max_attempts: int | None, delay_ms: int = 0) -> Transition:
    """P-RETRY-6: a failed, cancelled or expired task runs again with a fresh budget of
    attempts (its policy's, unless given), its deadline (good_until) dropped."""
    if task["status"] not in ("failed", "cancelled", "expired"):
        raise Problem(
            "invalid_state",
            f"task {task['id']} is {task['status']}; only failed, cancelled or expired "
            "tasks can be retried",
        )
    budget = task["retry"]["max_attempts"] if max_attempts is None else max_attempts
    fields: TaskUpdate = {**_back_in_queue(now, now + delay_ms), "max_attempts": task["attempt"] + budget,
                   "finished_at": None, "cancel_reason": None, "good_until": None,
                   "updated_at": now}  # fmt: skip
    return Transition("retried", _merged(task, fields), fields, None, False)


def expire(task: TaskRow, now: int) -> Transition:
    """P-EXPIRE-1: a task not claimed by its good_until ends expired (the storage does
    this set-based, in `expire_overdue` and in the claim; this is the rule they match)."""
    fields: TaskUpdate = {"status": "expired", "finished_at": now, "updated_at": now}
    return Transition("expired", _merged(task, fields), fields, None, False)
