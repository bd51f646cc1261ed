"""The Orch8 worker runtime (protocol section 14)."""

from .backoff import Backoff
from .context import TaskContext
from .observe import WorkerStats
from .worker import Worker

__all__ = ["Backoff", "TaskContext", "Worker", "WorkerStats"]
