"""P-WF-14 against the real server: `start_instances` starts a batch in request order, all or
none; idempotency keys replay per item; an unknown sequence rejects the whole batch (404)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from orch8 import AsyncOrch8Client, NotFoundError, Orch8Client, RetryPolicy

from .conftest import Server


def test_p_wf_14_start_instances_in_order_replayed_by_key_all_or_none(
    server: Server, client: Orch8Client
) -> None:
    client.define_sequence("remind", steps=[{"id": "send", "handler": "send_reminder"}])

    started = client.start_instances(
        [{"sequence": "remind", "input": {"user": u}} for u in ("ada", "grace", "linus")]
    ).instances
    assert [i.input_["user"] for i in started] == ["ada", "grace", "linus"]  # request order
    assert len({i.id for i in started}) == 3
    for inst in started:  # each first step dispatched in the start's transaction (P-WF-4)
        assert inst.sequence == "remind" and inst.status == "running"
        assert [(s.id, s.status) for s in inst.steps] == [("send", "running")]
        assert inst.steps[0].task_id

    keyed = [
        {"sequence": "remind", "input": {"user": u}, "idempotency_key": f"remind-{u}"}
        for u in ("ada", "grace")
    ]
    first = client.start_instances(keyed).instances
    again = client.start_instances(keyed).instances  # the replay starts nothing new
    assert [i.id for i in again] == [i.id for i in first]
    assert not {i.id for i in first} & {i.id for i in started}
    assert [i.idempotency_key for i in again] == ["remind-ada", "remind-grace"]
    assert len(client.list_instances(sequence="remind").instances) == 5

    with pytest.raises(NotFoundError) as info:  # one unknown sequence rejects the batch
        client.start_instances(
            [
                {"sequence": "remind", "input": {"user": "margaret"}, "idempotency_key": "m"},
                {"sequence": "no-such-sequence"},
            ]
        )
    assert (info.value.status, info.value.code) == (404, "not_found")
    assert "instances/1" in info.value.detail  # names the item
    assert len(client.list_instances(sequence="remind").instances) == 5  # nothing stored
    # Its valid item's key was not stored either: starting it now makes a new instance.
    fresh = client.start_instance("remind", input={"user": "margaret"}, idempotency_key="m")
    assert fresh.input_["user"] == "margaret"
    assert fresh.id not in {i.id for i in started + first}


def test_p_wf_14_async_start_instances(server: Server) -> None:
    async def main() -> tuple[list[str], list[str], NotFoundError]:
        retry = RetryPolicy(base_delay_ms=50, max_delay_ms=200)
        async with AsyncOrch8Client(server.url, retry=retry) as client:
            await client.define_sequence("remind", steps=[{"id": "send", "handler": "send"}])
            items = [{"sequence": "remind", "idempotency_key": k} for k in ("a", "b")]
            first = (await client.start_instances(items)).instances
            again = (await client.start_instances(items)).instances
            with pytest.raises(NotFoundError) as info:
                await client.start_instances([{"sequence": "remind"}, {"sequence": "nope"}])
            return [i.id for i in first], [i.id for i in again], info.value

    first, again, error = asyncio.run(main())
    assert len(set(first)) == 2 and again == first
    assert (error.status, error.code) == (404, "not_found")


def test_p_wf_14_readme_start_instances_fragment_runs(
    server: Server, client: Orch8Client, capsys
) -> None:
    """The README's `start_instances` fragment, as written, with the `reminder` sequence of the
    README's workflow tests (its first step a one-hour sleep)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    blocks = [
        b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if ".start_instances(" in b
    ]
    assert len(blocks) == 1, "README.md has one start_instances example"
    client.define_sequence(
        "reminder",
        steps=[
            {"id": "wait", "handler": "sleep", "params": {"duration_ms": 3_600_000}},
            {"id": "remind", "handler": "remind", "params": {"user": {"$from": "input.user"}}},
        ],
    )
    names: dict[str, object] = {"client": client}
    exec(blocks[0], names)
    assert capsys.readouterr().out == "['running', 'running', 'running']\n"
    batch = names["batch"].instances  # type: ignore[attr-defined]
    assert [i.input_["user"] for i in batch] == names["users"] == ["ada", "grace", "linus"]
