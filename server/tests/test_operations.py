"""Routes come from openapi.yaml (issue 29, item 5): every operation has exactly one
handler, registered by its operationId; every handler names an operation of the spec and
the TypedDict of its body schema; the spec's defaults are what the server applies."""

from __future__ import annotations

import typing
from collections.abc import Callable

import httpx
import pytest
from starlette.applications import Starlette
from starlette.datastructures import QueryParams
from starlette.routing import Route

from orch8_server._generated import models
from orch8_server.config import Settings
from orch8_server.http import operations as ops
from orch8_server.http.app import create_app
from orch8_server.http.validation import ParamValidator, body_validator, schema_property, spec
from orch8_server.testing import RunningServer

# Served by the app but deliberately not in openapi.yaml: the dashboard's static files are a
# page for people, not part of the API the SDKs are generated from (http/ui.py).
NOT_IN_SPEC = {
    ("GET", "/"): "redirect to the dashboard",
    ("GET", "/ui"): "redirect to the dashboard",
    ("GET", "/ui/"): "the dashboard's index.html",
    ("GET", "/ui/{name}"): "the dashboard's static files",
}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Starlette:
    """The app, unstarted: building it imports the routes_* modules, which register."""
    return create_app(Settings(db=str(tmp_path_factory.mktemp("ops") / "o.db")))


def test_every_operation_has_one_handler_and_every_handler_an_operation(app: Starlette) -> None:
    problems = ops.unmatched(set(ops.registered()), set(ops.operations()))
    assert not problems, "\n".join(problems)
    assert len(ops.operations()) == sum(
        m in item for item in spec()["paths"].values() for m in ops.METHODS
    )


def test_the_check_sees_a_missing_handler_and_an_unknown_operation() -> None:
    assert ops.unmatched({"enqueueTask", "enqueueTaskz"}, {"enqueueTask", "getTask"}) == [
        "getTask: in openapi.yaml, no handler",
        "enqueueTaskz: a handler, not in openapi.yaml",
    ]


def test_a_second_handler_for_an_operation_is_refused(app: Starlette) -> None:
    with pytest.raises(RuntimeError, match="enqueueTask: two handlers"):
        ops.operation("enqueueTask")(ops.registered()["enqueueTask"])


def _body_type(handler: Callable[..., object]) -> str | None:
    call = typing.get_type_hints(handler, localns=vars(models))["call"]
    (body,) = typing.get_args(call)
    return None if body is type(None) else body.__name__


def test_each_handler_receives_the_typeddict_of_its_operations_body(app: Starlette) -> None:
    wrong = {
        op_id: (_body_type(handler), ops.operations()[op_id].body_schema)
        for op_id, handler in ops.registered().items()
        if _body_type(handler) != ops.operations()[op_id].body_schema
    }
    assert not wrong, f"operationId: (Call[...] of the handler, body schema of the spec) {wrong}"


def test_the_app_serves_the_spec_and_the_dashboard_nothing_else(app: Starlette) -> None:
    served = {
        (method, route.path)
        for route in app.routes
        if isinstance(route, Route)
        for method in route.methods or ()
        if method != "HEAD"
    }
    from_spec = {(op.method, op.route_path) for op in ops.operations().values()}
    assert served == from_spec | set(NOT_IN_SPEC)
    assert not from_spec & set(NOT_IN_SPEC)


def test_names_that_may_hold_a_slash_match_with_the_path_converter() -> None:
    route = {op_id: op.route_path for op_id, op in ops.operations().items()}
    assert route["pauseQueue"] == "/queues/{queue_name:path}/pause"
    assert route["setHandlerLimit"] == "/handlers/{handler_name:path}/limit"
    assert route["getSequence"] == "/sequences/{name:path}"
    assert route["getTask"] == "/tasks/{task_id}"
    assert route["getWorker"] == "/workers/{worker_id}"


def test_roles_and_public_operations_come_from_the_spec() -> None:
    found = ops.operations()
    assert found["getLiveness"].roles is None  # security: []
    assert found["listTenants"].roles == frozenset()  # admin only
    assert found["pollTask"].roles == frozenset({"worker", "operator"})
    assert (found["enqueueTask"].body_schema, found["enqueueTask"].body_required) == (
        "NewTask",
        True,
    )
    assert (found["pollTask"].body_schema, found["pollTask"].body_required) == (
        "PollOptions",
        False,
    )


def test_parameter_defaults_are_the_specs() -> None:
    params = ParamValidator("/tasks", "get")({}, QueryParams(""))
    assert params["limit"] == 50
    given = ParamValidator("/tasks", "get")({}, QueryParams("limit=7"))
    assert given["limit"] == 7
    history = ParamValidator("/queues/{queue_name}/history", "get")
    assert history({"queue_name": "q"}, QueryParams(""))["minutes"] == 60


def test_body_defaults_are_filled_except_those_the_settings_own() -> None:
    body: dict[str, object] = {}
    body_validator("PollBatchOptions")(body)
    assert body == {"batch_size": schema_property("PollBatchOptions", "batch_size")["default"]}
    failure: dict[str, object] = {"items": [{"task_id": "t", "error": "e"}]}
    body_validator("TaskFailureBatch")(failure)
    assert failure == {"items": [{"task_id": "t", "error": "e", "retryable": False}]}


@pytest.mark.backends("sqlite")
def test_a_poll_naming_no_wait_ms_waits_the_servers_wait_ms(
    start_server: Callable[..., RunningServer], name: str
) -> None:
    """P-POLL-2: --wait-ms, not the 30000 the spec documents, when the body names none."""
    server = start_server(**{"wait-ms": 100})
    with httpx.Client(base_url=server.url, timeout=5) as api:
        single = api.post("/workers/tasks/poll", json={"handler_names": [name]})
        assert single.status_code == 204, single.text
        batch = api.post("/workers/tasks/poll/batch", json={"handler_names": [name]})
        assert batch.status_code == 200 and batch.json()["tasks"] == [], batch.text


def test_info_states_the_specs_defaults(api: httpx.Client) -> None:
    defaults = api.get("/info").json()["defaults"]
    assert defaults["max_attempts"] == schema_property("RetryPolicy", "max_attempts")["default"]
    assert (
        defaults["max_batch_size"] == schema_property("PollBatchOptions", "batch_size")["maximum"]
    )
