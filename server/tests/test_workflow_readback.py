"""P-WF-1: a sequence read back is accepted as written (in-process, SQLite).

NewSequence takes no `on_error: null`; a sequence without on_error omits the member when
read once the contract's Sequence stops requiring it. Until openapi.yaml says so, the
server answers null (what the contract requires) and test_workflows.py's read-back test is
an expected failure; this one turns the omission on to show the server's side of it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from orch8_server.config import Settings
from orch8_server.http import routes_workflows
from orch8_server.http.app import create_app

SERVER_FIELDS = ("tenant", "version", "created_at")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(db=str(tmp_path / "orch8.db")))) as c:
        yield c


def test_a_sequence_without_on_error_reads_back_as_written_P_WF_1(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routes_workflows, "_OMIT_ABSENT_ON_ERROR", True)
    defined = client.post("/sequences", json={"name": "s", "steps": [{"id": "a", "handler": "h"}]})
    assert defined.status_code == 201 and "on_error" not in defined.json(), defined.text
    for read in (
        client.get("/sequences/s").json(),
        client.get("/sequences").json()["sequences"][0],
    ):
        assert "on_error" not in read, read
        again = client.post("/sequences", json={k: v for k, v in read.items()
                                                 if k not in SERVER_FIELDS})  # fmt: skip
        assert again.status_code == 200, again.text  # the same definition, no new version
        assert again.json() == defined.json()
    with_handler = {"name": "t", "steps": [{"id": "a", "handler": "h"}],
                    "on_error": {"handler": "cleanup"}}  # fmt: skip
    assert client.post("/sequences", json=with_handler).status_code == 201
    assert client.get("/sequences/t").json()["on_error"] == {"handler": "cleanup"}
