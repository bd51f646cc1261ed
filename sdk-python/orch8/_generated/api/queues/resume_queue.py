from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.queue_control import QueueControl
from ...types import Response


def request_kwargs(
    queue_name: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/queues/{queue_name}/resume".format(
            queue_name=quote(str(queue_name), safe=""),
        ),
    }

    return _kwargs


def parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | QueueControl:
    if response.status_code == 200:
        response_200 = QueueControl.from_dict(response.json())

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
) -> Response[Problem | QueueControl]:
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
) -> Response[Problem | QueueControl]:
    """Operator - hand out the queue's tasks again

     Ends a pause and wakes the polls waiting for the queue at once (P-CTRL-1).
    Resuming a queue that is not paused changes nothing.

    Args:
        queue_name (str): Named queue; tasks without one go to `default` (P-QUEUE-1). Example:
            gpu-workers.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | QueueControl]
    """

    kwargs = request_kwargs(
        queue_name=queue_name,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    queue_name: str,
    *,
    client: AuthenticatedClient | Client,
) -> Problem | QueueControl | None:
    """Operator - hand out the queue's tasks again

     Ends a pause and wakes the polls waiting for the queue at once (P-CTRL-1).
    Resuming a queue that is not paused changes nothing.

    Args:
        queue_name (str): Named queue; tasks without one go to `default` (P-QUEUE-1). Example:
            gpu-workers.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | QueueControl
    """

    return sync_detailed(
        queue_name=queue_name,
        client=client,
    ).parsed


async def asyncio_detailed(
    queue_name: str,
    *,
    client: AuthenticatedClient | Client,
) -> Response[Problem | QueueControl]:
    """Operator - hand out the queue's tasks again

     Ends a pause and wakes the polls waiting for the queue at once (P-CTRL-1).
    Resuming a queue that is not paused changes nothing.

    Args:
        queue_name (str): Named queue; tasks without one go to `default` (P-QUEUE-1). Example:
            gpu-workers.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | QueueControl]
    """

    kwargs = request_kwargs(
        queue_name=queue_name,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    queue_name: str,
    *,
    client: AuthenticatedClient | Client,
) -> Problem | QueueControl | None:
    """Operator - hand out the queue's tasks again

     Ends a pause and wakes the polls waiting for the queue at once (P-CTRL-1).
    Resuming a queue that is not paused changes nothing.

    Args:
        queue_name (str): Named queue; tasks without one go to `default` (P-QUEUE-1). Example:
            gpu-workers.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | QueueControl
    """

    return (
        await asyncio_detailed(
            queue_name=queue_name,
            client=client,
        )
    ).parsed
