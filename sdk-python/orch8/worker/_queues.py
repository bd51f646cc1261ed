"""Which queues a worker polls: one queue, or an ordered list with optional weights (P-SDK-23).

Checked when the `Worker` is built, before any request, so a mistake is a `ValueError` at
start-up rather than a 422 on every poll (the server's own check is P-QUEUE-4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MAX_QUEUE_NAMES = 10  # P-QUEUE-2: 1-10 distinct names per poll
MIN_WEIGHT, MAX_WEIGHT = 1, 1000  # P-QUEUE-3


@dataclass(frozen=True)
class QueueSelection:
    """The queue options sent unchanged in every poll (P-QUEUE-2, P-QUEUE-3)."""

    queue_name: str | None = None
    queue_names: tuple[str, ...] | None = None
    queue_weights: dict[str, int] | None = None

    @property
    def registered(self) -> list[str]:
        """P-SDK-21 / P-SDK-23: `queues` at registration: the list, else the one queue."""
        if self.queue_names is not None:
            return list(self.queue_names)
        return [self.queue_name or "default"]


def select_queues(
    queue_name: str | None,
    queue_names: Sequence[str] | None,
    queue_weights: Mapping[str, int] | None,
) -> QueueSelection:
    """Validate the Worker's queue options (P-SDK-23); each refusal names its option."""
    if queue_names is None:
        if queue_weights is not None:
            raise ValueError("queue_weights needs queue_names (the list of queues it weighs)")
        return QueueSelection(queue_name=queue_name)
    if queue_name is not None:
        raise ValueError("give either queue_name or queue_names, not both")
    if isinstance(queue_names, str) or not isinstance(queue_names, Sequence):
        raise ValueError(f"queue_names must be a list of queue names, not {queue_names!r}")
    names = tuple(queue_names)
    if not names:
        raise ValueError("queue_names must name at least one queue")
    if len(names) > MAX_QUEUE_NAMES:
        raise ValueError(f"queue_names takes at most {MAX_QUEUE_NAMES} names, got {len(names)}")
    for name in names:
        if not isinstance(name, str) or not name:
            raise ValueError(f"queue_names: {name!r} is not a queue name")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"queue_names repeats {', '.join(map(repr, repeated))}")
    return QueueSelection(queue_names=names, queue_weights=_weights(names, queue_weights))


def _weights(names: tuple[str, ...], weights: Mapping[str, int] | None) -> dict[str, int] | None:
    """P-QUEUE-3: a weight 1-1000 for every name of the list and no other."""
    if weights is None:
        return None
    if not isinstance(weights, Mapping):
        raise ValueError(f"queue_weights must map queue names to weights, not {weights!r}")
    missing = [n for n in names if n not in weights]
    extra = sorted(str(k) for k in weights if k not in names)
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"no weight for {', '.join(map(repr, missing))}")
        if extra:
            parts.append(f"{', '.join(map(repr, extra))} not in queue_names")
        raise ValueError(f"queue_weights must weigh exactly the queue_names: {'; '.join(parts)}")
    out: dict[str, int] = {}
    for name in names:
        weight = weights[name]
        if isinstance(weight, bool) or not isinstance(weight, int):
            raise ValueError(f"queue_weights[{name!r}] must be an integer, not {weight!r}")
        if not MIN_WEIGHT <= weight <= MAX_WEIGHT:
            raise ValueError(
                f"queue_weights[{name!r}] is {weight}; weights are {MIN_WEIGHT} to {MAX_WEIGHT}"
            )
        out[name] = weight
    return out
