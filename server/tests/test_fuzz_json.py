"""No input makes a 500 (P-ERR-5), on both backends.

Two parts: property-based bodies (hypothesis over JSON shapes, sizes, nesting, NUL and
big integers) sent to the routes that store free-form JSON, each checked against an
oracle written independently of the server's guard and read back through the API; and a
fixed list of hostile raw bodies sent to EVERY route of the contract that takes a body.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
import yaml
from conftest import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

LIMIT = 128  # P-ERR-5: levels of arrays and objects, the body itself level 1
SPEC = yaml.load((REPO / "openapi.yaml").read_text(), Loader=yaml.CSafeLoader)
CODES = set(
    SPEC["components"]["schemas"]["Problem"]["properties"]["code"]["x-orch8-codes"]  # P-ERR-4
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers()  # unbounded: past 2**64 the server reads a float
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)  # any code point but surrogates, NUL included
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def nest(value: Any, levels: int, as_object: bool) -> Any:
    for _ in range(levels):
        value = {"n": value} if as_object else [value]
    return value


deep_values = st.builds(nest, values, st.integers(0, 200), st.booleans())


def depth(value: Any) -> int:
    """Nesting levels of arrays and objects (a scalar is 0, `{}` is 1)."""
    best, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        )
        if children is not None:
            best = max(best, level)
            stack.extend((child, level + 1) for child in children)
    return best


def has_nul(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and "\x00" in item:
            return True
        if isinstance(item, dict):
            if any("\x00" in k for k in item):
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def expected_refusals(body: Any) -> set[str]:
    """The problem codes P-ERR-5 allows for `body` (empty: it must be accepted)."""
    codes = set()
    if depth(body) > LIMIT:
        codes.add("payload_too_deep")
    if has_nul(body):
        codes.add("unsupported_value")
    return codes


def send(api: httpx.Client, path: str, body: Any) -> httpx.Response:
    # the stdlib encoder writes integers of any size, as a careless client would
    raw = json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return api.post(path, content=raw, headers={"Content-Type": "application/json"})


@pytest.fixture(scope="module")
def api(start_server) -> Iterator[httpx.Client]:
    server = start_server()
    with httpx.Client(base_url=server.url, timeout=20) as client:
        yield client


def _claimed(api: httpx.Client) -> tuple[str, str]:
    handler = "fz_" + uuid.uuid4().hex[:10]
    assert api.post("/tasks", json={"handler_name": handler}).status_code == 201
    r = api.post("/workers/tasks/poll", json={"handler_names": [handler], "wait_ms": 0})
    assert r.status_code == 200, r.text
    return r.json()["id"], r.json()["lease"]["id"]


def _read_back(api: httpx.Client, path: str) -> dict:
    r = api.get(path)
    assert r.status_code == 200, f"GET {path}: {r.status_code} {r.text[:300]}"
    return dict(r.json())


ROUTES = ("enqueue", "batch", "complete", "fail", "heartbeat", "sequence", "instance")


def _exercise(api: httpx.Client, route: str, value: Any) -> None:
    """Send `value` where `route` stores free-form JSON; check the answer and read back."""
    wire = orjson.loads(json.dumps(value)) if not expected_refusals(value) else None
    if route == "enqueue":
        body: Any = {"handler_name": "fz", "params": {"v": value}}
        path = "/tasks"
    elif route == "batch":
        body = {"tasks": [{"handler_name": "fz", "context": {"v": value}}]}
        path = "/tasks/batch"
    elif route in ("complete", "fail", "heartbeat"):
        task_id, lease_id = _claimed(api)
        path = f"/workers/tasks/{task_id}/{route}"
        body = {
            "complete": {"lease_id": lease_id, "output": value},
            "fail": {"lease_id": lease_id, "error": "e", "details": {"v": value}},
            "heartbeat": {"lease_id": lease_id, "progress": value, "checkpoint": {"v": value}},
        }[route]
    elif route == "sequence":
        name = "fz_" + uuid.uuid4().hex[:10]
        body = {"name": name, "steps": [{"id": "a", "handler": "fz", "params": {"v": value}}]}
        path = "/sequences"
    else:
        name = "fz_" + uuid.uuid4().hex[:10]
        seq = {"name": name, "steps": [{"id": "a", "handler": "fz_none"}]}
        assert api.post("/sequences", json=seq).status_code in (200, 201)
        body, path = {"sequence": name, "input": {"v": value}}, "/instances"
    r = send(api, path, body)
    refusals = expected_refusals(body)
    assert r.status_code < 500, f"{route}: {r.status_code} {r.text[:300]}"
    if refusals:
        assert r.status_code == 400, (
            f"{route}: want 400 {refusals}, got {r.status_code} {r.text[:200]}"
        )
        assert r.json()["code"] in refusals, r.text[:300]
        assert r.json()["errors"] and r.json()["errors"][0]["pointer"].startswith("/")
        return
    assert r.status_code in (200, 201), f"{route}: {r.status_code} {r.text[:300]}"
    answer = r.json()
    if route == "enqueue":
        assert _read_back(api, f"/tasks/{answer['id']}")["params"] == {"v": wire}
    elif route == "batch":
        _read_back(api, f"/tasks/{answer['tasks'][0]['id']}")
    elif route == "complete":
        assert _read_back(api, f"/tasks/{task_id}")["output"] == wire
    elif route in ("fail", "heartbeat"):
        _read_back(api, f"/tasks/{task_id}")
    elif route == "sequence":
        _read_back(api, f"/sequences/{name}")
    else:
        _read_back(api, f"/instances/{answer['id']}")


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI failures reproduce
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(route=st.sampled_from(ROUTES), value=deep_values)
def test_p_err_5_no_json_value_makes_a_500(api: httpx.Client, route: str, value: Any) -> None:
    """Any JSON value, nested up to 200 levels deeper: accepted and read back unchanged,
    or refused 400 with the code and pointer P-ERR-5 names; never a 5xx."""
    _exercise(api, route, value)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("levels", [LIMIT - 1, LIMIT, LIMIT + 1, 253, 300])
def test_p_err_5_the_depth_limit_holds_on_every_storing_route(
    api: httpx.Client, route: str, levels: int
) -> None:
    """At the limit every route accepts and reads back; one level past it, 400 (orjson's
    own limit of 254 used to make 253-level values a 500 on the way out)."""
    _exercise(api, route, nest(0, levels, as_object=levels % 2 == 0))


def _json_routes(api: httpx.Client) -> list[tuple[str, str]]:
    """Every operation with a request body, its path ids naming real objects."""
    task_id = api.post("/tasks", json={"handler_name": "fz_ids"}).json()["id"]
    seq = {"name": "fz_ids", "steps": [{"id": "a", "handler": "fz_ids"}]}
    assert api.post("/sequences", json=seq).status_code in (200, 201)
    instance_id = api.post("/instances", json={"sequence": "fz_ids"}).json()["id"]
    real = {
        "{task_id}": task_id,
        "{instance_id}": instance_id,
        "{worker_id}": "w_fz",
        "{queue_name}": "q_fz",
        "{handler_name}": "h_fz",
        "{name}": "fz_ids",
        "{key}": "rl_fz",
    }
    out = []
    for path, item in SPEC["paths"].items():
        for method, op in item.items():
            if isinstance(op, dict) and "requestBody" in op:
                for template, ident in real.items():
                    path = path.replace(template, ident)
                assert "{" not in path, path
                out.append((method.upper(), path))
    return out


HOSTILE: list[tuple[str, bytes, set[str]]] = [
    ("invalid utf-8", b'{"handler_name": "\xff\xfe"}', {"malformed_json"}),
    ("unpaired surrogate", b'{"handler_name": "\\ud800"}', {"malformed_json"}),
    ("overflowing exponent", b'{"v": 1e999}', {"unsupported_value"}),
    ("400-digit integer", b'{"v": 1' + b"0" * 400 + b"}", {"unsupported_value"}),
    ("NUL escape", b'{"v": "a\\u0000b"}', {"unsupported_value"}),
    ("NUL in a key", b'{"a\\u0000": 1}', {"unsupported_value"}),
    ("10,000 levels", b"[" * 10_000 + b"]" * 10_000, {"malformed_json", "payload_too_deep"}),
    ("129 levels", b'{"v":' + b"[" * 128 + b"]" * 128 + b"}", {"payload_too_deep"}),
    ("null", b"null", {"validation_error"}),
    ("array of nulls", b"[null, null]", {"validation_error"}),
    (
        "object of nulls",
        b'{"handler_name": null, "params": null, "items": null}',
        {"validation_error"},
    ),
    ("truncated", b'{"handler_name": "a"', {"malformed_json"}),
]


@pytest.mark.parametrize("label,raw,codes", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_p_err_5_hostile_bodies_on_every_json_route(
    api: httpx.Client, label: str, raw: bytes, codes: set[str]
) -> None:
    """Every route that takes a body answers a hostile one with a declared 4xx problem."""
    wrong = []
    for method, path in _json_routes(api):
        r = api.request(method, path, content=raw, headers={"Content-Type": "application/json"})
        code = (
            r.json().get("code")
            if r.headers.get("content-type", "").startswith("application/problem+json")
            else None
        )
        # a body problem is found before the route looks up its path ids
        if not (400 <= r.status_code < 500 and code in CODES and code in codes):
            wrong.append(f"{method} {path}: {r.status_code} {r.text[:160]}")
    assert not wrong, f"{label}:\n" + "\n".join(wrong)
