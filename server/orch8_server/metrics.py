"""Prometheus metrics (P-OBS-3), one registry per server instance."""

from __future__ import annotations

from collections.abc import Mapping
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
        # P-OBS-4: why pending tasks are not handed out.
        self.paused = Gauge(
            "orch8_queue_paused", "1 while the queue is paused.", ("queue",), registry=self.registry
        )
        self.queue_cap = Gauge(
            "orch8_queue_max_running",
            "The queue's running cap (absent without one).",
            ("queue",),
            registry=self.registry,
        )
        self.handler_cap = Gauge(
            "orch8_handler_max_running",
            "The handler's running cap (absent without one).",
            ("handler",),
            registry=self.registry,
        )
        self.unroutable = Gauge(
            "orch8_queue_unroutable",
            "Pending tasks whose required labels no live worker has.",
            labels,
            registry=self.registry,
        )
        self.blocked = Gauge(
            "orch8_queue_blocked",
            "1 for the reason a row's pending tasks are not handed out.",
            ("queue", "handler", "reason"),
            registry=self.registry,
        )
        self.waiting = Gauge(
            "orch8_polls_waiting", "Long-polls currently waiting.", registry=self.registry
        )

    def render(self, stats: Mapping[str, Any], waiting: int) -> bytes:
        """Set the gauges from a QueueStatsList and render every metric."""
        for gauge in (self.depth, self.pollers, self.paused, self.queue_cap, self.handler_cap,
                      self.unroutable, self.blocked):  # fmt: skip
            gauge.clear()
        for row in stats["queues"]:
            pair = (row["queue_name"], row["handler_name"])
            for state in ("pending", "scheduled", "running", "failed"):
                self.depth.labels(*pair, state).set(row[state])
            self.pollers.labels(*pair).set(row["active_pollers"])
            self.unroutable.labels(*pair).set(row["unroutable"])
            if row["blocked"] is not None:
                self.blocked.labels(*pair, row["blocked"]).set(1)
        for control in stats["queue_controls"]:
            self.paused.labels(control["queue_name"]).set(1 if control["paused"] else 0)
            if control["max_running"] is not None:
                self.queue_cap.labels(control["queue_name"]).set(control["max_running"])
        controlled = {c["queue_name"] for c in stats["queue_controls"]}
        for row in stats["queues"]:
            if row["queue_name"] not in controlled:
                self.paused.labels(row["queue_name"]).set(0)
        for control in stats["handler_controls"]:
            self.handler_cap.labels(control["handler_name"]).set(control["max_running"])
        self.waiting.set(waiting)
        return generate_latest(self.registry)
