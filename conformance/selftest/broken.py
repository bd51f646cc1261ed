"""Broken adapters: the raw-HTTP adapter with one protocol rule broken on purpose.

    python selftest/broken.py <defect>

Each defect is a small monkeypatch of adapters/raw-http/adapter.py; the SDKs are never touched.
"""

from __future__ import annotations

import importlib.util
import signal
import sys
from pathlib import Path

RAW = Path(__file__).resolve().parent.parent / "adapters" / "raw-http" / "adapter.py"


def load_raw():
    spec = importlib.util.spec_from_file_location("raw_adapter", RAW)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def never_heartbeats(raw) -> None:
    """Sends neither worker heartbeats nor per-task heartbeats (breaks P-SDK-4, P-LEASE-5)."""
    raw.Ctx.heartbeat = lambda self, progress=None, checkpoint=None: None
    raw.heartbeat_loop = lambda interval_s: None


def completes_after_lease_loss(raw) -> None:
    """Reports without its lease id, so a late result lands on someone else's lease (breaks P-SDK-5)."""

    def report(ctx, kind, body):
        raw.call("POST", f"/workers/tasks/{ctx.id}/{kind}", body)

    raw.report = report


def ignores_sigterm(raw) -> None:
    """Keeps claiming and never exits on SIGTERM (breaks P-SDK-7)."""
    original = raw.on_signal

    def on_signal(signum, frame):
        if signum not in (signal.SIGTERM, signal.SIGINT):
            original(signum, frame)

    raw.on_signal = on_signal


def exceeds_concurrency(raw) -> None:
    """Polls for its full concurrency whatever it already holds (breaks P-SDK-3)."""
    raw.free_slots = lambda: raw.CONCURRENCY


DEFECTS = {f.__name__: f for f in (never_heartbeats, completes_after_lease_loss, ignores_sigterm, exceeds_concurrency)}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in DEFECTS:
        sys.exit(f"usage: broken.py {{{','.join(DEFECTS)}}}")
    raw = load_raw()
    DEFECTS[sys.argv[1]](raw)
    raw.main()
