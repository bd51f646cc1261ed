"""Instance concurrency keys (P-KEY-7): at most `max_concurrency` instances of a key run
at once, per tenant, from their start until they are final.

An instance over its key's limit is stored with status `held` (`running` on the wire, see
`wire_status`): its state machine has not started, so no block ran and no task exists.
Every decision about a key takes the key's lock first (`lock_instance_key`: a transaction
lock on PostgreSQL), then counts, so racing starts and ends of one key take turns and
never seat more than its limit. The instance that ends gives its slot to the held ones in
the same transaction (`admit`), so no crash can leave a key with held instances and free
slots.

Lock order, so that replicas cannot deadlock: an ending instance's row, then its key, then
the key's held rows (and, through their first steps' dispatch, task keys). Cancelling a
held instance takes its row only: it held no slot, so it admits nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from orch8_server.problems import Problem

if TYPE_CHECKING:
    from orch8_server.storage.base import Tx
    from orch8_server.storage.rows import InstanceRow

HELD = "held"
_SCAN = 100  # held instances read per admission round; a key's limit past it waits a round
_LAST = 2**62  # a new instance has every held one ahead of it


def wire_status(status: str) -> str:
    """A held instance has started as far as the caller knows (P-KEY-7)."""
    return "running" if status == HELD else status


def key_of(body: Any) -> tuple[str | None, int | None]:
    """The key and limit a start asks for; a limit without a key is 422 (P-KEY-7)."""
    key, limit = body.get("concurrency_key"), body.get("max_concurrency")
    if key is None:
        if limit is not None:
            raise Problem(
                "validation_error", "max_concurrency needs a concurrency_key (P-KEY-7)",
                errors=[{"pointer": "/max_concurrency", "detail": "given without concurrency_key"}],
            )  # fmt: skip
        return None, None
    return key, 1 if limit is None else int(limit)


async def has_room(tx: Tx, inst: Mapping[str, Any]) -> bool:
    """Lock the instance's key and say whether it may run now: the running instances of
    the key plus the held ones ahead of it are fewer than its own limit (P-KEY-4's rule).
    An instance without a key always may."""
    key = inst["concurrency_key"]
    if key is None:
        return True
    await tx.workflows.lock_instance_key(inst["tenant"], key)
    running, ahead = await tx.workflows.instance_slots(
        inst["tenant"], key, inst.get("seq") or _LAST
    )
    return running + ahead < (inst["max_concurrency"] or 1)


async def next_admissible(tx: Tx, tenant: str, key: str) -> InstanceRow | None:
    """Under the key's lock, the first held instance that fits now, or None. Counts are
    read afresh each time: starting one may end it (and admit others) in this same
    transaction, so nothing counted before it can be trusted after."""
    await tx.workflows.lock_instance_key(tenant, key)
    running, _ = await tx.workflows.instance_slots(tenant, key, 0)
    for ahead, inst in enumerate(await tx.workflows.held_instances(tenant, key, _SCAN)):
        if running + ahead < (inst["max_concurrency"] or 1):
            return inst
    return None


async def waiting(tx: Tx, inst: InstanceRow) -> dict[str, Any]:
    """`waiting` of a held instance (P-KEY-7, the shape of P-OBS-7's)."""
    key, cap = inst["concurrency_key"], inst["max_concurrency"] or 1
    running, ahead = await tx.workflows.instance_slots(inst["tenant"], str(key), inst["seq"])
    return {
        "reason": "concurrency_key",
        "detail": f"{running} instance(s) of concurrency key {key} hold its {cap} slot(s); "
        f"{ahead} waiting instance(s) of the key start before this one (P-KEY-7)",
        "running": running,
        "cap": cap,
    }
