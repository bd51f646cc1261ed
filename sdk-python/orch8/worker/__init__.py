"""The Orch8 worker runtime (protocol section 14)."""

from .backoff import Backoff
from .context import TaskContext
from .observe import (
    ErrorEvent,
    PollEvent,
    TaskAbandonedEvent,
    TaskCompleteEvent,
    TaskFailEvent,
    TaskStartEvent,
    WorkerStats,
)
from .worker import Worker

__all__ = [
    "Backoff",
    "ErrorEvent",
    "PollEvent",
    "TaskAbandonedEvent",
    "TaskCompleteEvent",
    "TaskContext",
    "TaskFailEvent",
    "TaskStartEvent",
    "Worker",
    "WorkerStats",
]
