"""Prometheus metrics (P-OBS-3, P-TEL-6), one registry per server instance.

P-TEN-4: every per-queue, per-handler and per-worker-state series carries a `tenant`
label; process-wide series (requests, problems, waiting polls, backpressure) do not.
`render(..., tenants=...)` leaves out the series of other tenants (a `metrics` key).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.metrics_core import Metric

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
        labels = ("tenant", "queue", "handler")

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
            ("tenant", "queue", "handler", "state"),
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
            "orch8_queue_paused",
            "1 while the queue is paused.",
            ("tenant", "queue"),
            registry=self.registry,
        )
        self.queue_cap = Gauge(
            "orch8_queue_max_running",
            "The queue's running cap (absent without one).",
            ("tenant", "queue"),
            registry=self.registry,
        )
        self.handler_cap = Gauge(
            "orch8_handler_max_running",
            "The handler's running cap (absent without one).",
            ("tenant", "handler"),
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
            ("tenant", "queue", "handler", "reason"),
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
            ("tenant", "queue", "handler", "outcome"),
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
            ("tenant", "queue"),
            registry=self.registry,
        )
        self.workers = Gauge(
            "orch8_workers",
            "Registered workers by state.",
            ("tenant", "state"),
            registry=self.registry,
        )

    def render(
        self,
        stats: Mapping[str, Mapping[str, Any]],
        waiting: int,
        workers: Mapping[tuple[str, str], int] | None = None,
        tenants: Collection[str] | None = None,
    ) -> bytes:
        """Set the gauges from each tenant's QueueStatsList and the workers per (tenant,
        state), render them: every tenant's series, or those of `tenants` only (P-TEN-4)."""
        for gauge in (self.depth, self.pollers, self.paused, self.queue_cap, self.handler_cap,
                      self.unroutable, self.blocked, self.oldest_pending, self.workers):  # fmt: skip
            gauge.clear()
        for tenant, tenant_stats in stats.items():
            self._set_queue_gauges(tenant, tenant_stats)
        if workers is not None:
            for tenant in sorted({t for t, _ in workers} | set(stats)):
                for state in WORKER_STATES:
                    self.workers.labels(tenant, state).set(workers.get((tenant, state), 0))
        self.waiting.set(waiting)
        if tenants is None:
            return generate_latest(self.registry)
        return generate_latest(_OfTenants(self.registry, frozenset(tenants)))

    def _set_queue_gauges(self, tenant: str, stats: Mapping[str, Any]) -> None:
        oldest: dict[str, int] = {}
        for row in stats["queues"]:
            age = row["oldest_pending_age_ms"] or 0
            oldest[row["queue_name"]] = max(oldest.get(row["queue_name"], 0), age)
        for queue, age_ms in oldest.items():
            self.oldest_pending.labels(tenant, queue).set(age_ms / 1000)
        for row in stats["queues"]:
            pair = (tenant, row["queue_name"], row["handler_name"])
            for state in ("pending", "scheduled", "running", "failed"):
                self.depth.labels(*pair, state).set(row[state])
            self.pollers.labels(*pair).set(row["active_pollers"])
            self.unroutable.labels(*pair).set(row["unroutable"])
            if row["blocked"] is not None:
                self.blocked.labels(*pair, row["blocked"]).set(1)
        for control in stats["queue_controls"]:
            self.paused.labels(tenant, control["queue_name"]).set(1 if control["paused"] else 0)
            if control["max_running"] is not None:
                self.queue_cap.labels(tenant, control["queue_name"]).set(control["max_running"])
        controlled = {c["queue_name"] for c in stats["queue_controls"]}
        for row in stats["queues"]:
            if row["queue_name"] not in controlled:
                self.paused.labels(tenant, row["queue_name"]).set(0)
        for control in stats["handler_controls"]:
            self.handler_cap.labels(tenant, control["handler_name"]).set(control["max_running"])


class _OfTenants:
    """The registry with the series of other tenants left out (P-TEN-4): a sample with a
    `tenant` label is kept only for `tenants`; process-wide series are kept."""

    def __init__(self, registry: CollectorRegistry, tenants: frozenset[str]) -> None:
        self.registry = registry
        self.tenants = tenants

    def collect(self) -> Iterator[Metric]:
        for family in self.registry.collect():
            kept = Metric(family.name, family.documentation, family.type, family.unit)
            kept.samples = [
                s
                for s in family.samples
                if "tenant" not in s.labels or s.labels["tenant"] in self.tenants
            ]
            yield kept
