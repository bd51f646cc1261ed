"""Prometheus metrics (P-OBS-3), one registry per server instance."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        labels = ("queue", "handler")

        def counter(name: str, doc: str) -> Counter:
            return Counter(name, doc, labels, registry=self.registry)

        self.enqueued = counter("orch8_tasks_enqueued_total", "Tasks created.")
        self.claimed = counter("orch8_tasks_claimed_total", "Claims (attempts started).")
        self.completed = counter("orch8_tasks_completed_total", "Tasks completed.")
        self.failed = counter("orch8_tasks_failed_total", "Tasks that ended failed.")
        self.requeued = counter("orch8_tasks_requeued_total", "Attempts re-queued after a failure.")
        self.reaped = counter(
            "orch8_tasks_reaped_total", "Attempts ended by lease expiry or a lost worker."
        )
        self.cancelled = counter("orch8_tasks_cancelled_total", "Tasks cancelled.")
        self.expired = Counter(
            "orch8_tasks_expired_total",
            "Tasks expired unclaimed past good_until.",
            registry=self.registry,
        )
        self.depth = Gauge(
            "orch8_queue_tasks",
            "Tasks per queue, handler and state.",
            ("queue", "handler", "state"),
            registry=self.registry,
        )
        self.pollers = Gauge(
            "orch8_queue_active_pollers",
            "Active pollers per queue and handler.",
            labels,
            registry=self.registry,
        )
        # Checked against openapi.yaml's x-orch8-codes by the server tests (emitted codes).
        self.problems = Counter(
            "orch8_problems_total",
            "Problem answers by code (whole responses and batch items).",
            ("code",),
            registry=self.registry,
        )
        self.waiting = Gauge(
            "orch8_polls_waiting", "Long-polls currently waiting.", registry=self.registry
        )

    def render(self, stats: list[dict[str, Any]], waiting: int) -> bytes:
        self.depth.clear()
        self.pollers.clear()
        for row in stats:
            for state in ("pending", "scheduled", "running", "failed"):
                self.depth.labels(row["queue_name"], row["handler_name"], state).set(row[state])
            self.pollers.labels(row["queue_name"], row["handler_name"]).set(row["active_pollers"])
        self.waiting.set(waiting)
        return generate_latest(self.registry)
