"""Bad input gets a problem+json with the right status and a stable code (P-ERR-1..3)."""

from __future__ import annotations

import json

import httpx
import pytest
from conftest import assert_problem, enqueue


def test_malformed_json(api: httpx.Client) -> None:
    r = api.post(
        "/tasks", content=b'{"handler_name": ', headers={"content-type": "application/json"}
    )
    assert_problem(r, 400, "malformed_json")


@pytest.mark.parametrize("body", [b"\t", b" ", b"\r\n"])
def test_whitespace_body_is_malformed_json_even_where_the_body_is_optional(
    api: httpx.Client, body: bytes
) -> None:
    """P-ERR-3: an empty body means "no body"; whitespace alone is not JSON (schemathesis
    sent a poll a lone tab, which claimed with the defaults and answered 204)."""
    r = api.post("/workers/tasks/poll", content=body, headers={"content-type": "application/json"})
    assert_problem(r, 400, "malformed_json")


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"handler_name": "x", "priority": False}, "/priority"),
        ({"handler_name": "x", "priority": "1"}, "/priority"),
        ({"handler_name": "x", "priority": 1.5}, "/priority"),
        ({"handler_name": "x", "priority": 10**7}, "/priority"),
        ({"handler_name": ""}, "/handler_name"),
        ({"handler_name": "x", "surprise": 1}, "/surprise"),
        ({"handler_name": "x", "retry": {"max_attempts": 0}}, "/retry/max_attempts"),
        ({"handler_name": "x", "run_at": "yesterday"}, "/run_at"),
        ({"handler_name": "x", "run_at": "2026-13-01T00:00:00Z"}, "/run_at"),
        ({"params": {}}, "/handler_name"),
    ],
)
def test_wrong_types_and_ranges_point_at_the_field(
    api: httpx.Client, body: dict, pointer: str
) -> None:
    problem = assert_problem(api.post("/tasks", json=body), 422, "validation_error")
    assert pointer in [e["pointer"] for e in problem["errors"]], problem


PYTHON_WORDS = ("None", "True", "False", "'", "is not of type", "required property")


@pytest.mark.parametrize(
    ("method", "path", "body", "pointer", "detail"),
    [
        ("POST", "/instances", {"inptu": {}}, "/sequence", "is required"),
        ("POST", "/instances", {"sequence": "s", "inptu": {}}, "/inptu",
         "is not allowed (allowed: concurrency_key, context, idempotency_key, input, "
         "max_concurrency, sequence, version)"),
        ("POST", "/instances", None, "", "must be an object"),
        ("POST", "/instances", {"sequence": "s", "input": None}, "/input", "must be an object"),
        ("POST", "/instances", {"sequence": True}, "/sequence", "must be a string"),
        ("POST", "/instances", {"sequence": "s", "version": 0}, "/version", "must be at least 1"),
        ("POST", "/sequences", {"name": "s", "steps": [{"id": "a", "handler": "h"}] * 101},
         "/steps", "must have at most 100 items"),
        ("POST", "/sequences", {"name": "s", "steps": []}, "/steps", "must have at least 1 item"),
        ("POST", "/sequences", {"name": "s", "steps": [{"id": "a b", "handler": "h"}]},
         "/steps/0/id", "must match the pattern ^[A-Za-z0-9_-]{1,64}$"),
        ("POST", "/sequences", {"name": "s", "steps": [{"id": "a", "handler": "h"}],
                                "on_error": 5}, "/on_error", "must be an object or null"),
        ("POST", "/tasks", {"handler_name": ""}, "/handler_name", "must not be empty"),
        ("POST", "/tasks", {"handler_name": "x", "queue_name": "q" * 201}, "/queue_name",
         "must be at most 200 characters long"),
        ("POST", "/tasks", {"handler_name": "x", "priority": 1.5}, "/priority",
         "must be an integer"),
        ("POST", "/tasks", {"handler_name": "x", "required_labels": {"a b": "c"}},
         "/required_labels", 'member name "a b" must match the pattern ^[A-Za-z0-9_.:/-]{1,100}$'),
        ("POST", "/tasks/batch", {"tasks": [{"handler_name": "x"}] * 101}, "/tasks",
         "must have at most 100 items"),
        ("GET", "/instances?status=done", None, "#/query/status/0",
         "must be one of: running, completed, failed, cancelled"),
    ],
)  # fmt: skip
def test_validation_errors_point_at_the_field_in_the_contracts_words_P_ERR_2(
    api: httpx.Client, method: str, path: str, body: object, pointer: str, detail: str
) -> None:
    """A missing or unknown member is pointed at itself, not its object; details say what
    the contract wants in JSON's words (no Python repr), and never echo a large value."""
    content = json.dumps(body).encode() if method == "POST" else None
    r = api.request(method, path, content=content, headers={"content-type": "application/json"})
    problem = assert_problem(r, 422, "validation_error")
    assert {"pointer": pointer, "detail": detail} in problem["errors"], problem
    assert len(r.content) < 2000, r.text  # 101 steps or tasks are not echoed back
    for error in problem["errors"]:
        assert not any(word in error["detail"] for word in PYTHON_WORDS), error


