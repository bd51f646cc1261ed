"""AsyncOrch8Client: the asyncio client, one typed method per contract operation (P-SDK-2).

The methods are generated from openapi.yaml (orch8/_generated/_methods.py, names kept from
earlier releases included); this class adds the connection, the safe retries and the
waiting helpers (orch8/waiting.py). orch8/client.py is generated from this file by
codegen/unasync.py (`make generate`): change the blocking client here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import httpx

from ._generated._methods import AsyncMethods
from ._http import Call, ClientConfig, Retries, RetryPolicy, connection_error
from .telemetry import Telemetry, send_tasks, sent_ids
from .waiting import AsyncWaiting


class AsyncOrch8Client(AsyncMethods, AsyncWaiting):
    """Asyncio client. `base_url` / `api_key` default to ORCH8_URL / ORCH8_API_KEY (P-SDK-1).

    `telemetry`: an `orch8.otel.OpenTelemetry()` traces enqueues (P-TEL-1); off by default.
    `tenant` (default ORCH8_TENANT) is sent as `X-Tenant-Id` on every request (P-SDK-24).
    `wait_instance` / `wait_task` long-poll until an instance / a task is final (P-SDK-25).
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout_ms: int | None = None,
        retry: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float | None = None,
        telemetry: Telemetry | None = None,
        tenant: str | None = None,
    ) -> None:
        self.config = ClientConfig.resolve(
            base_url, api_key, timeout_ms, retry, headers, timeout, tenant
        )
        self._generated = self.config.generated_client()
        # P-TEL-1: enqueues run in a producer span when given one (orch8.otel.OpenTelemetry).
        self.telemetry = telemetry
        self._http = httpx.AsyncClient(
            base_url=self.config.base_url,
            headers=self.config.request_headers(),
            transport=transport,
        )
        self._urls: dict[str, httpx.URL] = {}

    def _absolute(self, path: str) -> httpx.URL:
        """`path` under the base URL, as httpx joins a relative URL, parsed once per path.

        For the worker's two calls per batch (poll, complete): httpx spends about 70 us
        joining and parsing a relative URL on every request. Only fixed paths come here, so
        the cache stays as small as the set of callers.
        """
        url = self._urls.get(path)
        if url is None:
            base = self._http.base_url  # httpx keeps it ending in "/"
            url = base.copy_with(raw_path=base.raw_path + path.lstrip("/").encode("ascii"))
            self._urls[path] = url
        return url

    @property
    def tenant(self) -> str | None:
        """The tenant sent as `X-Tenant-Id` on every request, if any (P-SDK-24)."""
        return self.config.tenant

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncOrch8Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _run(self, call: Call) -> Any:
        """Send `call`, retrying it on outages when it is safe to repeat (P-SDK-2, P-SDK-16)."""
        request = call.request(self.config)
        if self.telemetry is not None:
            found = send_tasks(request)
            if found is not None:  # P-TEL-1: the span covers the retries too
                with self.telemetry.send(*found) as scope:
                    answer = await self._send(call, request)
                    scope.sent(sent_ids(answer))
                    return answer
        return await self._send(call, request)

    async def _send(self, call: Call, request: dict[str, Any]) -> Any:
        retries = Retries(call, self.config.retry)  # P-SDK-2: its budget is this call's
        while True:
            try:
                response = await self._http.request(**request)
            except httpx.TransportError as exc:
                delay = retries.next_delay_ms(None)
                if delay is None:
                    raise connection_error(exc, self.config.base_url) from exc
            else:
                delay = retries.next_delay_ms(response)
                if delay is None:
                    return call.parse(self._generated, response)
            await asyncio.sleep(delay / 1000)
