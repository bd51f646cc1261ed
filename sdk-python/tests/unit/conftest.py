"""Shared fixtures for unit tests: wire examples from openapi.yaml and a fast retry policy."""

from __future__ import annotations

from typing import Any

import pytest

from orch8 import RetryPolicy

BASE = "http://orch8.test"

LEASE = {
    "id": "lease_1",
    "worker_id": "w1",
    "attempt": 1,
    "expires_at": "2026-11-21T10:31:00.000Z",
}


def claimed_task(task_id: str = "task_1", **over: Any) -> dict[str, Any]:
    """A ClaimedTask as the server sends it (openapi.yaml example shape)."""
    body = {
        "id": task_id,
        "handler_name": "process_image",
        "queue_name": "default",
        "params": {"image_url": "https://example.com/cat.png"},
        "context": {"step_id": "resize"},
        "headers": {},
        "priority": 0,
        "attempt": 1,
        "max_attempts": 3,
        "lease": dict(LEASE),
        "checkpoint": None,
        "good_until": None,
        "created_at": "2026-11-21T10:30:00.000Z",
        "ready_at": "2026-11-21T10:30:00.000Z",  # contract 1.3.0 (P-TEL-4)
        "metadata": {"attempt": 1, "max_attempts": 3, "created_at": "2026-11-21T10:30:00.000Z"},
    }
    body.update(over)
    return body


def outcome(task_id: str = "task_1", status: str = "completed") -> dict[str, Any]:
    return {
        "task_id": task_id,
        "status": status,
        "attempt": 1,
        "attempts_left": 2,
        "next_attempt_at": None,
        "error_code": None,
    }


def problem(status: int, code: str, detail: str = "nope") -> dict[str, Any]:
    return {
        "type": f"urn:orch8:problem:{code}",
        "title": code,
        "status": status,
        "detail": detail,
        "code": code,
        "errors": [],
    }


def task(task_id: str = "task_1", status: str = "pending") -> dict[str, Any]:
    return {
        "id": task_id,
        "handler_name": "process_image",
        "queue_name": "default",
        "status": status,
        "priority": 0,
        "params": {},
        "context": {},
        "headers": {},
        "attempt": 0,
        "max_attempts": 3,
        "retry": {
            "max_attempts": 3,
            "initial_backoff_ms": 1000,
            "backoff_multiplier": 2.0,
            "max_backoff_ms": 300000,
            "jitter": 0.2,
        },
        "run_at": "2026-11-21T10:30:00.000Z",
        "good_until": None,
        "idempotency_key": None,
        "created_at": "2026-11-21T10:30:00.000Z",
        "updated_at": "2026-11-21T10:30:00.000Z",
        "started_at": None,
        "finished_at": None,
        "next_attempt_at": None,
        "worker_id": None,
        "lease": None,
        "output": None,
        "error": None,
        "checkpoint": None,
        "progress": None,
        "cancel_reason": None,
        "required_labels": {},  # contract 1.2.0: always present on a Task (P-LABEL-1)
        "concurrency_key": None,  # contract 1.10.0: always present, null without a key (P-KEY-1)
        "max_concurrency": None,
        "rate_limit_key": None,  # contract 1.10.0 (P-RATE-1): always present too
    }


def instance(status: str = "running", instance_id: str = "inst_1") -> dict[str, Any]:
    """An Instance as the server sends it (openapi.yaml's running_instance shape), as of
    contract 1.10.0: without 1.11.0's optional concurrency_key and max_concurrency (P-KEY-7)."""
    final = status != "running"
    return {
        "id": instance_id,
        "tenant": "default",
        "sequence": "thumbnail",
        "version": 1,
        "status": status,
        "input": {"image": "cat.png"},
        "context": {"data": {"image": "cat.png"}, "config": {}},
        "output": {"url": "https://cdn.example.com/cat.png"} if status == "completed" else None,
        "error": {"message": "boom", "code": "x"} if status == "failed" else None,
        "steps": [],
        "on_error": None,
        "idempotency_key": None,
        "created_at": "2026-11-21T10:30:00.000Z",
        "updated_at": "2026-11-21T10:30:01.000Z",
        "finished_at": "2026-11-21T10:30:01.000Z" if final else None,
    }


@pytest.fixture
def fast_retry() -> RetryPolicy:
    """Same retry count as the default, tiny delays so tests stay fast."""
    return RetryPolicy(max_retries=3, base_delay_ms=1, max_delay_ms=2)
