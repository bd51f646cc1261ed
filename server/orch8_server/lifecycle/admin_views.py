"""Answers of the admin routes, built from storage rows: the tenants in use (P-TEN-4) and
the metrics page (P-TEL-6). The http layer passes them on; it never sees a row."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from typing import TYPE_CHECKING

from orch8_server.lifecycle.queues import queue_stats

if TYPE_CHECKING:
    from orch8_server._generated.models import Tenant, TenantList
    from orch8_server.lifecycle.engine import Engine
    from orch8_server.storage.base import Storage


async def tenant_list(storage: Storage) -> TenantList:
    """Tenants with at least one task or worker, with their counts, in tenant order."""
    rows = await storage.list_tenants()
    tenants: list[Tenant] = [
        {"tenant": r["tenant"], "tasks": r["tasks"], "workers": r["workers"]} for r in rows
    ]
    return {"tenants": tenants}


async def metrics_page(engine: Engine, only: Collection[str] | None) -> bytes:
    """The Prometheus exposition: every tenant's series, or those of `only` (P-TEN-4)."""
    storage = engine.storage
    workers = await storage.list_workers(None, None)
    states = Counter((w["tenant"], w["state"]) for w in workers)  # P-TEL-6
    tenants = await storage.tenant_names()
    stats = {t: await queue_stats(engine, t, None) for t in tenants if only is None or t in only}
    # Polls parked after an empty claim (a poll still on its first claim is not waiting).
    return engine.metrics.render(stats, engine.backpressure.sleeping, states, only)
