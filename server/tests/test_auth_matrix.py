"""The authorization matrix, generated from openapi.yaml (P-AUTH-1..3, P-TEN-2..3).

For every operation of the contract, every role (worker, producer, operator, admin,
metrics), no key and a wrong key, in the caller's own tenant and against another tenant's
objects, the status the server must answer:

- no key or an unknown key: 401 `unauthorized` (operations with `security: []` answer);
- a role the operation's `x-orch8-roles` does not list (admin is implied): 403 `forbidden`;
- otherwise never 401/403 and never a 5xx; in the own tenant, real objects (a task, a
  leased task, a registered worker) make the call reach past 404; with another tenant's
  `{task_id}` / `{worker_id}` the answer is 404 `not_found`, as for an id that never existed;
  a poll claims the own tenant's waiting task and never the other tenant's.
  The one exception is a worker heartbeat, which registers an unknown worker (P-WORKER-5):
  another tenant's worker id registers a new worker in the caller's tenant, and the answer
  must not carry the other worker's directive.

An operation that declares no `x-orch8-roles` (and is not `security: []`) fails.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml
from conftest import REPO, key_entry

SPEC = yaml.load((REPO / "openapi.yaml").read_text(), Loader=yaml.CSafeLoader)
METHODS = ("get", "post", "put", "patch", "delete")
OPERATIONS = {
    op["operationId"]: (method.upper(), path, op)
    for path, item in SPEC["paths"].items()
    for method, op in item.items()
    if method in METHODS
}
ROLES = ("worker", "producer", "operator", "admin", "metrics")
OWN, FOREIGN = "ta", "tb"  # the callers' tenant, and the tenant whose objects they must not see
ADMIN = "o8k_matrix_setup_admin"  # builds the objects in either tenant


def secret(role: str) -> str:
    return f"o8k_matrix_{role}_{OWN}"


def keys_file_text() -> str:
    entries = [("setup-admin", ADMIN, "admin", "default")]
    entries += [(f"{role}-{OWN}", secret(role), role, OWN) for role in ROLES]
    return "".join(key_entry(key_id, s, role, tenant=tenant) for key_id, s, role, tenant in entries)


def declared_roles(operation: str) -> frozenset[str] | None:
    """P-AUTH-2: the roles the contract lists (admin implied); None for a public operation."""
    _, _, op = OPERATIONS[operation]
    if op.get("security") == []:
        return None
    assert "x-orch8-roles" in op, f"{operation} declares no x-orch8-roles in openapi.yaml"
    roles = frozenset(op["x-orch8-roles"])
    assert roles <= set(ROLES), f"{operation}: unknown role(s) {sorted(roles - set(ROLES))}"
    return roles | {"admin"}


def test_every_operation_declares_its_roles() -> None:
    """P-AUTH-2: a new operation without x-orch8-roles (and not security: []) fails here."""
    missing = [
        name
        for name, (_, _, op) in OPERATIONS.items()
        if op.get("security") != [] and "x-orch8-roles" not in op
    ]
    assert not missing, f"operations without x-orch8-roles: {missing}"


class World:
    """Builds fresh real objects in a tenant: tasks through the setup admin key, leases and
    workers through `holder` (P-AUTH-6/7: a worker key acts only on what it holds)."""

    def __init__(self, api: httpx.Client, holder: str = ADMIN) -> None:
        self.api = api
        self.holder = holder

    def _call(
        self, tenant: str, method: str, path: str, key: str = ADMIN, **kw: Any
    ) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key}", "X-Tenant-Id": tenant}
        return self.api.request(method, path, headers=headers, **kw)

    def task(self, tenant: str, handler: str | None = None) -> str:
        handler = handler or "h_" + uuid.uuid4().hex[:12]
        r = self._call(tenant, "POST", "/tasks", json={"handler_name": handler})
        assert r.status_code == 201, r.text
        return str(r.json()["id"])

    def leased(self, tenant: str) -> tuple[str, str]:
        handler = "h_" + uuid.uuid4().hex[:12]
        task_id = self.task(tenant, handler)
        r = self._call(
            tenant,
            "POST",
            "/workers/tasks/poll",
            key=self.holder,
            json={"handler_names": [handler], "wait_ms": 0},
        )
        assert r.status_code == 200 and r.json()["id"] == task_id, r.text
        return task_id, str(r.json()["lease"]["id"])

    def worker(self, tenant: str) -> str:
        worker_id = "w_" + uuid.uuid4().hex[:12]
        r = self._call(tenant, "POST", "/workers", key=self.holder, json={"worker_id": worker_id})
        assert r.status_code in (200, 201), r.text
        return worker_id

    def quiet(self, tenant: str, worker_id: str) -> None:
        r = self._call(tenant, "POST", f"/workers/{worker_id}/quiet")
        assert r.status_code == 200, r.text


def request_for(operation: str, world: World, tenant: str) -> tuple[str, str, Any]:
    """A valid call of `operation` whose path ids and leases name real objects of `tenant`."""
    method, path, op = OPERATIONS[operation]
    body: Any = None
    if "requestBody" in op:
        body = copy.deepcopy(op["requestBody"]["content"]["application/json"].get("example", {}))
    if "{task_id}" in path:
        if path.startswith("/workers/tasks/"):
            task_id, lease_id = world.leased(tenant)
            body = {**(body or {}), "lease_id": lease_id}
        else:
            task_id = world.task(tenant)
        path = path.replace("{task_id}", task_id)
    if "{worker_id}" in path:
        worker_id = world.worker(tenant)
        if operation == "heartbeatWorker":  # quiet, so the answer tells whose worker it is
            world.quiet(tenant, worker_id)
        path = path.replace("{worker_id}", worker_id)
    path = path.replace("{queue_name}", "q_" + uuid.uuid4().hex[:8])
    path = path.replace("{handler_name}", "h_" + uuid.uuid4().hex[:8])
    if operation in ("pollTask", "pollTasks"):  # a task of `tenant` waits for this handler
        handler = "h_" + uuid.uuid4().hex[:12]
        world.task(tenant, handler)
        body.update(handler_names=[handler], wait_ms=0)
        body.pop("worker_id", None)
    elif operation == "registerWorker":
        body["worker_id"] = "w_" + uuid.uuid4().hex[:12]
    elif operation == "heartbeatWorker":
        body["active_task_ids"] = []
    elif operation in ("completeTasks", "failTasks"):
        task_id, lease_id = world.leased(tenant)
        body["items"][0].update(task_id=task_id, lease_id=lease_id)
    return method, path, body


@pytest.fixture(scope="module")
def matrix(start_server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    keys = tmp_path_factory.mktemp("keys") / "keys.toml"
    keys.write_text(keys_file_text())
    server = start_server(**{"keys-file": keys})
    with httpx.Client(base_url=server.url, timeout=20) as api:
        yield api


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:  # 204, /metrics
        return {}
    return body if isinstance(body, dict) else {}


def _code(response: httpx.Response) -> str | None:
    if response.headers.get("content-type", "").startswith("application/problem+json"):
        return str(_json(response).get("code"))
    return None


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_auth_matrix(operation: str, matrix: httpx.Client) -> None:
    """P-AUTH-1..3, P-TEN-3: operation x role x own/foreign tenant -> the expected status."""
    api = matrix
    roles = declared_roles(operation)
    _, template, _ = OPERATIONS[operation]
    holds_ids = "{task_id}" in template or "{worker_id}" in template
    wrong: list[str] = []

    def check(who: str, headers: dict[str, str], tenant: str, expect: str) -> None:
        # A worker key's own objects are its own leases and workers (P-AUTH-6/7).
        holder = secret("worker") if who == "worker own" else ADMIN
        method, path, body = request_for(operation, World(api, holder), tenant)
        r = api.request(method, path, headers=headers, json=body)
        status, code = r.status_code, _code(r)
        payload = _json(r)
        directive = payload.get("directive")
        ok = {
            "401": status == 401
            and code == "unauthorized"
            and r.headers.get("www-authenticate", "").startswith("Bearer"),
            "403": status == 403 and code == "forbidden",
            "404": status == 404 and code == "not_found",
            "reach": status not in (401, 403, 404) and status < 500,
            "pass": status not in (401, 403) and status < 500,
            # polls (P-TEN-3): the own tenant's task is claimed, the other tenant's never
            "claims": status == 200 and bool(payload.get("id") or payload.get("tasks")),
            "claims none": status == 204 or (status == 200 and payload.get("tasks") == []),
            # heartbeatWorker (P-WORKER-5): the quieted worker itself, or a fresh one
            "quiet": status == 200 and directive == "quiet",
            "fresh": status == 200 and directive == "running",
        }[expect]
        if not ok:
            wrong.append(f"{who} {method} {path}: want {expect}, got {status} {r.text[:200]}")

    if roles is None:  # security: [] (health): never authenticates
        check("no key", {}, OWN, "reach")
    else:
        check("no key", {}, OWN, "401")
        check("bad key", {"Authorization": "Bearer o8k_not_a_key"}, OWN, "401")
        for role in ROLES:
            headers = {"Authorization": f"Bearer {secret(role)}"}
            if role == "admin":  # admin's own tenant is `default`; it selects OWN
                headers["X-Tenant-Id"] = OWN
            if role not in roles:
                check(f"{role} own", headers, OWN, "403")
                check(f"{role} foreign", headers, FOREIGN, "403")
                continue
            if operation == "heartbeatWorker":
                check(f"{role} own", headers, OWN, "quiet")
                check(f"{role} foreign", headers, FOREIGN, "fresh")
                continue
            if operation in ("pollTask", "pollTasks"):
                check(f"{role} own", headers, OWN, "claims")
                check(f"{role} foreign", headers, FOREIGN, "claims none")
                continue
            check(f"{role} own", headers, OWN, "reach")
            check(f"{role} foreign", headers, FOREIGN, "404" if holds_ids else "pass")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("role", [r for r in ROLES if r != "admin"])
def test_key_may_not_select_another_tenant(role: str, matrix: httpx.Client) -> None:
    """P-TEN-2, P-AUTH-3: X-Tenant-Id naming a tenant the key does not allow is 403."""
    for tenant in (FOREIGN, "bad tenant!"):
        r = matrix.get(
            "/whoami", headers={"Authorization": f"Bearer {secret(role)}", "X-Tenant-Id": tenant}
        )
        assert r.status_code == 403 and _code(r) == "forbidden", r.text
