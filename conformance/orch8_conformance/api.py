"""A tiny stdlib HTTP client for the runner's own calls (enqueue, read back, operator).

The runner never uses an SDK under test to check that SDK's work. Its calls share one
kept-alive connection per Api: the waits poll task statuses every 50-100 ms, and a new
connection per read cost the runner and the server more CPU than the reads themselves.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import select
import urllib.parse
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
        parsed = urllib.parse.urlsplit(self.base_url)
        self._host, self._port = parsed.hostname or "127.0.0.1", parsed.port or 80
        self._prefix = parsed.path  # a base URL may carry a path prefix
        self._conn: http.client.HTTPConnection | None = None

    def call(self, method: str, path: str, body: Any = None, tenant: str | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        if tenant is not None:
            headers["X-Tenant-Id"] = tenant  # P-TEN-2
        what = f"{method} {path}"
        for retry in (False, True):
            conn, reused = self._connection()
            try:
                conn.request(method, self._prefix + path, body=data, headers=headers)
                res = conn.getresponse()
                raw = res.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as err:
                self.close()
                if reused and not retry:  # closed by the server between two calls (restart, idle)
                    continue
                raise ApiError(0, str(err), what) from None
            except (OSError, http.client.HTTPException) as err:
                self.close()
                raise ApiError(0, str(err), what) from None
            break
        if 200 <= res.status < 300:
            return json.loads(raw) if raw else None
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = raw.decode(errors="replace")
        raise ApiError(res.status, parsed, what)

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        """The kept-alive connection (and whether it served a call before), or a new one. An
        idle connection the server has closed reads as ready (EOF): it is replaced first."""
        conn = self._conn
        if conn is not None and conn.sock is not None and select.select([conn.sock], [], [], 0)[0]:
            self.close()
            conn = None
        if conn is None or conn.sock is None:
            self.close()
            conn = self._conn = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
            return conn, False
        return conn, True

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

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
