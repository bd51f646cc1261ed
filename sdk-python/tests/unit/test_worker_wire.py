"""The worker reads poll answers as plain JSON (orch8/worker/_wire.py): handlers receive
the same TaskContext values the generated models would give (P-SDK-10)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from dateutil.parser import isoparse

from orch8.models import ClaimedTask
from orch8.worker._wire import timestamp

from .fake_server import FakeServer, Running, wait_until


@pytest.mark.parametrize(
    "value",
    [
        "2026-11-24T07:25:15.319Z",  # what the server writes
        "2026-11-24T07:25:15Z",
        "2026-11-24T07:25:15.319123Z",
        "2026-11-24T07:25:15.3Z",  # fromisoformat refuses it before Python 3.11: isoparse
        "2026-11-24T07:25:15.319+01:00",
        "2026-11-24T07:25:15.319-00:00",
    ],
)
def test_timestamps_equal_the_generated_models_isoparse_zone_included(value: str) -> None:
    got, want = timestamp(value), isoparse(value)
    assert (got, got.utcoffset(), repr(got.tzinfo)) == (want, want.utcoffset(), repr(want.tzinfo))


def test_handlers_receive_what_the_generated_model_gives() -> None:
    """P-SDK-10: id, names, params, context, headers, attempts, lease and checkpoint."""
    server = FakeServer()
    over: dict[str, Any] = {
        "params": {
            "image_url": "https://example.com/cat.png",
            "sizes": [1, 2],
            "deep": {"a": None},
        },
        "context": {"step_id": "resize"},
        "headers": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
        "attempt": 2,
        "max_attempts": 5,
        "checkpoint": {"page": 3},
    }
    server.add("t1", **over)
    sent = dict(server.pending[0], lease=dict(server.pending[0]["lease"]))
    seen: list[Any] = []
    worker = server.worker(concurrency=1)
    worker.register("process_image", lambda ctx: seen.append(ctx) or "ok")
    run = Running(worker)
    try:
        wait_until(lambda: worker.stats().tasks_completed == 1)
    finally:
        run.stop()
    ctx, model = seen[0], ClaimedTask.from_dict(sent)
    assert (ctx.id, ctx.handler_name, ctx.queue_name) == (
        model.id,
        model.handler_name,
        model.queue_name,
    )
    assert (ctx.params, ctx.context) == (model.params.to_dict(), model.context.to_dict())
    assert ctx.headers == model.headers.to_dict()
    assert (ctx.attempt, ctx.max_attempts) == (model.attempt, model.max_attempts)
    assert ctx.lease_id == model.lease.id
    assert ctx.lease_expires_at == model.lease.expires_at
    assert repr(ctx.lease_expires_at.tzinfo) == repr(model.lease.expires_at.tzinfo)
    assert isinstance(ctx.lease_expires_at, datetime.datetime)
    assert ctx.checkpoint == model.checkpoint.to_dict() == {"page": 3}


@pytest.mark.parametrize(
    "base_url",
    [
        "http://127.0.0.1:3001",
        "http://h:8080/",
        "http://h/prefix",
        "http://h/a/b/",
        "https://h/x%20y",
    ],
)
def test_the_worker_calls_absolute_url_is_the_one_httpx_would_join(base_url: str) -> None:
    """The worker's poll and complete paths are joined once (`_absolute`), exactly as httpx
    joins a relative URL on every request, base path prefixes included."""
    from orch8 import AsyncOrch8Client

    client = AsyncOrch8Client(base_url)
    for path in ("/workers/tasks/poll/batch", "/workers/tasks/complete/batch"):
        joined = client._absolute(path)
        assert joined == client._http.build_request("POST", path).url
        assert client._absolute(path) is joined  # parsed once
