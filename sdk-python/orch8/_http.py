"""What the sync and async clients share: configuration, safe retries and error mapping.

Requests are built and parsed by the generated endpoint modules (`request_kwargs` /
`parse_response` of orch8/_generated/api/...), called by the generated client methods
(orch8/_generated/_methods.py); this module decides timeouts, retries (P-SDK-2, P-SDK-16)
and how an error answer becomes an exception (protocol section 12).
"""

from __future__ import annotations

import datetime
import email.utils
import errno
import os
import random
import re
import time
import urllib.parse
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import httpx

from ._generated import Client as GeneratedClient
from ._generated import _constants as C
from ._generated.types import UNSET
from ._units import ms_option
from ._version import USER_AGENT
from .errors import Orch8Error, UnavailableError, error_class, is_outage

# The contract's numbers (x-orch8-constants, generated), under this module's older names.
DEFAULT_URL = C.DEFAULT_BASE_URL
DEFAULT_TIMEOUT_MS = C.REQUEST_TIMEOUT_MS  # P-SDK-1 per request
LONG_POLL_MARGIN_MS = C.LONG_POLL_MARGIN_MS  # P-SDK-1: a long-poll's timeout is its wait_ms + this
DEFAULT_WAIT_MS = C.DEFAULT_POLL_WAIT_MS  # P-POLL-2
MAX_CLIENT_RETRY_AFTER_MS = C.CLIENT_RETRY_AFTER_LIMIT_MS  # P-SDK-16: a longer one surfaces
RETRY_AFTER_BUDGET_MS = C.RETRY_AFTER_BUDGET_MS  # P-SDK-2: Retry-After one call may wait in all
TENANT_HEADER = "X-Tenant-Id"  # P-SDK-24
TENANT_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # P-TEN-2

# Marks an argument the caller did not give, where None would be a real JSON null.
OMIT: Any = UNSET


def jittered(delay_ms: float) -> float:
    """P-SDK-16: a server-given delay plus a random 0-10% of it."""
    return delay_ms + random.uniform(0, delay_ms * 0.1)


class RetryPolicy:
    """Client retries for calls safe to repeat (P-SDK-2): 3 retries, 200 ms doubling, cap 5 s."""

    __slots__ = ("base_delay_ms", "max_delay_ms", "max_retries")

    def __init__(
        self,
        max_retries: int = C.CLIENT_MAX_RETRIES,
        base_delay_ms: int | None = None,
        max_delay_ms: int | None = None,
        *,
        base_delay: float | None = None,
        max_delay: float | None = None,
    ) -> None:
        self.max_retries = max_retries
        self.base_delay_ms = ms_option(
            "RetryPolicy",
            "base_delay_ms",
            base_delay_ms,
            "base_delay",
            base_delay,
            C.CLIENT_RETRY_BASE_MS,
        )
        self.max_delay_ms = ms_option(
            "RetryPolicy",
            "max_delay_ms",
            max_delay_ms,
            "max_delay",
            max_delay,
            C.CLIENT_RETRY_CAP_MS,
        )

    def __repr__(self) -> str:
        return (
            f"RetryPolicy(max_retries={self.max_retries}, base_delay_ms={self.base_delay_ms},"
            f" max_delay_ms={self.max_delay_ms})"
        )

    def delay_ms(self, retry: int, retry_after_ms: float | None = None) -> float:
        """Milliseconds before retry number `retry` (0-based): Retry-After (+0-10%) or jitter."""
        if retry_after_ms is not None:
            return jittered(retry_after_ms)
        return random.uniform(0, min(self.max_delay_ms, self.base_delay_ms * 2**retry))


def check_base_url(url: str, source: str = "base_url") -> str:
    """P-SDK-1: an absolute http(s) URL with a host, else ValueError naming the value.

    `127.0.0.1:3001` or `localhost` would otherwise fail on every request as if the server
    were down, and be retried as an outage for ever.
    """
    try:
        parts = urllib.parse.urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except (TypeError, ValueError, AttributeError):  # not text, or a port not 1-65535
        ok = False
    if not ok:
        raise ValueError(
            f"{source} must be an absolute http:// or https:// URL with a host"
            f" (e.g. http://127.0.0.1:3001), got {url!r} (P-SDK-1)"
        )
    return url


