"""What the sync and async clients share: configuration, safe retries and error mapping.

Requests are built and parsed by the generated endpoint modules (`_get_kwargs` /
`_parse_response` of orch8/_generated/api/...); this module only decides timeouts, retries
(P-SDK-2) and how an error answer becomes an exception (protocol section 12).
"""

from __future__ import annotations

import email.utils
import os
import random
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import httpx

from ._generated import Client as GeneratedClient
from ._version import USER_AGENT
from .errors import Orch8Error, UnavailableError, error_class

DEFAULT_URL = "http://localhost:3001"
DEFAULT_TIMEOUT = 10.0  # P-SDK-1: seconds per request
LONG_POLL_MARGIN = 10.0  # P-SDK-1: a long-poll's timeout is its wait_ms + 10 s
DEFAULT_WAIT_MS = 30000  # P-POLL-2
RETRY_STATUSES = frozenset({429, 502, 503, 504})  # P-SDK-2


@dataclass(frozen=True)
class RetryPolicy:
    """Client retries for calls safe to repeat (P-SDK-2): 3 retries, 200 ms doubling, cap 5 s."""

    max_retries: int = 3
    base_delay: float = 0.2
    max_delay: float = 5.0

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Full-jitter delay before retry number `retry` (0-based), never below Retry-After."""
        jittered = random.uniform(0, min(self.max_delay, self.base_delay * 2**retry))
        return max(jittered, retry_after or 0.0)


@dataclass(frozen=True)
class ClientConfig:
    """Resolved settings of one client."""

    base_url: str
    api_key: str | None
    timeout: float
    retry: RetryPolicy
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def resolve(
        cls,
        base_url: str | None,
        api_key: str | None,
        timeout: float | None,
        retry: RetryPolicy | None,
        headers: dict[str, str] | None,
    ) -> ClientConfig:
        """Arguments first, then ORCH8_URL / ORCH8_API_KEY, then defaults (P-SDK-1)."""
        url = base_url or os.environ.get("ORCH8_URL") or DEFAULT_URL
        key = api_key if api_key is not None else os.environ.get("ORCH8_API_KEY") or None
        return cls(
            base_url=url.rstrip("/"),
            api_key=key,
            timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
            retry=retry or RetryPolicy(),
            headers=dict(headers or {}),
        )

    def request_headers(self) -> dict[str, str]:
        """Headers sent on every request: user agent, auth, then the caller's own."""
        out = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if self.api_key:
            out["Authorization"] = f"Bearer {self.api_key}"
        out.update(self.headers)
        return out

    def generated_client(self) -> GeneratedClient:
        """The generated client, used for parsing answers (it owns no connection here)."""
        return GeneratedClient(base_url=self.base_url, raise_on_unexpected_status=False)


@dataclass(frozen=True)
class Call:
    """One operation: a generated endpoint module, its arguments and how to send it."""

    endpoint: ModuleType
    args: dict[str, Any]
    safe: bool  # P-SDK-2: may be repeated automatically
    timeout: float | None = None  # overrides the client's timeout (long-polls)

    def request(self, config: ClientConfig) -> dict[str, Any]:
        """httpx.request keyword arguments, built by the generated module."""
        kwargs: dict[str, Any] = self.endpoint._get_kwargs(**self.args)
        kwargs["timeout"] = self.timeout if self.timeout is not None else config.timeout
        return kwargs

    def parse(self, client: GeneratedClient, response: httpx.Response) -> Any:
        """The typed answer of a 2xx response; any other status raises the mapped error."""
        if response.status_code >= 400:
            raise error_from_response(response)
        return self.endpoint._parse_response(client=client, response=response)


def retry_delay(
    call: Call, retry: int, policy: RetryPolicy, response: httpx.Response | None
) -> float | None:
    """Seconds to wait before repeating `call`, or None to stop (P-SDK-2).

    `response` None means a connection error or timeout. Only calls safe to repeat are
    retried, on connection errors and 429/502/503/504, honouring Retry-After.
    """
    if response is not None and response.status_code not in RETRY_STATUSES:
        return None
    if not call.safe or retry >= policy.max_retries:
        return None
    retry_after = (
        None if response is None else parse_retry_after(response.headers.get("retry-after"))
    )
    return policy.delay(retry, retry_after)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def error_from_response(response: httpx.Response) -> Orch8Error:
    """Map a problem+json answer to its exception by `code`, else by status (section 12)."""
    problem: dict[str, Any] | None = None
    try:
        body = response.json()
        if isinstance(body, dict):
            problem = body
    except ValueError:
        problem = None
    problem = problem or {}
    code = problem.get("code") if isinstance(problem.get("code"), str) else None
    detail = problem.get("detail") or problem.get("title") or response.reason_phrase
    cls = error_class(response.status_code, code)
    errors = problem.get("errors") if isinstance(problem.get("errors"), list) else []
    return cls(
        str(detail or f"HTTP {response.status_code}"),
        status=response.status_code,
        code=code,
        title=problem.get("title"),
        errors=errors,
        retry_after=parse_retry_after(response.headers.get("retry-after")),
        problem=problem or None,
    )


def connection_error(exc: httpx.HTTPError) -> UnavailableError:
    """A network failure (refused, reset, timed out) is UnavailableError `connection_error`."""
    return UnavailableError(f"{type(exc).__name__}: {exc}", code="connection_error")


def long_poll_timeout(wait_ms: int | None) -> float:
    """P-SDK-1: the long-poll's own budget plus 10 s."""
    return (DEFAULT_WAIT_MS if wait_ms is None else wait_ms) / 1000 + LONG_POLL_MARGIN
