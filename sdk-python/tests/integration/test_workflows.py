"""P-SDK-25 against the real server: the README's workflow, and waiting on a failed instance."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orch8 import Orch8Client, PermanentError, TaskContext, WaitTimeoutError, Worker


def _readme_block(name: str) -> str:
    """The python block after `<!-- consumer-test: NAME -->` in this package's README."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    match = re.search(rf"<!-- consumer-test: {name} -->\s*```python\n(.*?)```", readme, re.S)
    assert match, f"README.md has no consumer-test {name} block"
    return match.group(1)


def test_p_sdk_25_readme_workflow_example_runs(server, client, monkeypatch, capsys) -> None:
    """The README's "Workflows" example, as written: blocks with templates, a try_catch whose
    catch reads the failed step's error, the SDK's Worker, a wait."""
    monkeypatch.setenv("ORCH8_URL", server.url)
    names: dict[str, object] = {"__name__": "readme_workflows"}
    exec(_readme_block("workflows"), names)
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        "completed {'archived': 'https://cdn.example.com/cat.png?w=200', 'why': 'private images are not published'}",
        "[('resize', None, 'completed'), ('delivery', None, 'completed'), ('publish', 'try', 'failed'), "
        "('archive', 'catch', 'completed')]",
    ]
    done = names["done"]
    tasks = {t.context["step_id"]: t for t in client.list_tasks(instance_id=done.id).tasks}  # type: ignore[attr-defined]
    assert sorted(tasks) == ["archive", "publish", "resize"]
    # Whole-string templates keep the value's JSON type (P-WF-12).
    assert tasks["resize"].params.to_dict() == {"image": "cat.png", "width": 200}
    assert tasks["publish"].params["private"] is True
    assert not names["runner"].is_alive()  # type: ignore[attr-defined]


def test_p_sdk_25_failed_instance_is_returned_as_final_not_raised(
    server, client: Orch8Client, run_worker
) -> None:
    worker = Worker(base_url=server.url, handle_signals=False, wait_ms=1000)

    @worker.handler("check")
    def check(ctx: TaskContext) -> dict:
        raise PermanentError("image too small", code="too_small")

    @worker.handler("never")
    def never(ctx: TaskContext) -> dict:
        raise AssertionError("a step after a failed one must not start")

    client.define_sequence(
        "strict",
        steps=[{"id": "check", "handler": "check"}, {"id": "after", "handler": "never"}],
    )
    instance = client.start_instance("strict", input={"image": "tiny.png"})
    rw = run_worker(worker)
    done = client.wait_instance(instance.id, timeout_ms=30_000)
    rw.stop_and_join()
    assert done.status == "failed" and done.error.message == "image too small"
    assert [(s.id, s.status) for s in done.steps] == [("check", "failed"), ("after", "pending")]
    step_task = client.wait_task(done.steps[0].task_id, timeout_ms=0)  # final: no wait
    assert step_task.status == "failed"


def test_p_sdk_25_wait_times_out_with_the_last_state(server, client: Orch8Client) -> None:
    client.define_sequence("idle", steps=[{"id": "only", "handler": "nobody_runs_this"}])
    instance = client.start_instance("idle")
    with pytest.raises(WaitTimeoutError) as info:
        client.wait_instance(instance.id, timeout_ms=300)
    assert info.value.last_state.status == "running" and info.value.last_state.id == instance.id