def resolve_base_url(base_url: str | None) -> str:
    """P-SDK-1: `base_url`, else ORCH8_URL, else the default; checked (ValueError)."""
    if base_url is not None:
        return check_base_url(base_url).rstrip("/")
    env = os.environ.get("ORCH8_URL")
    if env:  # empty counts as unset, as for the other ORCH8_* variables
        return check_base_url(env, "ORCH8_URL").rstrip("/")
    return DEFAULT_URL


def check_tenant(tenant: str | None) -> str | None:
    """P-SDK-24: a tenant id as given, or ValueError when it cannot be one (P-TEN-2)."""
    if tenant is not None and not (isinstance(tenant, str) and TENANT_PATTERN.fullmatch(tenant)):
        raise ValueError(f"tenant must match ^[A-Za-z0-9_.-]{{1,64}}$ (P-TEN-2), got {tenant!r}")
    return tenant


@dataclass(frozen=True)
class ClientConfig:
    """Resolved settings of one client."""

    base_url: str
    api_key: str | None
    timeout_ms: int
    retry: RetryPolicy
    headers: dict[str, str] = field(default_factory=dict)
    tenant: str | None = None

    @classmethod
    def resolve(
        cls,
        base_url: str | None,
        api_key: str | None,
        timeout_ms: int | None,
        retry: RetryPolicy | None,
        headers: Mapping[str, str] | None,
        timeout: float | None = None,
        tenant: str | None = None,
    ) -> ClientConfig:
        """Arguments first, then ORCH8_URL / ORCH8_API_KEY / ORCH8_TENANT, then defaults.

        P-SDK-1 for the address (checked), key and timeouts; P-SDK-24 for the tenant. Both
        are checked here (ValueError) so a bad one fails when the client is built, before
        any request.
        """
        url = resolve_base_url(base_url)
        key = api_key if api_key is not None else os.environ.get("ORCH8_API_KEY") or None
        if tenant is None:
            tenant = os.environ.get("ORCH8_TENANT") or None
        return cls(
            base_url=url,
            api_key=key,
            timeout_ms=ms_option(
                "Orch8Client", "timeout_ms", timeout_ms, "timeout", timeout, DEFAULT_TIMEOUT_MS
            ),
            retry=retry or RetryPolicy(),
            headers=dict(headers or {}),
            tenant=check_tenant(tenant),
        )

    def request_headers(self) -> dict[str, str]:
        """Headers sent on every request: user agent, auth, tenant, then the caller's own."""
        out = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if self.api_key:
            out["Authorization"] = f"Bearer {self.api_key}"
        if self.tenant is not None:  # P-SDK-24: on every request, the worker's included
            out[TENANT_HEADER] = self.tenant
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
    safe: bool  # P-SDK-2: may be repeated automatically (x-orch8-retry)
    timeout_ms: int | None = None  # overrides the client's timeout (long-polls)

    def request(self, config: ClientConfig) -> dict[str, Any]:
        """httpx.request keyword arguments, built by the generated module."""
        kwargs: dict[str, Any] = self.endpoint.request_kwargs(**self.args)
        timeout_ms = self.timeout_ms if self.timeout_ms is not None else config.timeout_ms
        kwargs["timeout"] = timeout_ms / 1000
        return kwargs

    def parse(self, client: GeneratedClient, response: httpx.Response) -> Any:
        """The typed answer of a 2xx response; any other status raises the mapped error.

        A redirect is an error too (httpx does not follow them): parsed as an answer it gave
        None, which the worker then failed on (P-SDK-28, P-SDK-22: a 3xx is no success).
        """
        if not 200 <= response.status_code < 300:
            raise error_from_response(response)
        return self.endpoint.parse_response(client=client, response=response)


