"""`orch8 worker module:attr` as a process: SIGTERM, SIGINT, SIGTSTP and SIGCONT (P-SDK-7/8)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orch8 import Orch8Client

from .conftest import wait_until

SDK_DIR = Path(__file__).resolve().parents[2]
ORCH8 = Path(sys.executable).parent / "orch8"


@pytest.fixture
def cli_worker(server, tmp_path):
    procs: list[subprocess.Popen[bytes]] = []

    def start(worker_id: str) -> subprocess.Popen[bytes]:
        env = {**os.environ, "ORCH8_URL": server.url, "APP_WORKER_ID": worker_id}
        log = open(tmp_path / f"{worker_id}.log", "wb")  # noqa: SIM115 - closed with the test
        proc = subprocess.Popen(
            [str(ORCH8), "worker", "tests.integration.app_worker:worker"],
            cwd=SDK_DIR,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _registered(client: Orch8Client, worker_id: str) -> bool:
    return any(w.worker_id == worker_id for w in client.list_workers().workers)


def test_sigterm_lets_the_in_flight_task_finish(
    client: Orch8Client, cli_worker, tmp_path: Path
) -> None:
    proc = cli_worker("cli-term")
    wait_until(lambda: _registered(client, "cli-term"), 15, "the CLI worker to register")
    task = client.enqueue("sleepy", params={"seconds": 1})
    # The handler's own line, not the server's `running`: a task claimed but not started
    # yet when SIGTERM arrives is released (P-SDK-7), which a loaded machine made happen.
    started = f"handler started {task.id}".encode()
    wait_until(lambda: started in (tmp_path / "cli-term.log").read_bytes(), 10, "the handler")
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0
    assert time.monotonic() - t0 < 5
    done = client.get_task(task.id)
    assert done.status == "completed" and done.output == "slept"


def test_sigtstp_quiets_and_sigcont_resumes(client: Orch8Client, cli_worker) -> None:
    proc = cli_worker("cli-quiet")
    wait_until(lambda: _registered(client, "cli-quiet"), 15, "the CLI worker to register")
    proc.send_signal(signal.SIGTSTP)
    wait_until(lambda: client.get_worker("cli-quiet").state == "quiet", 10, "state quiet")
    task = client.enqueue("echo", params={"a": 1})
    beat = client.get_worker("cli-quiet").last_heartbeat_at
    wait_until(lambda: client.get_worker("cli-quiet").last_heartbeat_at > beat, 10)
    beat = client.get_worker("cli-quiet").last_heartbeat_at
    wait_until(lambda: client.get_worker("cli-quiet").last_heartbeat_at > beat, 10)
    assert client.get_task(task.id).status == "pending"
    proc.send_signal(signal.SIGCONT)
    done = wait_until(lambda: (t := client.get_task(task.id)).status == "completed" and t, 10)
    assert done.output == {"echo": {"a": 1}}
    proc.send_signal(signal.SIGINT)
    assert proc.wait(10) == 0


def test_second_sigint_ends_the_grace_period_with_a_deaf_handler(
    client: Orch8Client, cli_worker, tmp_path: Path
) -> None:
    """P-SDK-17: issue 13 measured 58 s after Ctrl-C; a second Ctrl-C now ends it at once."""
    proc = cli_worker("cli-deaf")
    wait_until(lambda: _registered(client, "cli-deaf"), 15, "the CLI worker to register")
    task = client.enqueue("deaf", params={"seconds": 60})
    started = f"handler started {task.id}".encode()
    wait_until(lambda: started in (tmp_path / "cli-deaf.log").read_bytes(), 10, "the handler")
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    # The worker's own log, not its heartbeat: the server hears `terminating` only at the next
    # heartbeat, which a loaded machine can push past the 10 s grace period.
    log = tmp_path / "cli-deaf.log"
    wait_until(lambda: b"worker stopping" in log.read_bytes(), 10, "the first SIGINT logged")
    proc.send_signal(signal.SIGINT)
    assert proc.wait(15) == 0
    assert time.monotonic() - t0 < 8  # grace period is 10 s: the second signal ended it
    done = client.get_task(task.id)
    assert done.error is not None and done.error.code == "shutdown"
    assert not _registered(client, "cli-deaf") or client.get_worker("cli-deaf").state == "dead"
