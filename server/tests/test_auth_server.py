"""Keys on a real server process: SIGHUP reload, worker scopes, /whoami, and logs that
never show a key (P-AUTH-1..5)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import assert_problem, eventually, key_entry

from orch8_server.keys import digest
from orch8_server.testing import RunningServer, ServerStartError

FIRST, SECOND = "o8k_first_key_of_the_reload_test", "o8k_second_key_of_the_reload"
SCOPED = "o8k_scoped_worker_images_resize"
PRODUCER = "o8k_producer_of_team_a_secret"


def bearer(secret: str, **headers: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}", **headers}


def whoami(server: RunningServer, secret: str) -> httpx.Response:
    return httpx.get(server.url + "/whoami", headers=bearer(secret))


def test_sighup_reloads_the_keys_file_and_a_broken_file_keeps_the_old_keys(
    start_server, tmp_path: Path
) -> None:
    """P-AUTH-4: SIGHUP re-reads the file; one that does not load leaves the keys in force
    and the log names the file and the entry, never a secret."""
    path = tmp_path / "keys.toml"
    path.write_text(key_entry("first", FIRST, "operator"))
    server = start_server(**{"keys-file": path})
    assert whoami(server, FIRST).json()["key_id"] == "first"
    assert whoami(server, SECOND).status_code == 401

    path.write_text(key_entry("second", SECOND, "producer", tenant="team-b"))
    assert server.process is not None
    server.process.send_signal(signal.SIGHUP)
    eventually(lambda: whoami(server, SECOND).status_code == 200)
    body = whoami(server, SECOND).json()
    assert (body["key_id"], body["role"], body["tenant"]) == ("second", "producer", "team-b")
    assert whoami(server, FIRST).status_code == 401  # removed from the file: gone

    path.write_text(key_entry("third", FIRST, "nobody"))
    server.process.send_signal(signal.SIGHUP)
    eventually(lambda: "keys file not reloaded" in server.log.read_text())
    assert whoami(server, SECOND).status_code == 200
    assert whoami(server, FIRST).status_code == 401
    log = server.log.read_text()
    assert f"{path}: key #1 (id 'third'): role must be one of" in log
    for secret in (FIRST, SECOND):
        assert secret not in log and digest(secret).hex() not in log


def test_a_keys_file_that_does_not_load_stops_the_start_up(start_server, tmp_path: Path) -> None:
    """P-AUTH-4: the server refuses to start on a broken keys file, naming it."""
    path = tmp_path / "keys.toml"
    path.write_text(
        key_entry("k", FIRST, "worker", queues=["q"]) + key_entry("k", SECOND, "worker")
    )
    with pytest.raises(ServerStartError, match=r"key #2 \(id 'k'\): duplicate id"):
        start_server(**{"keys-file": path})


@pytest.fixture(scope="module")
def scoped(start_server, tmp_path_factory: pytest.TempPathFactory) -> RunningServer:
    path = tmp_path_factory.mktemp("keys") / "keys.toml"
    path.write_text(
        key_entry(
            "img-worker", SCOPED, "worker", tenant="team-a", queues=["images"], handlers=["resize"]
        )
        + key_entry("team-a-producer", PRODUCER, "producer", tenant="team-a")
    )
    return start_server(**{"keys-file": path, "access-log": True, "log-level": "debug"})


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/workers/tasks/poll", {"queue_name": "images"}),  # no handler_names: any handler
        ("/workers/tasks/poll", {"handler_names": ["resize"]}),  # queue `default`
        ("/workers/tasks/poll", {"queue_name": "images", "handler_names": ["resize", "crop"]}),
        (
            "/workers/tasks/poll/batch",
            {"queue_names": ["images", "video"], "handler_names": ["resize"]},
        ),
        ("/workers/tasks/poll/batch", {"handler_names": []}),
        ("/workers", {"worker_id": "w1", "queues": ["video"]}),
        ("/workers", {"worker_id": "w1", "queues": ["images"], "handlers": ["crop"]}),
    ],
)
def test_worker_scope_outside_is_forbidden(
    scoped: RunningServer, path: str, body: dict[str, Any]
) -> None:
    """P-AUTH-3: a worker key limited to queues / handlers polls and registers only those."""
    r = httpx.post(scoped.url + path, json={"wait_ms": 0, **body} if "poll" in path else body,
                   headers=bearer(SCOPED))  # fmt: skip
    problem = assert_problem(r, 403, "forbidden")
    assert "img-worker" in problem["detail"] and SCOPED not in r.text


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/workers/tasks/poll", {"queue_name": "images", "handler_names": ["resize"]}, 204),
        (
            "/workers/tasks/poll/batch",
            {"queue_names": ["images"], "handler_names": ["resize"]},
            200,
        ),
        ("/workers", {"worker_id": "w2", "queues": ["images"], "handlers": ["resize"]}, 201),
        ("/workers", {"worker_id": "w3"}, 201),
    ],
)
def test_worker_scope_inside_passes(
    scoped: RunningServer, path: str, body: dict[str, Any], status: int
) -> None:
    """P-AUTH-3: within its scope a worker key works as usual."""
    r = httpx.post(scoped.url + path, json={"wait_ms": 0, **body} if "poll" in path else body,
                   headers=bearer(SCOPED))  # fmt: skip
    assert r.status_code in (status, 200), r.text


def test_a_scoped_worker_claims_its_task(scoped: RunningServer) -> None:
    """P-AUTH-3, P-TEN-2: a producer's task of team-a reaches team-a's scoped worker."""
    r = httpx.post(
        scoped.url + "/tasks",
        json={"handler_name": "resize", "queue_name": "images"},
        headers=bearer(PRODUCER),
    )
    assert r.status_code == 201, r.text
    claimed = httpx.post(
        scoped.url + "/workers/tasks/poll",
        json={"queue_name": "images", "handler_names": ["resize"], "wait_ms": 0},
        headers=bearer(SCOPED),
    )
    assert claimed.status_code == 200 and claimed.json()["id"] == r.json()["id"], claimed.text


def test_whoami_of_a_scoped_key_entry(scoped: RunningServer) -> None:
    """P-AUTH-5: id, role, tenant and scope; never the key."""
    r = httpx.get(scoped.url + "/whoami", headers=bearer(SCOPED))
    assert r.json() == {
        "auth_required": True,
        "key_id": "img-worker",
        "role": "worker",
        "tenant": "team-a",
        "tenants": [],
        "queues": ["images"],
        "handlers": ["resize"],
    }


def test_logs_never_show_a_key_or_its_digest(scoped: RunningServer) -> None:
    """P-AUTH-4: with the access log on and debug logging, no secret, digest or
    Authorization header reaches a log line or a problem body."""
    wrong = "o8k_a_wrong_key_someone_tried"
    answers = [
        httpx.get(scoped.url + "/whoami", headers=bearer(SCOPED)),
        httpx.get(scoped.url + "/tasks", headers=bearer(SCOPED)),  # 403 role
        httpx.get(scoped.url + "/tasks", headers=bearer(wrong)),  # 401
        httpx.get(scoped.url + "/whoami", headers=bearer(PRODUCER, **{"X-Tenant-Id": "x y"})),
        httpx.get(scoped.url + "/tasks/task_nope", headers=bearer(PRODUCER)),
        httpx.get(scoped.url + "/tasks?secret=" + wrong[:3], headers=bearer(PRODUCER)),
    ]
    assert [a.status_code for a in answers[:4]] == [200, 403, 401, 403]
    eventually(lambda: "/tasks/task_nope" in scoped.log.read_text())  # access log written
    log = scoped.log.read_text()
    bodies = "".join(a.text for a in answers)
    for secret in (SCOPED, PRODUCER, wrong):
        for text in (log, bodies):
            assert secret not in text and digest(secret).hex() not in text
    assert "Bearer" not in log and "authorization" not in log.lower()


def test_without_keys_whoami_is_an_open_admin(server: RunningServer) -> None:
    """P-AUTH-5: a server without keys answers auth_required false, role admin, and the
    tenant X-Tenant-Id selects (P-TEN-2)."""
    r = httpx.get(server.url + "/whoami", headers={"X-Tenant-Id": "anyone"})
    assert r.json() == {
        "auth_required": False,
        "key_id": None,
        "role": "admin",
        "tenant": "anyone",
        "tenants": None,
        "queues": None,
        "handlers": None,
    }


def test_env_keys_are_admin_keys_named_env(start_server) -> None:
    """P-AUTH-4: --api-key / ORCH8_API_KEYS keys are admin keys with id `env`."""
    server = start_server(**{"api-key": FIRST})
    body = httpx.get(server.url + "/whoami", headers=bearer(FIRST, **{"X-Tenant-Id": "t"})).json()
    assert (body["key_id"], body["role"], body["tenant"], body["tenants"]) == (
        "env",
        "admin",
        "t",
        None,
    )
    assert_problem(httpx.get(server.url + "/whoami"), 401, "unauthorized")