class Retries:
    """The automatic retries of one call (P-SDK-2, P-SDK-16); one instance per call.

    Only calls safe to repeat are retried, and only on outages. An answer with Retry-After
    is retried after that delay for as long as the Retry-After delays of this call add up
    to at most 30 s (a sustained 429 flood is ridden out for about 30 s); any other outage
    counts against the policy's `max_retries` (3). A single Retry-After over 30 s is never
    waited for: the error surfaces at once, carrying the delay.
    """

    __slots__ = ("backoffs", "call", "policy", "waited_after_ms")

    def __init__(self, call: Call, policy: RetryPolicy) -> None:
        self.call = call
        self.policy = policy
        self.backoffs = 0  # retries without Retry-After so far
        self.waited_after_ms = 0.0  # Retry-After delays waited so far

    def next_delay_ms(self, response: httpx.Response | None) -> float | None:
        """Milliseconds to wait before the next try, or None to stop.

        `response` None means a connection error or timeout.
        """
        if response is not None and not is_outage(response.status_code):
            return None
        if not self.call.safe or self.policy.max_retries <= 0:
            return None
        after = (
            None if response is None else parse_retry_after_ms(response.headers.get("retry-after"))
        )
        if after:  # a Retry-After of 0 ("now") counts as a plain retry, so the loop ends
            # P-SDK-2: the budget counts the delays the server asked for (the 0-10% jitter
            # aside), so one Retry-After of exactly 30 s is still waited for (P-SDK-16).
            if (
                after > MAX_CLIENT_RETRY_AFTER_MS
                or self.waited_after_ms + after > RETRY_AFTER_BUDGET_MS
            ):
                return None
            self.waited_after_ms += after
            return self.policy.delay_ms(0, after)
        if self.backoffs >= self.policy.max_retries:
            return None
        self.backoffs += 1
        return self.policy.delay_ms(self.backoffs - 1)


def parse_retry_after_ms(value: str | None) -> float | None:
    """Milliseconds from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value) * 1000)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when.timestamp() - time.time()) * 1000)


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
        retry_after_ms=parse_retry_after_ms(response.headers.get("retry-after")),
        problem=problem or None,
    )


def connection_error(exc: httpx.HTTPError, base_url: str) -> UnavailableError:
    """A network failure (refused, reset, timed out) is UnavailableError `connection_error`.

    P-SDK-22: the text names the request (its URL, else the server's) and the innermost
    cause (e.g. `ConnectionRefusedError: [Errno 111] Connection refused (ECONNREFUSED)`),
    not only httpx's wrapper.
    """
    try:
        where = f"{exc.request.method} {exc.request.url}"
    except RuntimeError:  # an error raised before a request existed
        where = base_url
    return UnavailableError(f"{where} failed: {innermost_cause(exc)}", code="connection_error")


def innermost_cause(exc: BaseException) -> str:
    """`Type: text` of the deepest exception in the cause chain, with the errno's name."""
    seen = {id(exc)}
    while True:
        inner = exc.__cause__ or exc.__context__
        if inner is None or id(inner) in seen:
            break
        seen.add(id(inner))
        exc = inner
    text = str(exc) or "no message"
    code = getattr(exc, "errno", None)
    if isinstance(code, int) and code in errno.errorcode:
        text = f"{text} ({errno.errorcode[code]})"
    if isinstance(exc, TimeoutError) and "timed out" not in text:
        text = f"{text} (timed out)"
    return f"{type(exc).__name__}: {text}"


def long_poll_timeout(wait_ms: int | None) -> int:
    """P-SDK-1: the long-poll's own budget plus 10 s, in milliseconds."""
    return (DEFAULT_WAIT_MS if wait_ms is None else wait_ms) + LONG_POLL_MARGIN_MS


# --- helpers of the generated client methods (orch8/_generated/_methods.py) --------------


def iso(value: datetime.datetime | str) -> str:
    """A timestamp argument as RFC 3339 text."""
    return value.isoformat() if isinstance(value, datetime.datetime) else value


def check_items(
    method: str, items: Iterable[Mapping[str, Any]], allowed: Sequence[str], required: Sequence[str]
) -> list[dict[str, Any]]:
    """Batch items as JSON objects; unknown or missing keys raise TypeError (issue 14)."""
    out: list[dict[str, Any]] = []
    known = set(allowed)
    for n, item in enumerate(items):
        unknown = sorted(set(item) - known)
        if unknown:
            raise TypeError(
                f"{method}() item {n}: unexpected key(s) {', '.join(map(repr, unknown))};"
                f" allowed: {', '.join(allowed)}"
            )
        missing = [k for k in required if item.get(k) is None]
        if missing:
            raise TypeError(f"{method}() item {n}: missing required key(s) {', '.join(missing)}")
        out.append({k: iso(v) if isinstance(v, datetime.datetime) else v for k, v in item.items()})
    return out


def warn_deprecated(method: str, name: str) -> None:
    """A deprecated wire field given to a client method (decisions A: one name per concept)."""
    warnings.warn(
        f"{method}(): {name} is deprecated in the contract", DeprecationWarning, stacklevel=3
    )
