"""Fixtures: real orch8-server processes on loopback, each on its own database.

Every test that uses `server` / `start_server` runs once per backend: `sqlite` (a file per
server) and `postgresql` (a database per server in one throwaway cluster per session,
see pg_cluster.py). Modules in SQLITE_ONLY run on SQLite alone.
"""

from __future__ import annotations

import itertools
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pg_cluster import PgCluster
from problem_codes import (  # noqa: F401  (pytest hooks: the emitted-code check)
    pytest_sessionfinish,
    pytest_sessionstart,
    pytest_terminal_summary,
    record_server,
)

from orch8_server.keys import digest
from orch8_server.testing import RunningServer
from orch8_server.testing import start_server as start_server_process

REPO = Path(__file__).resolve().parents[2]
BACKENDS = ("sqlite", "postgresql")
# Schemathesis explores the HTTP contract, which does not depend on the backend.
SQLITE_ONLY = {"test_contract", "test_auth_server", "test_clock"}  # auth does not depend on it
# either; the test clock is refused with PostgreSQL (P-CLOCK-5)

# Short timings so lease expiry, reaping and dead workers happen within a test.
FAST = {
    "reaper-interval-ms": 50,
    "heartbeat-interval-ms": 200,
    "dead-after-ms": 1500,
    "max-wait-ms": 10000,
}


def eventually(check: Callable[[], Any], timeout: float = 5.0, interval: float = 0.02) -> Any:
    """Poll `check` until it returns a truthy value or the deadline passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s (last value: {value!r})")
        time.sleep(interval)


def flag_args(flags: dict[str, Any]) -> list[str]:
    """{"max-wait-ms": 20, "api-key": ["a", "b"], "access-log": True} -> ["--max-wait-ms",
    "20", "--api-key", ..., "--access-log"] (True is a bare switch)."""
    args: list[str] = []
    for key, value in flags.items():
        for v in value if isinstance(value, list) else [value]:
            args += [f"--{key}"] if v is True else [f"--{key}", str(v)]
    return args


def launch(db: str | Path, log: Path, **flags: Any) -> RunningServer:
    """An orch8-server on `db` with the FAST timings (overridable), stderr to `log`."""
    return start_server_process(*flag_args({**FAST, **flags}), db=db, log=log)


def stop_server(server: RunningServer) -> None:
    """Stop `server` after folding its emitted problem codes into the session's check."""
    record_server(server)
    server.stop()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        module = metafunc.module.__name__.rpartition(".")[2]
        backends = ("sqlite",) if module in SQLITE_ONLY else BACKENDS
        only = metafunc.definition.get_closest_marker("backends")
        if only is not None:  # e.g. replicas sharing one database exist on PostgreSQL only
            backends = tuple(b for b in backends if b in only.args)
        metafunc.parametrize("backend", backends, scope="session")


@pytest.fixture(scope="session")
def pg() -> Iterator[PgCluster]:
    """One throwaway PostgreSQL cluster per test session (started on first use)."""
    cluster = PgCluster().init()
    yield cluster
    cluster.destroy()


@pytest.fixture(scope="session")
def new_database(request: pytest.FixtureRequest) -> Callable[[], str]:
    """CREATE DATABASE in the session cluster; returns its URL."""
    counter = itertools.count()

    def create() -> str:
        cluster: PgCluster = request.getfixturevalue("pg")
        return cluster.create_database(f"orch8_{os.getpid()}_{next(counter)}")

    return create


@pytest.fixture(scope="session")
def launch_on_backend(
    backend: str,
    tmp_path_factory: pytest.TempPathFactory,
    new_database: Callable[[], str],
) -> Callable[..., RunningServer]:
    """launch(**flags) on a new SQLite file or PostgreSQL database; the caller stops it."""
    counter = itertools.count()

    def start(**flags: Any) -> RunningServer:
        folder = tmp_path_factory.mktemp("srv")
        n = next(counter)
        db: str | Path = folder / f"orch8-{n}.db" if backend == "sqlite" else new_database()
        return launch(db, folder / f"orch8-{n}.log", **flags)

    return start


@pytest.fixture(scope="module")
def start_server(
    launch_on_backend: Callable[..., RunningServer],
) -> Iterator[Callable[..., RunningServer]]:
    """start(**flags): a server stopped when its test module is done. Not per session: an
    idle server's FAST reaper costs ~2% of a core on SQLite and ~11% on PostgreSQL (server
    plus backend), and a session starts about fifty of them."""
    started: list[RunningServer] = []

    def start(**flags: Any) -> RunningServer:
        server = launch_on_backend(**flags)
        started.append(server)
        return server

    yield start
    for server in started:
        stop_server(server)


@pytest.fixture(scope="session")
def server(launch_on_backend: Callable[..., RunningServer]) -> Iterator[RunningServer]:
    """The server most modules share (one per backend), with the FAST timings."""
    shared = launch_on_backend()
    yield shared
    stop_server(shared)


@pytest.fixture
def api(server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=20) as client:
        yield client


@pytest.fixture
def name() -> str:
    """A handler/queue name unique to the test, so tests sharing a server never collide."""
    return "h_" + uuid.uuid4().hex[:12]


def enqueue(api: httpx.Client, handler: str, **fields: Any) -> dict:
    response = api.post("/tasks", json={"handler_name": handler, **fields})
    assert response.status_code == 201, response.text
    return response.json()


def claim(api: httpx.Client, handler: str, **fields: Any) -> dict:
    response = api.post(
        "/workers/tasks/poll", json={"handler_names": [handler], "wait_ms": 0, **fields}
    )
    assert response.status_code == 200, response.text
    return response.json()


def assert_problem(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["code"] == code and body["status"] == status, body
    assert body["title"] and body["detail"] and body["type"].endswith(code)
    return body


def key_entry(key_id: str, secret: str, role: str, **extra: Any) -> str:
    """One `[[key]]` table of a keys file (P-AUTH-4): the secret's SHA-256, never the secret;
    `extra` adds fields such as tenant="t1" or queues=["images"]."""
    lines = [f'[[key]]\nid = "{key_id}"\nsha256 = "{digest(secret).hex()}"\nrole = "{role}"']
    lines += [f"{name} = {json.dumps(value)}" for name, value in extra.items()]
    return "\n".join(lines) + "\n\n"
