"""A tiny stdlib HTTP client for the runner's own calls (enqueue, read back, operator).

The runner never uses an SDK under test to check that SDK's work.
"""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any


class ApiError(Exception):
    """A non-2xx answer or a network failure."""

    def __init__(self, status: int, body: Any, what: str) -> None:
        super().__init__(f"{what}: HTTP {status} {body}")
        self.status = status
        self.body = body


class Api:
    """Direct calls to the server (never through the fault proxy)."""

    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        # P-TEN-3: another tenant's ids are 404, so reads name the tenant an object lives in.
        self.task_tenant: dict[str, str] = {}  # task id -> tenant, when not the default
        self.worker_tenant: dict[str, str] = {}  # worker id -> tenant, when not the default
        self._read_once: dict[str, Any] | None = None  # path -> answer, inside read_once()

    def call(self, method: str, path: str, body: Any = None, tenant: str | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.api_key:
            req.add_header("Authorization", f"Bearer {self.api_key}")
        if tenant is not None:
            req.add_header("X-Tenant-Id", tenant)  # P-TEN-2
        what = f"{method} {path}"
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as res:
                raw = res.read()
                return json.loads(raw) if raw else None
        except urllib.error.HTTPError as err:
            raw = err.read()
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = raw.decode(errors="replace")
            raise ApiError(err.code, parsed, what) from None
        except (urllib.error.URLError, OSError) as err:
            raise ApiError(0, str(err), what) from None

    def enqueue(self, task: dict, tenant: str | None = None) -> dict:
        created = self.call("POST", "/tasks", task, tenant)
        if tenant is not None:
            self.task_tenant[created["id"]] = tenant
        return created

    def enqueue_batch(self, tasks: list[dict], tenant: str | None = None) -> list[dict]:
        created = self.call("POST", "/tasks/batch", {"tasks": tasks}, tenant)["tasks"]
        if tenant is not None:
            self.task_tenant.update((t["id"], tenant) for t in created)
        return created

    @contextlib.contextmanager
    def read_once(self) -> Iterator[None]:
        """Inside, a task and its attempts are read once and the answer reused: the end-state
        checks read each task up to three times (1,000 tasks: 3,000 requests, most of the run)."""
        self._read_once = {}
        try:
            yield
        finally:
            self._read_once = None

    def _get_task_path(self, task_id: str, path: str) -> Any:
        if self._read_once is not None and path in self._read_once:
            return self._read_once[path]
        answer = self.call("GET", path, tenant=self.task_tenant.get(task_id))
        if self._read_once is not None:
            self._read_once[path] = answer
        return answer

    def task(self, task_id: str) -> dict:
        return self._get_task_path(task_id, f"/tasks/{task_id}")

    def attempts(self, task_id: str) -> list[dict]:
        return self._get_task_path(task_id, f"/tasks/{task_id}/attempts")["attempts"]

    def worker(self, worker_id: str) -> dict | None:
        try:
            return self.call("GET", f"/workers/{worker_id}", tenant=self.worker_tenant.get(worker_id))
        except ApiError as err:
            if err.status == 404:
                return None
            raise

    def ready(self) -> bool:
        try:
            self.call("GET", "/health/ready")
            return True
        except ApiError:
            return False
