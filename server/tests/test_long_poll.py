"""Long-poll edge cases: a caller that goes away must not leave a ghost claim behind."""

from __future__ import annotations

import httpx
from conftest import enqueue, eventually


def _waiting(api: httpx.Client) -> float:
    for line in api.get("/metrics").text.splitlines():
        if line.startswith("orch8_polls_waiting "):
            return float(line.split()[1])
    raise AssertionError("orch8_polls_waiting missing")


def test_abandoned_long_poll_claims_nothing(api: httpx.Client, server, name: str) -> None:
    """P-POLL-7: a worker that aborts its long-poll (shutdown, quiet) is handed nothing."""
    with httpx.Client(base_url=server.url, timeout=0.5) as impatient:
        try:
            impatient.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 8000})
        except httpx.ReadTimeout:
            pass  # the client gave up and closed the connection
        else:
            raise AssertionError("the poll should still have been waiting")
    eventually(lambda: _waiting(api) == 0, timeout=5)
    task = enqueue(api, name)
    assert api.get(f"/tasks/{task['id']}").json()["status"] == "pending"
    claimed = api.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 0})
    assert claimed.status_code == 200 and claimed.json()["id"] == task["id"]
