"""Post-commit telemetry of task transitions: the P-TEL-6 histograms and, when the server
exports traces, the P-TEL-2 spans.

The lifecycle calls these after its transaction committed, with the rows it changed and
the instant it began (`now`, the result's time for complete and fail): nothing is observed for work that rolled back. Without an
OTLP endpoint `spans` is None and the span calls are skipped (no OpenTelemetry import).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from orch8_server.metrics import Metrics
from orch8_server.storage.base import Row

if TYPE_CHECKING:
    from orch8_server.tracing import ServerSpans


class TaskObserver:
    def __init__(self, metrics: Metrics, spans: ServerSpans | None) -> None:
        self.metrics = metrics
        self.spans = spans

    def enqueued(self, rows: list[Row], started: int) -> None:
        """Tasks created (idempotent repeats excluded)."""
        if self.spans is not None and rows:
            self.spans.enqueued(rows, started)  # P-TEL-2

    def claimed(self, rows: list[Row], now: int) -> None:
        """P-TEL-6 queue wait: ready_at (max(created_at, run_at)) to the claim."""
        if not rows:
            return
        wait = self.metrics.queue_wait
        child = None
        pair = None
        for row in rows:  # claims come grouped by queue: one child lookup per run of rows
            key = (row["tenant"], row["queue_name"], row["handler_name"])  # P-TEN-4
            if key != pair:
                pair, child = key, wait.labels(*key)
            assert child is not None
            child.observe(max(0, now - max(row["created_at"], row["run_at"])) / 1000)
        if self.spans is not None:
            self.spans.claimed(rows, now)  # P-TEL-2

    def completed(self, rows: list[Row | None], started: int) -> None:
        """P-TEL-6 run time (lease start to result) of completed attempts."""
        self._ran(rows, None, started)
        if self.spans is not None:
            self.spans.completed(rows, started)  # P-TEL-2

    def failed(self, rows: Iterable[Row | None], started: int) -> None:
        """P-TEL-6 run time of failed attempts: `failed` for good, or `requeued`."""
        rows = list(rows)
        self._ran(rows, "failed", started)
        if self.spans is not None:
            self.spans.failed(rows, started)  # P-TEL-2

    def _ran(self, rows: Iterable[Row | None], failed: str | None, end: int) -> None:
        run = self.metrics.task_run
        for row in rows:
            if row is None or row.get("lease_started_at") is None:
                continue
            if failed is None:
                outcome = "completed"
            else:
                outcome = "failed" if row["status"] == "failed" else "requeued"
            child = run.labels(row["tenant"], row["queue_name"], row["handler_name"], outcome)
            child.observe(max(0, end - row["lease_started_at"]) / 1000)
