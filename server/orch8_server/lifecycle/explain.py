"""Why a task is not running, or who runs it (P-OBS-7): the `waiting` of GET /tasks/{id}.

Read from what the server already keeps for GET /queues (controls, running counts,
pollers, live workers' labels), for one task: the first hold that applies, in the
order the rule states.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orch8_server import timefmt
from orch8_server.lifecycle.pollers import PollerRegistry
from orch8_server.storage.base import Storage, wake_key

if TYPE_CHECKING:
    from orch8_server._generated.models import Task, TaskWaiting

FINISHED = ("completed", "failed", "cancelled", "expired")


def _hold(reason: str, detail: str, **fields: Any) -> TaskWaiting:
    held: dict[str, Any] = {"reason": reason, "detail": detail}
    held.update(fields)
    return held  # type: ignore[return-value]


async def waiting(
    storage: Storage, pollers: PollerRegistry, tenant: str, task: Task
) -> TaskWaiting:
    status, queue, handler = task["status"], task["queue_name"], task["handler_name"]
    if status in FINISHED:
        return _hold("finished", f"the task is {status}")
    if status == "running":
        lease: dict[str, Any] = dict(task["lease"] or {})
        worker_id = task["worker_id"]
        worker = await storage.get_worker(tenant, worker_id) if worker_id else None
        seen = None if worker is None else timefmt.iso(worker["last_heartbeat_at"])
        expires = lease.get("expires_at")
        return _hold(
            "running", f"worker {worker_id} holds its lease until {expires}"
            + (f"; its last heartbeat was at {seen}" if seen else ""),
            worker_id=worker_id, last_heartbeat_at=seen, lease_expires_at=expires,
        )  # fmt: skip
    if status == "scheduled":
        backoff = task["next_attempt_at"] is not None
        until = task["next_attempt_at"] if backoff else task["run_at"]
        if backoff:
            return _hold("retry_backoff", f"attempt {task['attempt']} failed; it is "
                         f"claimable again at {until} (P-RETRY-1)", until=until)  # fmt: skip
        return _hold("scheduled", f"it is claimable from {until} on", until=until)
    key, rate_key = task["concurrency_key"], task["rate_limit_key"]
    # P-KEY-1, P-RATE-1: the wire says pending; the stored row says held or not
    row = await storage.get_task(task["id"]) if key or rate_key else None
    if row is not None and row["status"] == "held":
        if key is not None:
            taken, cap = await storage.key_slots(tenant, key), task["max_concurrency"]
            return _hold("concurrency_key", f"{taken} task(s) of concurrency key {key} hold "
                         f"its {cap} slot(s); it is admitted when one ends (P-KEY-3)",
                         running=taken, cap=cap)  # fmt: skip
        return await _rate_limited(storage, tenant, str(rate_key))
    queues, handlers = await storage.controls()
    control = next((q for q in queues if q["tenant"] == tenant and q["queue_name"] == queue), None)
    cap = next((h["max_running"] for h in handlers
                if h["tenant"] == tenant and h["handler_name"] == handler), None)  # fmt: skip
    if control is not None and control["paused"]:
        return _hold("paused", f"queue {queue} is paused (P-CTRL-1)")
    if (control is not None and control["max_running"] is not None) or cap is not None:
        counts = [(q, h, n) for t, q, h, n in await storage.running_counts() if t == tenant]
        if control is not None and control["max_running"] is not None:
            running = sum(n for q, _, n in counts if q == queue)
            if running >= control["max_running"]:
                return _hold("queue_cap", f"queue {queue} runs {running} tasks, its cap "
                             "(P-CTRL-2)", running=running, cap=control["max_running"])  # fmt: skip
        if cap is not None:
            running = sum(n for _, h, n in counts if h == handler)
            if running >= cap:
                return _hold("handler_cap", f"handler {handler} runs {running} tasks, its "
                             "cap (P-CTRL-2)", running=running, cap=cap)  # fmt: skip
    required = task["required_labels"]
    if required:
        workers = await storage.live_worker_labels(tenant)
        if not any(all(w.get(k) == v for k, v in required.items()) for w in workers):
            labels = ", ".join(f"{k}={v}" for k, v in sorted(required.items()))
            return _hold("unroutable", f"no live worker has the labels {labels} (P-LABEL-3)")
    count = pollers.count(wake_key(tenant, queue), handler, timefmt.now_ms())
    if count == 0:
        return _hold("no_poller", f"no worker polls handler {handler} on queue {queue} now "
                     "(P-OBS-1)", pollers=0)  # fmt: skip
    return _hold("claimable", f"{count} worker(s) poll handler {handler} on queue {queue}; "
                 "it is handed out as their slots free", pollers=count)  # fmt: skip


async def _rate_limited(storage: Storage, tenant: str, key: str) -> TaskWaiting:
    limits = await storage.rate_limits(tenant, key)
    if not limits:  # removed a moment ago: it is being admitted (P-RATE-4)
        return _hold("rate_limited", f"rate limit {key} was removed; it is admitted now")
    limit = limits[0]
    pace = f"rate limit {key} ({limit['lim']} per {limit['period_ms']} ms, burst {limit['burst']})"
    if limit["next_at"] is None:  # P-RATE-2: `burst` admitted tasks wait for workers
        return _hold("rate_limited", f"{pace}: {limit['burst']} admitted task(s) wait for a "
                     "worker; it is admitted as they are claimed (P-RATE-2)")  # fmt: skip
    until = timefmt.iso(limit["next_at"])
    return _hold("rate_limited", f"{pace}: waiting for a token, the next at {until} (P-RATE-3)",
                 until=until)  # fmt: skip
