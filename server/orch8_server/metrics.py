"""Prometheus metrics (P-OBS-3, P-TEL-6), one registry per server instance."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from orch8_server.histograms import LeanHistogram, Series

# Seconds, from a millisecond request to a long task or a queue backed up for minutes.
BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0,
)  # fmt: skip
WORKER_STATES = ("running", "quiet", "terminating", "dead", "deregistered")


class _ByOperation(dict[str, Series]):
    """The request histogram's series per operationId: one dict lookup a request."""

    def __init__(self, histogram: LeanHistogram) -> None:
        super().__init__()
        self.histogram = histogram

    def __missing__(self, operation: str) -> Series:
        series = self[operation] = self.histogram.labels(operation)
        return series


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
        # P-BP-1..3: refusals by reason (enqueue_rate, queue_depth, waiting_polls,
        # inflight_requests).
        self.backpressure_rejections = Counter(
            "orch8_backpressure_rejections_total",
            "Requests refused by backpressure (docs/protocol.md 12a), by reason.",
            ("reason",),
            registry=self.registry,
        )
        # P-TEL-6 --------------------------------------------------------------------------
        self.request_duration = LeanHistogram(
            "orch8_request_duration_seconds",
            "Time to answer a request, by operationId (a long-poll counts its wait).",
            ("operation",),
            BUCKETS,
            registry=self.registry,
        )
        self.request_seconds = _ByOperation(self.request_duration)
        self.task_run = LeanHistogram(
            "orch8_task_run_seconds",
            "Attempts from lease start to their result, by outcome (completed, failed, requeued).",
            ("queue", "handler", "outcome"),
            BUCKETS,
            registry=self.registry,
        )
        self.queue_wait = LeanHistogram(
            "orch8_task_queue_wait_seconds",
            "Attempts from ready_at (claimable) to their claim.",
            labels,
            BUCKETS,
            registry=self.registry,
        )
        self.oldest_pending = Gauge(
            "orch8_queue_oldest_pending_age_seconds",
            "Age of the queue's oldest pending task (0 when none is pending).",
            ("queue",),
            registry=self.registry,
        )
        self.workers = Gauge(
            "orch8_workers", "Registered workers by state.", ("state",), registry=self.registry
        )

    def render(
        self, stats: Mapping[str, Any], waiting: int, workers: Mapping[str, int] | None = None
    ) -> bytes:
        """Set the gauges from a QueueStatsList and the workers per state, render them all."""
        for gauge in (self.depth, self.pollers, self.paused, self.queue_cap, self.handler_cap,
                      self.unroutable, self.blocked, self.oldest_pending):  # fmt: skip
            gauge.clear()
        oldest: dict[str, int] = {}
        for row in stats["queues"]:
            age = row["oldest_pending_age_ms"] or 0
            oldest[row["queue_name"]] = max(oldest.get(row["queue_name"], 0), age)
        for queue, age_ms in oldest.items():
            self.oldest_pending.labels(queue).set(age_ms / 1000)
        if workers is not None:
            for state in WORKER_STATES:
                self.workers.labels(state).set(workers.get(state, 0))
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
