"""P-SDK-27 against the real server: a failure report never dies of its own size (D1)."""

from __future__ import annotations

from orch8 import Orch8Client, PermanentError, TaskContext

from .conftest import make_worker, wait_until

MIB = 1024 * 1024


def test_p_sdk_27_a_2_mib_failure_lands_with_its_real_error(
    server, client: Orch8Client, run_worker
) -> None:
    """A 2 MiB message and details are bounded; a 2 MiB checkpoint (413) is dropped once."""
    worker, _ = make_worker(server)

    @worker.handler("huge")
    def huge(ctx: TaskContext) -> None:
        raise PermanentError(
            "x" * (2 * MIB),
            code="too_big",
            details={"blob": "y" * MIB},
            checkpoint={"z": "z" * (2 * MIB)},
        )

    rw = run_worker(worker)
    task = client.enqueue("huge")
    done = wait_until(
        lambda: (t := client.get_task(task.id)).status == "failed" and t, 20, "the task to fail"
    )
    rw.stop_and_join(10)
    assert done.error.code == "too_big"
    assert done.error.message == "x" * 16_384 + f" [truncated from {2 * MIB} bytes]"
    assert done.error.details.to_dict() == {
        "report_refused": {"status": 413, "code": "payload_too_large"}
    }
    stats = worker.stats()
    assert (stats.tasks_failed, stats.tasks_lease_lost) == (1, 0)
