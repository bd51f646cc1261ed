from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.queue_history import QueueHistory
from ...types import UNSET, Response, Unset


def request_kwargs(
    queue_name: str,
    *,
    minutes: int | Unset = 60,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["minutes"] = minutes

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/queues/{queue_name}/history".format(
            queue_name=quote(str(queue_name), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | QueueHistory:
    if response.status_code == 200:
        response_200 = QueueHistory.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())

        return response_422

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    response_default = Problem.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Problem | QueueHistory]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=parse_response(client=client, response=response),
    )


def sync_detailed(
    queue_name: str,
    *,
    client: AuthenticatedClient | Client,
    minutes: int | Unset = 60,
) -> Response[Problem | QueueHistory]:
    """The queue's last hour, one point per minute

     Enqueued, completed and failed per minute, pending depth, and p50/p95 queue wait
    (P-OBS-5). The server keeps this rolling window itself (no external service), for
    every replica on PostgreSQL. A queue without traffic answers points of zeros.

    Args:
        queue_name (str): Named queue; tasks without one go to `default` (P-QUEUE-1). Example:
            gpu-workers.
        minutes (int | Unset):  Default: 60.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | QueueHistory]
    """

    kwargs = request_kwargs(
        queue_name=queue_name,
        minutes=minutes,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    queue_name: str,
    *,
    client: AuthenticatedClient | Client,
    minutes: int | Unset = 60,
) -> Problem | QueueHistory | None:
    """The queue's last hour, one point per minute

     Enqueued, completed and failed per minute, pending depth, and p50/p95 queue wait
    (P-OBS-5). The server keeps this rolling window itself (no external service), for
    every replica on PostgreSQL. A queue without traffic answers points of zeros.

    Args:
        queue_name (str): Named queue; tasks without one go to `default` (P-QUEUE-1). Example:
            gpu-workers.
        minutes (int | Unset):  Default: 60.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | QueueHistory
    """

    return sync_detailed(
        queue_name=queue_name,
        client=client,
        minutes=minutes,
    ).parsed


async def asyncio_detailed(
    queue_name: str,
    *,
    client: AuthenticatedClient | Client,
    minutes: int | Unset = 60,
) -> Response[Problem | QueueHistory]:
    """The queue's last hour, one point per minute

     Enqueued, completed and failed per minute, pending depth, and p50/p95 queue wait
    (P-OBS-5). The server keeps this rolling window itself (no external service), for
    every replica on PostgreSQL. A queue without traffic answers points of zeros.

    Args:
        queue_name (str): Named queue; tasks without one go to `default` (P-QUEUE-1). Example:
            gpu-workers.
        minutes (int | Unset):  Default: 60.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | QueueHistory]
    """

    kwargs = request_kwargs(
        queue_name=queue_name,
        minutes=minutes,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    queue_name: str,
    *,
    client: AuthenticatedClient | Client,
    minutes: int | Unset = 60,
) -> Problem | QueueHistory | None:
    """The queue's last hour, one point per minute

     Enqueued, completed and failed per minute, pending depth, and p50/p95 queue wait
    (P-OBS-5). The server keeps this rolling window itself (no external service), for
    every replica on PostgreSQL. A queue without traffic answers points of zeros.

    Args:
        queue_name (str): Named queue; tasks without one go to `default` (P-QUEUE-1). Example:
            gpu-workers.
        minutes (int | Unset):  Default: 60.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | QueueHistory
    """

    return (
        await asyncio_detailed(
            queue_name=queue_name,
            client=client,
            minutes=minutes,
        )
    ).parsed
