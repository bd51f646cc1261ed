"""Answers of the admin routes, built from storage rows: the tenants in use (P-TEN-4) and
the metrics page (P-TEL-6). The http layer passes them on; it never sees a row."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from typing import TYPE_CHECKING

from orch8_server.lifecycle.backpressure import Backpressure
from orch8_server.lifecycle.pollers import PollerRegistry
from orch8_server.lifecycle.queues import queue_stats
from orch8_server.metrics import Metrics
from orch8_server.storage.base import Storage

if TYPE_CHECKING:
    from orch8_server._generated.models import Tenant, TenantList


async def tenant_list(storage: Storage) -> TenantList:
    """Tenants with at least one task or worker, with their counts, in tenant order."""
    rows = await storage.list_tenants()
    tenants: list[Tenant] = [
        {"tenant": r["tenant"], "tasks": r["tasks"], "workers": r["workers"]} for r in rows
    ]
    return {"tenants": tenants}


async def metrics_page(
    storage: Storage,
    pollers: PollerRegistry,
    metrics: Metrics,
    backpressure: Backpressure,
    only: Collection[str] | None,
) -> bytes:
    """The Prometheus exposition: every tenant's series, or those of `only` (P-TEN-4)."""
    workers = await storage.list_workers(None, None)
    states = Counter((w["tenant"], w["state"]) for w in workers)  # P-TEL-6
    tenants = await storage.tenant_names()
    stats = {
        t: await queue_stats(storage, pollers, t, None)
        for t in tenants
        if only is None or t in only
    }
    # Polls parked after an empty claim (a poll still on its first claim is not waiting).
    return metrics.render(stats, backpressure.sleeping, states, only)
