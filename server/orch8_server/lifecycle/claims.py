"""Which queues a poll claims from, and in what order (P-QUEUE-1..4).

A poll names one queue (`queue_name`, seed 000; `default` when omitted) or several
(`queue_names`): strict order, or weighted with `queue_weights`. The claim of one queue
is the caller's (`ClaimOne`: pause, caps and labels apply there); this module only
splits a claim of `limit` tasks across the queues.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from orch8_server.lifecycle.tasks import DEFAULT_QUEUE
from orch8_server.problems import Problem
from orch8_server.storage.base import Row

# (queue, how many) -> (claimed rows, tasks expired on the way)
ClaimOne = Callable[[str, int], Awaitable[tuple[list[Row], int]]]


def _invalid(pointer: str, detail: str) -> Problem:
    return Problem(
        "validation_error",
        f"{pointer[1:]} {detail}",
        errors=[{"pointer": pointer, "detail": detail}],
    )


def poll_queues(body: Mapping[str, Any]) -> tuple[list[str], dict[str, int] | None]:
    """The poll's queues in order and their weights (None: strict order); raises the
    422 of P-QUEUE-4 for the combinations the schema alone cannot refuse."""
    names: list[str] | None = body.get("queue_names")
    weights: dict[str, int] | None = body.get("queue_weights")
    if names is not None and "queue_name" in body:
        raise _invalid("/queue_names", "cannot be combined with queue_name; send one of them")
    if weights is not None:
        if names is None:
            raise _invalid("/queue_weights", "needs queue_names (a weight for each of them)")
        if set(weights) != set(names):
            raise _invalid("/queue_weights", "must name exactly the queues of queue_names")
    if names is None:
        return [body.get("queue_name", DEFAULT_QUEUE)], None
    return list(names), weights


async def claim_across(
    queues: list[str],
    weights: dict[str, int] | None,
    limit: int,
    claim_one: ClaimOne,
    rng: random.Random,
) -> tuple[list[Row], int]:
    """Claim up to `limit` tasks from `queues`: strict order (P-QUEUE-2) or by weight
    (P-QUEUE-3). Returns the claimed rows and how many expired on the way."""
    if len(queues) == 1:
        return await claim_one(queues[0], limit)
    claimed: list[Row] = []
    expired = 0
    if weights is None:
        # P-QUEUE-2: a later queue only when the earlier ones have nothing this poll may take.
        for queue in queues:
            rows, gone = await claim_one(queue, limit - len(claimed))
            claimed += rows
            expired += gone
            if len(claimed) >= limit:
                break
        return claimed, expired
    # P-QUEUE-3: each task draws its queue by weight among the queues that still have
    # claimable work; a queue that gave fewer than drawn is out, its draws go to the rest.
    live = {q: weights[q] for q in queues}
    while len(claimed) < limit and live:
        names = list(live)
        draws = Counter(rng.choices(names, [live[q] for q in names], k=limit - len(claimed)))
        for queue in names:
            want = draws.get(queue, 0)
            if want == 0:
                continue
            rows, gone = await claim_one(queue, want)
            claimed += rows
            expired += gone
            if len(rows) < want:
                del live[queue]
    return claimed, expired
