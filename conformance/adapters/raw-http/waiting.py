"""ORCH8_WAIT_INSTANCE for the raw-HTTP adapter: P-SDK-25's waitInstance in plain HTTP.

Long-polls `GET /instances/{id}?wait_ms=` in rounds of at most 30000 ms until the instance is
final or ORCH8_WAIT_TIMEOUT_MS (default 5 minutes) passes; reports `waited` or `wait_timeout`.
"""

from __future__ import annotations

import threading
import time

ROUND_MS = 30000
FINAL = ("completed", "failed", "cancelled")


def start(env, call, emit) -> None:
    instance_id = env.get("ORCH8_WAIT_INSTANCE")
    if not instance_id:
        return
    timeout_ms = int(env.get("ORCH8_WAIT_TIMEOUT_MS") or 300000)

    def run() -> None:
        deadline, last, first = time.monotonic() + timeout_ms / 1000, None, True
        while first or time.monotonic() < deadline:
            first = False
            wait_ms = max(0, min(ROUND_MS, int((deadline - time.monotonic()) * 1000)))
            try:
                status, answer, _ = call(
                    "GET", f"/instances/{instance_id}?wait_ms={wait_ms}", None, wait_ms / 1000 + 10
                )
            except OSError:
                time.sleep(0.2)  # an outage: ride it out like any safe call (P-SDK-2)
                continue
            if status == 200 and answer:
                last = answer.get("status")
                if last in FINAL:
                    return emit("waited", instance_id=instance_id, status=last)
            elif status >= 500 or status in (408, 429):
                time.sleep(0.2)
        emit("wait_timeout", instance_id=instance_id, last_status=last)

    threading.Thread(target=run, daemon=True).start()