def test_a_large_bad_value_is_not_echoed_P_ERR_2(api: httpx.Client) -> None:
    huge = "!" * 5000
    for body in ({"handler_name": huge}, {"handler_name": "x", "status": huge},
                 {"handler_name": "x", huge: 1}):  # fmt: skip
        r = api.post("/tasks", json=body)
        assert_problem(r, 422, "validation_error")
        assert len(r.content) < 2000 and "!" * 81 not in r.text, r.text  # cut at 80


def test_integral_float_is_an_integer_as_in_json_schema(api: httpx.Client, name: str) -> None:
    r = api.post("/tasks", json={"handler_name": name, "priority": 27.0})
    assert r.status_code == 201 and r.json()["priority"] == 27


def test_delay_is_added_to_run_at(api: httpx.Client, name: str) -> None:
    """P-TASK-1."""
    r = api.post(
        "/tasks", json={"handler_name": name, "run_at": "2030-01-01T00:00:00Z", "delay_ms": 1500}
    )
    assert r.status_code == 201 and r.json()["run_at"] == "2030-01-01T00:00:01.500Z"


def test_wrong_content_type(api: httpx.Client) -> None:
    r = api.post(
        "/tasks",
        content=b"handler_name=x",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert_problem(r, 415, "unsupported_media_type")


def test_oversize_body_and_batch(api: httpx.Client) -> None:
    huge = {"handler_name": "x", "params": {"blob": "a" * 1_100_000}}
    assert_problem(api.post("/tasks", json=huge), 413, "payload_too_large")
    chunked = api.post(
        "/tasks",
        content=iter([b'{"handler_name": "x", "params": {"b": "', b"a" * 1_100_000, b'"}}']),
        headers={"content-type": "application/json"},
    )
    assert_problem(chunked, 413, "payload_too_large")
    batch = {"tasks": [{"handler_name": "x"}] * 101}
    problem = assert_problem(api.post("/tasks/batch", json=batch), 422, "validation_error")
    assert problem["errors"][0]["pointer"] == "/tasks"
    poll = api.post("/workers/tasks/poll/batch", json={"batch_size": 101})
    assert_problem(poll, 422, "validation_error")


def test_missing_body_and_bad_parameters(api: httpx.Client) -> None:
    assert_problem(api.post("/tasks"), 422, "validation_error")
    assert_problem(api.post("/workers/tasks/x/fail"), 422, "validation_error")
    problem = assert_problem(api.get("/tasks", params={"limit": "ten"}), 422, "validation_error")
    assert problem["errors"][0]["pointer"] == "#/query/limit"
    assert_problem(api.get("/tasks", params={"limit": 0}), 422, "validation_error")
    assert_problem(api.get("/tasks", params={"status": "done"}), 422, "validation_error")
    assert_problem(api.get("/tasks/bad%20id"), 422, "validation_error")


def test_unknown_route_and_method(api: httpx.Client) -> None:
    assert_problem(api.get("/nope"), 404, "not_found")
    r = assert_problem(api.delete("/tasks"), 405, "method_not_allowed")
    assert r["detail"]


def test_complete_of_pending_task_without_lease(api: httpx.Client, name: str) -> None:
    task = enqueue(api, name)
    assert_problem(api.post(f"/workers/tasks/{task['id']}/complete", json={}), 409, "lease_lost")
    assert_problem(api.post(f"/workers/tasks/{task['id']}/heartbeat"), 409, "lease_lost")


def test_api_keys_protect_every_route_but_health(start_server) -> None:
    """P-AUTH-1."""
    server = start_server(**{"api-key": ["k1", "k2"]})
    with httpx.Client(base_url=server.url) as c:
        assert (
            c.get("/health/live").status_code == 200 and c.get("/health/ready").status_code == 200
        )
        for path in ("/tasks", "/queues", "/metrics", "/info", "/workers"):
            problem = assert_problem(c.get(path), 401, "unauthorized")
            assert problem["code"] == "unauthorized"
        assert_problem(
            c.get("/tasks", headers={"Authorization": "Bearer nope"}), 401, "unauthorized"
        )
        assert c.get("/tasks", headers={"Authorization": "Bearer k2"}).status_code == 200
        r = c.post("/tasks", json={"handler_name": "x"}, headers={"Authorization": "Bearer k1"})
        assert r.status_code == 201


def test_a_whole_float_at_an_integer_place_is_taken_as_the_integer(
    api: httpx.Client, name: str
) -> None:
    """JSON Schema counts 2.0 as an integer: schemathesis found `batch_size: 2.0` answered
    500 (a float slice index). Integer places of a body are made ints after validation;
    free-form JSON (params) keeps its numbers as sent; 2.5 is still refused."""
    r = api.post("/tasks", json={"handler_name": name, "priority": 3.0, "params": {"x": 1.0},
                                 "retry": {"max_attempts": 2.0}})  # fmt: skip
    assert r.status_code == 201, r.text
    assert '"priority":3,' in r.text and '"x":1.0' in r.text
    poll = {"handler_names": [name], "batch_size": 2.0, "lease_ms": 1500.0, "wait_ms": 0.0}
    got = api.post("/workers/tasks/poll/batch", json=poll)
    assert got.status_code == 200 and len(got.json()["tasks"]) == 1, got.text
    assert_problem(api.post("/workers/tasks/poll/batch", json={**poll, "batch_size": 2.5}),
                   422, "validation_error")  # fmt: skip
