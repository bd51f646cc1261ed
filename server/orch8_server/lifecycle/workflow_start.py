"""Starting an instance: its input and config (P-WF-10), and the admission of the tasks
it dispatches at once under the enqueue limits (P-BP-1, P-BP-2)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
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


@contextlib.contextmanager
def item(pointer: str, i: int) -> Iterator[None]:
    """P-WF-14: a problem about one item of a batch names it: its field errors point into
    `<pointer>/<i>` and its detail starts with that path. A single start (pointer "")
    keeps its problems as they are."""
    if not pointer:
        yield
        return
    try:
        yield
    except Problem as problem:
        where = f"{pointer}/{i}"
        problem.errors = [{**e, "pointer": where + e["pointer"]} for e in problem.errors]
        problem.detail = f"{where[1:]}: {problem.detail}"
        raise


async def admit(
    storage: Storage,
    backpressure: Backpressure,
    tree_of: Callable[[SequenceRow], Tree],
    tenant: str,
    bodies: list[NewInstance],
    now: int,
    pointer: str,
) -> list[int | None]:
    """P-BP-1, P-BP-2: starts take enqueue tokens and check the queue depth for the tasks
    they dispatch at once (found by running the state machine on a copy; pure), all of a
    batch together, so nothing is stored when refused. Returns the versions it admitted,
    which the starts then use. Steps dispatched later by the engine are never refused: an
    accepted instance must not stall."""
    async with storage.transaction() as tx:
        seqs = [
            await tx.workflows.sequence(tenant, body["sequence"], body.get("version"))
            for body in bodies
        ]
    queues: list[str] = []
    versions: list[int | None] = []
    for i, (body, seq) in enumerate(zip(bodies, seqs, strict=True)):
        with item(pointer, i):
            if seq is None:
                raise not_found("sequence", body["sequence"])
            tree = tree_of(seq)
            data, config = input_of(body)
            probe = {"id": "inst_probe", "input": data, "status": "running",
                     "state": initial_state(tree, {}, config), "updated_at": now}  # fmt: skip
            machine = Machine(probe, tree, now)
            machine.start()
            mine = [d.action.get("queue_name", DEFAULT_QUEUE) for d in machine.dispatches]
            if backpressure.rate and len(mine) > backpressure.burst:  # never passes: 422
                raise Problem(
                    "validation_error",
                    f"starting sequence {seq['name']} version {seq['version']} dispatches "
                    f"{len(mine)} tasks at once, more than the enqueue burst of "
                    f"{backpressure.burst} (--enqueue-burst)",
                    errors=[{"pointer": "/sequence",
                             "detail": f"dispatches more than {backpressure.burst} tasks at once"}],
                )  # fmt: skip
        queues += mine
        versions.append(seq["version"])
    if backpressure.rate and len(queues) > backpressure.burst:  # the batch as a whole
        raise Problem(
            "validation_error",
            f"the first steps of these {len(bodies)} instances dispatch {len(queues)} tasks "
            f"at once, more than the enqueue burst of {backpressure.burst} (--enqueue-burst); "
            "start fewer instances per request",
            errors=[{"pointer": pointer, "detail": f"at most {backpressure.burst} tasks at once"}],
        )  # fmt: skip
    if queues:
        await backpressure.admit_enqueue(queues, tenant=tenant)
    return versions
