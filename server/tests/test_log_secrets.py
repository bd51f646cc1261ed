"""Nothing secret in the logs (P-AUTH-8): a keyed server with `--access-log --log-level
debug` serves a varied set of requests, some carrying keys in the places the server must
not read them from (`?api_key=`, `?token=`, `X-Api-Key`); then every line it wrote, on
stdout and stderr, is searched for each key and each key's digest."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import httpx
import orjson
import pytest
from conftest import eventually, key_entry

from orch8_server.keys import digest
from orch8_server.logs import SECRET_PARAMS, redact
from orch8_server.testing import RunningServer

pytestmark = pytest.mark.backends("sqlite")  # logging does not depend on the backend

ADMIN = "o8k_admin_secret_never_logged_1"
WORKER = "o8k_worker_secret_never_logged_2"
PRODUCER = "o8k_producer_secret_never_logged_3"
WRONG = "o8k_wrong_secret_never_logged_4"  # in no keys file: a 401, and still a secret
STRAY = "stray-query-secret-5"  # only ever sent in a URL
SECRETS = (ADMIN, WORKER, PRODUCER, WRONG, STRAY)


def keys_file(path: Path) -> Path:
    entries = [("admin", ADMIN, "admin"), ("worker", WORKER, "worker")]
    entries.append(("producer", PRODUCER, "producer"))
    path.write_text("".join(key_entry(key_id, secret, role) for key_id, secret, role in entries))
    return path


def forms(secret: str) -> list[str]:
    """The secret and every form of its digest a log line could carry."""
    raw = digest(secret)
    found = [secret, raw.hex(), raw.hex().upper(), repr(raw), orjson.dumps(repr(raw)).decode()]
    found.append(hashlib.sha256(secret.encode()).hexdigest())
    return found


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def exercise(url: str) -> int:
    """Requests of every kind; returns how many were sent (each is one access-log line)."""
    sent = 0

    def call(method: str, path: str, expect: int, **kwargs: object) -> httpx.Response:
        nonlocal sent
        response = httpx.request(method, url + path, timeout=20, **kwargs)  # type: ignore[arg-type]
        sent += 1
        assert response.status_code == expect, (method, path, response.text)
        return response

    call("GET", "/whoami", 200, headers=bearer(ADMIN))
    call("GET", "/whoami", 401, headers=bearer(WRONG))
    call("GET", "/whoami", 401)
    # Keys where the server never reads them: the query and another header (P-AUTH-8).
    call("GET", f"/whoami?api_key={ADMIN}", 401)
    call("GET", f"/whoami?token={ADMIN}&x=1", 401)
    call("GET", "/whoami", 401, headers={"X-Api-Key": ADMIN})
    for name in sorted(SECRET_PARAMS):  # each name, in upper case, beside a valid header
        call("GET", f"/whoami?{name.upper()}={STRAY}", 200, headers=bearer(PRODUCER))
    call("GET", f"/whoami?api%5Fkey={STRAY}&Access_Token={STRAY}", 200, headers=bearer(ADMIN))
    # 403, 404, an enqueue, a poll, a malformed body, with keys in the URL too.
    call("POST", f"/workers/tasks/poll?key={PRODUCER}", 403, headers=bearer(PRODUCER), json={})
    call(
        "GET", f"/tasks/tsk_00000000000000000000000000?secret={WORKER}", 404, headers=bearer(ADMIN)
    )
    call("GET", f"/no/such/route?apikey={WORKER}", 404, headers=bearer(ADMIN))
    task = call("POST", "/tasks", 201, headers=bearer(PRODUCER), json={"handler_name": "logs"})
    assert task.json()["id"]
    poll = {"handler_names": ["logs"], "wait_ms": 0}
    call(
        "POST", f"/workers/tasks/poll?access_token={WORKER}", 200, headers=bearer(WORKER), json=poll
    )
    call(
        "POST",
        "/tasks",
        400,
        headers={**bearer(PRODUCER), "Content-Type": "application/json"},
        content=b'{"handler_name": ',
    )
    return sent


def test_no_key_or_digest_in_any_log_line(
    start_server: Callable[..., RunningServer], tmp_path: Path
) -> None:
    server = start_server(
        **{
            "keys-file": keys_file(tmp_path / "keys.toml"),
            "access-log": True,
            "log-level": "debug",
        }
    )
    sent = exercise(server.url)

    def access_lines() -> list[str]:
        lines = server.log.read_text().splitlines()
        return [line for line in lines if '"logger":"uvicorn.access"' in line]

    # Written (so the search below is not over an empty log), one per request.
    lines = eventually(lambda: len(access_lines()) >= sent and access_lines())
    everything = server.log.read_text() + "\n".join(server.stdout_lines)
    for secret in SECRETS:
        for form in forms(secret):
            assert form not in everything, f"{form!r} (of {secret!r}) is in the server's output"
    # The URLs are in the access log, their secret values masked and the rest kept.
    assert sum("/whoami?api_key=*** " in line for line in lines) == 1
    assert sum("/whoami?API_KEY=*** " in line for line in lines) == 1
    assert sum("/whoami?api%5Fkey=***&Access_Token=*** " in line for line in lines) == 1
    assert sum("/whoami?token=***&x=1 " in line for line in lines) == 1
    assert any('"POST /tasks HTTP/1.1\\" 400' in line for line in lines)


def test_redact_masks_the_secret_query_parameters_only() -> None:
    line = '1.2.3.4:5 - "GET /x?Key=a&keys=b&token=&tokens=c&Secret=d%20e&api_key HTTP/1.1" 200'
    assert redact(line) == (
        '1.2.3.4:5 - "GET /x?Key=***&keys=b&token=&tokens=c&Secret=***&api_key HTTP/1.1" 200'
    )
    assert redact("a question? no query") == "a question? no query"
