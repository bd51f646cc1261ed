"""The worker's two per-task calls, poll and complete batch, read and written as plain JSON.

The generated models turn each claimed task into nested objects and parse four timestamps
with dateutil: about a quarter of the worker's CPU per task (py-spy, no-op handler), for
the few fields a TaskContext needs. Here the answer's dicts are read directly and only the
lease deadline is parsed. The requests still go through the client's `_run` (headers,
retries of P-SDK-2, error mapping of P-SDK-15/16), like the generated methods' calls.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

import httpx
from dateutil.parser import isoparse  # type: ignore[import-untyped]

from .._http import Call, long_poll_timeout

if TYPE_CHECKING:
    from ..async_client import AsyncOrch8Client

# The zone dateutil's isoparse (the generated models' parser) gives a trailing Z.
_UTC = isoparse("2000-01-01T00:00:00Z").tzinfo


class _Endpoint:
    """Stands in for a generated endpoint module in a Call: a JSON body, a JSON answer.

    `url` is the path under the base URL, joined once by the client (`_absolute`).
    """

    def __init__(self, url: str) -> None:
        self.url = url

    def request_kwargs(self, *, body: dict[str, Any], url: httpx.URL) -> dict[str, Any]:
        return {
            "method": "post",
            "url": url,
            "json": body,
            "headers": {"Content-Type": "application/json"},
        }

    def parse_response(self, *, client: object, response: httpx.Response) -> Any:
        return response.json()


_POLL = cast(ModuleType, _Endpoint("/workers/tasks/poll/batch"))  # pollTasks
_COMPLETE = cast(ModuleType, _Endpoint("/workers/tasks/complete/batch"))  # completeTasks


async def poll(client: AsyncOrch8Client, body: dict[str, Any]) -> dict[str, Any]:
    """The answer of POST /workers/tasks/poll/batch (`tasks`, `next_poll_after_ms`).

    `body` is a PollBatchOptions; keys whose value is None are left out.
    """
    sent = {k: _plain(v) for k, v in body.items() if v is not None}
    call = Call(
        _POLL,
        {"body": sent, "url": client._absolute(_POLL.url)},
        safe=False,
        timeout_ms=long_poll_timeout(sent.get("wait_ms")),
    )
    return cast("dict[str, Any]", await client._run(call))


async def complete(client: AsyncOrch8Client, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items of POST /workers/tasks/complete/batch's BatchOutcome, in request order."""
    call = Call(
        _COMPLETE, {"body": {"items": items}, "url": client._absolute(_COMPLETE.url)}, safe=True
    )
    return cast("list[dict[str, Any]]", (await client._run(call))["items"])


def _plain(value: Any) -> Any:
    """Sequences and mappings of the settings as JSON arrays and objects."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (list, tuple)):
        return list(value)
    return value


@functools.lru_cache(maxsize=256)  # a poll's tasks share their lease's expiry
def timestamp(value: str) -> datetime.datetime:
    """An RFC 3339 timestamp, equal to dateutil's isoparse (tzinfo included).

    The server writes UTC with a trailing Z, which `fromisoformat` reads only from Python
    3.11: the Z is cut and the zone set here; anything else goes to isoparse.
    """
    if value.endswith("Z"):
        try:
            naive = datetime.datetime.fromisoformat(value[:-1])
        except ValueError:
            naive = None
        if naive is not None and naive.tzinfo is None:
            return naive.replace(tzinfo=_UTC)
    return cast(datetime.datetime, isoparse(value))
