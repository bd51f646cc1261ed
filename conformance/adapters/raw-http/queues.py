"""The raw-HTTP adapter's queue options: one queue or an ordered list with weights, and the
worker's labels, read from ORCH8_QUEUE, ORCH8_QUEUE_NAMES, ORCH8_QUEUE_WEIGHTS and ORCH8_LABELS.

Checked before any request, as P-SDK-23 asks of an SDK: a poll the server would refuse with
422 (P-QUEUE-4) is never sent.
"""

from __future__ import annotations

MAX_NAMES, MIN_WEIGHT, MAX_WEIGHT = 10, 1, 1000  # P-QUEUE-2, P-QUEUE-3


class QueueOptionsError(ValueError):
    """Refused queue options; the message names the option (P-SDK-23)."""


def pairs(raw: str) -> dict[str, str]:
    """Parse `k=v,k=v` into a dict."""
    out = {}
    for item in filter(None, raw.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise QueueOptionsError(f"{item!r} is not key=value")
        out[key] = value
    return out


class QueueOptions:
    """What every poll carries and what the registration says (P-SDK-21, P-SDK-23)."""

    def __init__(self, name: str | None, names: list[str] | None, weights: dict[str, int] | None, labels: dict) -> None:
        self.name, self.names, self.weights, self.labels = name, names, weights, labels

    def poll_fields(self) -> dict:
        """queue_name, or queue_names with optional queue_weights, unchanged in every poll."""
        if self.names is None:
            return {"queue_name": self.name} if self.name else {}
        fields: dict = {"queue_names": list(self.names)}
        if self.weights is not None:
            fields["queue_weights"] = dict(self.weights)
        return fields

    def registered_queues(self) -> list[str]:
        return list(self.names) if self.names is not None else [self.name or "default"]


def check(name: str | None, names: list[str] | None, weights: dict[str, int] | None) -> None:
    """P-SDK-23: a name and a list, an empty or repeated list, or weights that differ from it."""
    if names is None:
        if weights is not None:
            raise QueueOptionsError("queue_weights needs queue_names")
        return
    if name is not None:
        raise QueueOptionsError("give either queue_name or queue_names, not both")
    if not 1 <= len(names) <= MAX_NAMES:
        raise QueueOptionsError(f"queue_names takes 1 to {MAX_NAMES} names, got {len(names)}")
    if "" in names:
        raise QueueOptionsError("queue_names has an empty name")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise QueueOptionsError(f"queue_names repeats {', '.join(repeated)}")
    if weights is None:
        return
    if set(weights) != set(names):
        raise QueueOptionsError(f"queue_weights must weigh exactly the queue_names {names}, got {sorted(weights)}")
    for queue, weight in weights.items():
        if not MIN_WEIGHT <= weight <= MAX_WEIGHT:
            raise QueueOptionsError(f"queue_weights[{queue!r}] is {weight}, not {MIN_WEIGHT}..{MAX_WEIGHT}")


def from_env(env) -> QueueOptions:
    """Read and check the options; raises QueueOptionsError before the adapter sends anything."""
    name = env.get("ORCH8_QUEUE") or None
    names = env["ORCH8_QUEUE_NAMES"].split(",") if env.get("ORCH8_QUEUE_NAMES") else None
    weights = None
    if env.get("ORCH8_QUEUE_WEIGHTS"):
        try:
            weights = {k: int(v) for k, v in pairs(env["ORCH8_QUEUE_WEIGHTS"]).items()}
        except ValueError as err:
            raise QueueOptionsError(f"queue_weights: {err}") from None
    check(name, names, weights)
    return QueueOptions(name, names, weights, pairs(env.get("ORCH8_LABELS", "")))
