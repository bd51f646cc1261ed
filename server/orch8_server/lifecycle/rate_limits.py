"""Operator rate limits (P-RATE-1..5): define, change, remove and list them. A change
admits the key's held tasks in the same unit of work, at the new pace."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orch8_server import timefmt
from orch8_server.lifecycle.effects import Work
from orch8_server.problems import not_found
from orch8_server.storage.base import Storage
from orch8_server.storage.rate_buckets import Bucket
from orch8_server.storage.rows import RateLimitRow

if TYPE_CHECKING:
    from orch8_server._generated.models import RateLimit, RateLimitSettings


def view(row: RateLimitRow, now: int) -> RateLimit:
    bucket = Bucket(row["lim"], row["period_ms"], row["burst"], row["tokens"], row["refilled_at"],
                    row["ready"])  # fmt: skip
    bucket.refill(now)  # the tokens there are now, not at the last admission
    next_at = row["next_at"]
    return {
        "key": row["key"],
        "limit": row["lim"],
        "period_ms": row["period_ms"],
        "burst": row["burst"],
        "tokens": round(bucket.tokens, 3),
        "next_token_at": None if next_at is None else timefmt.iso(next_at),
        "held": row["held"],
        "updated_at": timefmt.iso(row["updated_at"]),
    }


class RateLimits:
    def __init__(self, storage: Storage, work: Work) -> None:
        self.storage = storage
        self.work = work

    async def set(self, tenant: str, key: str, body: RateLimitSettings) -> RateLimit:
        limit = int(body["limit"])
        burst = int(body.get("burst", limit))
        async with self.work() as uow:  # admits the held tasks at the new pace (P-RATE-4)
            await uow.db.set_rate_limit(tenant, key, limit, int(body["period_ms"]), burst, uow.now)
        return await self.get(tenant, key)

    async def delete(self, tenant: str, key: str) -> None:
        async with self.work() as uow:  # its held tasks become claimable (P-RATE-4)
            if not await uow.db.delete_rate_limit(tenant, key):
                raise not_found("rate limit", key)

    async def get(self, tenant: str, key: str) -> RateLimit:
        rows = await self.storage.rate_limits(tenant, key)
        if not rows:
            raise not_found("rate limit", key)
        return view(rows[0], timefmt.now_ms())

    async def list(self, tenant: str) -> dict[str, Any]:
        now = timefmt.now_ms()
        return {"rate_limits": [view(r, now) for r in await self.storage.rate_limits(tenant)]}
