from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.queue_stats_list import QueueStatsList
from ...types import UNSET, Response, Unset


def request_kwargs(
    *,
    queue_name: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["queue_name"] = queue_name

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/queues",
        "params": params,
    }

    return _kwargs


def parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | QueueStatsList:
    if response.status_code == 200:
        response_200 = QueueStatsList.from_dict(response.json())

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
) -> Response[Problem | QueueStatsList]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    queue_name: str | Unset = UNSET,
) -> Response[Problem | QueueStatsList]:
    """Depth and pollers per queue and handler

     One row per (queue, handler) with any unfinished or failed task, or an active poller.
    `pending > 0` with `active_pollers == 0` is the stuck-queue signal (P-OBS-1).
    `blocked` says why a row's pending tasks are not handed out (paused, a cap, or
    labels no live worker has; P-OBS-4); `queue_controls` and `handler_controls` list
    every pause and cap (P-CTRL-3).

    Args:
        queue_name (str | Unset): Named queue; tasks without one go to `default` (P-QUEUE-1).
            Example: gpu-workers.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | QueueStatsList]
    """

    kwargs = request_kwargs(
        queue_name=queue_name,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    queue_name: str | Unset = UNSET,
) -> Problem | QueueStatsList | None:
    """Depth and pollers per queue and handler

     One row per (queue, handler) with any unfinished or failed task, or an active poller.
    `pending > 0` with `active_pollers == 0` is the stuck-queue signal (P-OBS-1).
    `blocked` says why a row's pending tasks are not handed out (paused, a cap, or
    labels no live worker has; P-OBS-4); `queue_controls` and `handler_controls` list
    every pause and cap (P-CTRL-3).

    Args:
        queue_name (str | Unset): Named queue; tasks without one go to `default` (P-QUEUE-1).
            Example: gpu-workers.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | QueueStatsList
    """

    return sync_detailed(
        client=client,
        queue_name=queue_name,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    queue_name: str | Unset = UNSET,
) -> Response[Problem | QueueStatsList]:
    """Depth and pollers per queue and handler

     One row per (queue, handler) with any unfinished or failed task, or an active poller.
    `pending > 0` with `active_pollers == 0` is the stuck-queue signal (P-OBS-1).
    `blocked` says why a row's pending tasks are not handed out (paused, a cap, or
    labels no live worker has; P-OBS-4); `queue_controls` and `handler_controls` list
    every pause and cap (P-CTRL-3).

    Args:
        queue_name (str | Unset): Named queue; tasks without one go to `default` (P-QUEUE-1).
            Example: gpu-workers.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | QueueStatsList]
    """

    kwargs = request_kwargs(
        queue_name=queue_name,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    queue_name: str | Unset = UNSET,
) -> Problem | QueueStatsList | None:
    """Depth and pollers per queue and handler

     One row per (queue, handler) with any unfinished or failed task, or an active poller.
    `pending > 0` with `active_pollers == 0` is the stuck-queue signal (P-OBS-1).
    `blocked` says why a row's pending tasks are not handed out (paused, a cap, or
    labels no live worker has; P-OBS-4); `queue_controls` and `handler_controls` list
    every pause and cap (P-CTRL-3).

    Args:
        queue_name (str | Unset): Named queue; tasks without one go to `default` (P-QUEUE-1).
            Example: gpu-workers.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | QueueStatsList
    """

    return (
        await asyncio_detailed(
            client=client,
            queue_name=queue_name,
        )
    ).parsed
