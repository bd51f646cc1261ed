"""`--port 0` announces the bound address on stdout; the shared launcher reads it."""

from __future__ import annotations

import json

import httpx
import pytest

from orch8_server.cli import listening_line
from orch8_server.testing import LISTENING_LINE, ServerStartError, start_server


def test_listening_line_is_the_only_stdout_and_is_logged() -> None:
    with start_server() as server:
        assert server.port > 0 and server.url == f"http://127.0.0.1:{server.port}"
        assert httpx.get(server.url + "/health/ready").status_code == 200
        server.stop()
        assert server.stdout_lines == []  # nothing but the one line on stdout
        logged = [json.loads(line) for line in server.log.read_text().splitlines()]
        assert any(
            e["msg"] == f"orch8-server listening on {server.url}" and e["port"] == server.port
            for e in logged
        )


def test_line_format_matches_what_launchers_parse() -> None:
    assert LISTENING_LINE.match(listening_line("127.0.0.1", 8080))[1] == "http://127.0.0.1:8080"
    assert listening_line("::1", 8080) == "orch8-server listening on http://[::1]:8080"


def test_restart_keeps_database_and_url() -> None:
    with start_server() as server:
        task = httpx.post(server.url + "/tasks", json={"handler_name": "h"}).json()
        url = server.url
        server.kill()
        assert not server.running
        server.restart()
        assert server.url == url
        assert httpx.get(f"{url}/tasks/{task['id']}").json()["status"] == "pending"


def test_early_exit_raises_with_the_servers_stderr() -> None:
    with pytest.raises(ServerStartError, match="lease_ms must be positive"):
        start_server("--lease-ms", "-1")


def test_deprecated_flags_still_work_and_warn_once() -> None:
    with start_server("--worker-heartbeat-ms", "700", "--worker-dead-after-ms", "9000") as server:
        defaults = httpx.get(server.url + "/info").json()["defaults"]
        assert defaults["heartbeat_interval_ms"] == 700 and defaults["dead_after_ms"] == 9000
        server.stop()
        warnings = [
            e["msg"]
            for e in map(json.loads, server.log.read_text().splitlines())
            if e["level"] == "warning"
        ]
    assert warnings == [
        "--worker-heartbeat-ms is deprecated and will be removed; "
        "use --heartbeat-interval-ms / ORCH8_HEARTBEAT_INTERVAL_MS",
        "--worker-dead-after-ms is deprecated and will be removed; "
        "use --dead-after-ms / ORCH8_DEAD_AFTER_MS",
    ]


def test_deprecated_env_is_accepted_and_the_new_name_wins() -> None:
    env = {"ORCH8_WORKER_HEARTBEAT_MS": "700", "ORCH8_HEARTBEAT_INTERVAL_MS": "800"}
    with start_server(env=env) as server:
        assert httpx.get(server.url + "/info").json()["defaults"]["heartbeat_interval_ms"] == 800
        server.stop()
        assert "ORCH8_WORKER_HEARTBEAT_MS is deprecated" in server.log.read_text()
