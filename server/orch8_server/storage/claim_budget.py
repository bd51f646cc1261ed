"""The per-candidate step of a claim, shared by both backends (P-EXPIRE-1, P-CTRL-2), and
the handler lookup of a poll that names none.

A backend selects a batch of candidate rows in claim order, then this splits the batch
into rows to lease and rows to expire, spending each capped handler's running budget.
No I/O: the backends do the SQL around it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

R = TypeVar("R", bound=Mapping[str, Any])


def split_candidates(
    candidates: Iterable[R], now: int, room: dict[str, int], excluded: set[str]
) -> tuple[list[R], list[R], bool]:
    """Split one batch of candidates (claim order) into `(take, stale, capped_out)`.

    - P-EXPIRE-1: a row whose `good_until` is at or before `now` goes to `stale`, never
      to `take`, even when the claim races the deadline; it spends no budget.
    - P-CTRL-2: `room` maps each capped handler to how many more of its tasks may run.
      A row of a handler with budget left is taken and spends one; a row of a handler
      at 0 (or below) is skipped, the handler is added to `excluded` and `capped_out` is
      True, so the caller fetches again without it. Handlers absent from `room` are
      unbudgeted: always taken.

    `room` and `excluded` are the caller's running state across batches and are updated
    in place; nothing else is touched.
    """
    take: list[R] = []
    stale: list[R] = []
    capped_out = False
    for r in candidates:
        good_until = r["good_until"]
        if good_until is not None and good_until <= now:
            stale.append(r)  # P-EXPIRE-1
            continue
        left = room.get(r["handler_name"])
        if left is not None:
            if left <= 0:  # P-CTRL-2: never past the handler's cap
                excluded.add(r["handler_name"])
                capped_out = True
                continue
            room[r["handler_name"]] = left - 1
        take.append(r)
    return take, stale, capped_out


def pending_handlers_sql(tenant: str, queue: str) -> str:
    """The handlers with pending tasks in a tenant's queue, by name: a skip scan of
    tasks_claim_handler (tenant, queue_name, handler_name, ...), one index probe per
    handler. A poll that names no handler claims from these (no index covers a queue's
    pending rows of every handler). `tenant` and `queue` are the backend's placeholders."""
    pending = f"FROM tasks WHERE status = 'pending' AND tenant = {tenant} AND queue_name = {queue}"
    return (
        f"WITH RECURSIVE h(name) AS (SELECT (SELECT min(handler_name) {pending}) UNION ALL "
        f"SELECT (SELECT min(handler_name) {pending} AND handler_name > h.name) FROM h "
        "WHERE h.name IS NOT NULL) SELECT name FROM h WHERE name IS NOT NULL"
    )
