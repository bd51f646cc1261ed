"""Starting an instance: its input and config (P-WF-10), and the admission of the tasks
it dispatches at once under the enqueue limits (P-BP-1, P-BP-2)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from orch8_server.lifecycle.backpressure import Backpressure
from orch8_server.lifecycle.tasks import DEFAULT_QUEUE
from orch8_server.lifecycle.workflow_steps import Machine, initial_state
from orch8_server.lifecycle.workflow_tree import Tree
from orch8_server.problems import Problem, not_found
from orch8_server.storage.base import Storage
from orch8_server.storage.rows import SequenceRow

if TYPE_CHECKING:
    from orch8_server._generated.models import NewInstance


def input_of(body: NewInstance) -> tuple[dict[str, Any], dict[str, Any]]:
    """The instance input and config: `input` or `context.data` (both equal), and
    `context.config` (P-WF-10)."""
    context = body.get("context") or {}
    data = body.get("input")
    if "data" in context:
        if data is not None and data != context["data"]:
            raise Problem(
                "validation_error", "input and context.data differ; give one of them",
                errors=[{"pointer": "/context/data", "detail": "differs from input"}],
            )  # fmt: skip
        data = context["data"]
    return dict(data or {}), dict(context.get("config") or {})


async def admit(
    storage: Storage,
    backpressure: Backpressure,
    tree_of: Callable[[SequenceRow], Tree],
    tenant: str,
    body: NewInstance,
    now: int,
) -> int:
    """P-BP-1, P-BP-2: a start takes enqueue tokens and checks the queue depth for the
    tasks it dispatches at once (found by running the state machine on a copy; pure),
    so it stores nothing when refused. Returns the version it admitted, which the start
    then uses. Steps dispatched later by the engine are never refused: an accepted
    instance must not stall."""
    async with storage.transaction() as tx:
        seq = await tx.workflows.sequence(tenant, body["sequence"], body.get("version"))
    if seq is None:
        raise not_found("sequence", body["sequence"])
    tree = tree_of(seq)
    data, config = input_of(body)
    probe = {"id": "inst_probe", "input": data, "status": "running",
             "state": initial_state(tree, {}, config), "updated_at": now}  # fmt: skip
    machine = Machine(probe, tree, now)
    machine.start()
    queues = [d.action.get("queue_name", DEFAULT_QUEUE) for d in machine.dispatches]
    if backpressure.rate and len(queues) > backpressure.burst:  # can never pass: 422
        raise Problem(
            "validation_error",
            f"starting sequence {seq['name']} version {seq['version']} dispatches "
            f"{len(queues)} tasks at once, more than the enqueue burst of "
            f"{backpressure.burst} (--enqueue-burst)",
            errors=[{"pointer": "/sequence",
                     "detail": f"dispatches more than {backpressure.burst} tasks at once"}],
        )  # fmt: skip
    if queues:
        await backpressure.admit_enqueue(queues, tenant=tenant)
    version: int = seq["version"]
    return version
