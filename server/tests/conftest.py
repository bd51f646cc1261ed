"""Fixtures: real orch8-server processes on loopback, each on its own database.

Every test that uses `server` / `start_server` runs once per backend: `sqlite` (a file per
server) and `postgresql` (a database per server in one throwaway cluster per session,
see pg_cluster.py). Modules in SQLITE_ONLY run on SQLite alone.
"""

from __future__ import annotations

import itertools
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pg_cluster import PgCluster

REPO = Path(__file__).resolve().parents[2]
BACKENDS = ("sqlite", "postgresql")
# Schemathesis explores the HTTP contract, which does not depend on the backend.
SQLITE_ONLY = {"test_contract"}

# Short timings so lease expiry, reaping and dead workers happen within a test.
FAST = {
    "reaper-interval-ms": 50,
    "worker-heartbeat-ms": 200,
    "worker-dead-after-ms": 1500,
    "max-wait-ms": 10000,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


class ServerProcess:
    """One orch8-server subprocess; restartable on the same database."""

    def __init__(self, db: str | Path, log: Path, **flags: Any) -> None:
        self.db = db
        self.flags = flags
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.log = log

    def start(self) -> ServerProcess:
        args = [
            sys.executable,
            "-m",
            "orch8_server",
            "--db",
            str(self.db),
            "--port",
            str(self.port),
        ]
        for key, value in self.flags.items():
            if isinstance(value, list):
                for v in value:
                    args += [f"--{key}", str(v)]
            else:
                args += [f"--{key}", str(value)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("ORCH8_")}
        self.proc = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=self.log.open("ab"), env=env
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(self.url + "/health/ready", timeout=0.5).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.02)
        raise RuntimeError("server did not become ready")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=15)
        self.proc = None

    def kill(self) -> None:
        self.stop(signal.SIGKILL)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        module = metafunc.module.__name__.rpartition(".")[2]
        backends = ("sqlite",) if module in SQLITE_ONLY else BACKENDS
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
def start_server(
    backend: str,
    tmp_path_factory: pytest.TempPathFactory,
    new_database: Callable[[], str],
) -> Iterator[Callable[..., ServerProcess]]:
    started: list[ServerProcess] = []
    counter = itertools.count()

    def start(**flags: Any) -> ServerProcess:
        folder = tmp_path_factory.mktemp("srv")
        n = next(counter)
        db: str | Path = folder / f"orch8-{n}.db" if backend == "sqlite" else new_database()
        server = ServerProcess(db, folder / f"orch8-{n}.log", **{**FAST, **flags}).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def server(start_server: Callable[..., ServerProcess]) -> ServerProcess:
    return start_server()


@pytest.fixture
def api(server: ServerProcess) -> Iterator[httpx.Client]:
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
