from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.queue_control import QueueControl
from ...models.running_limit import RunningLimit
from ...types import Response


def request_kwargs(
    queue_name: str,
    *,
    body: RunningLimit,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/queues/{queue_name}/limit".format(
            queue_name=quote(str(queue_name), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | QueueControl:
    if response.status_code == 200:
        response_200 = QueueControl.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = Problem.from_dict(response.json())

        return response_415

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
    body: RunningLimit,
) -> Response[Problem | QueueControl]:
    """Operator - cap the queue's running tasks

     At most `max_running` tasks of this queue run at once, across every replica; a
    claim that would pass the cap claims fewer or none (P-CTRL-2). `null` removes the
    cap. Lowering the cap below the running count stops no running task: claims wait
    until running tasks finish.

    Args:
        queue_name (str): Named queue; tasks without one go to `default` (P-QUEUE-1). Example:
            gpu-workers.
        body (RunningLimit):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | QueueControl]
    """

    kwargs = request_kwargs(
        queue_name=queue_name,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    queue_name: str,
    *,
    client: AuthenticatedClient | Client,
    body: RunningLimit,
) -> Problem | QueueControl | None:
    """Operator - cap the queue's running tasks

     At most `max_running` tasks of this queue run at once, across every replica; a
    claim that would pass the cap claims fewer or none (P-CTRL-2). `null` removes the
    cap. Lowering the cap below the running count stops no running task: claims wait
    until running tasks finish.

    Args:
        queue_name (str): Named queue; tasks without one go to `default` (P-QUEUE-1). Example:
            gpu-workers.
        body (RunningLimit):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | QueueControl
    """

    return sync_detailed(
        queue_name=queue_name,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    queue_name: str,
    *,
    client: AuthenticatedClient | Client,
    body: RunningLimit,
) -> Response[Problem | QueueControl]:
    """Operator - cap the queue's running tasks

     At most `max_running` tasks of this queue run at once, across every replica; a
    claim that would pass the cap claims fewer or none (P-CTRL-2). `null` removes the
    cap. Lowering the cap below the running count stops no running task: claims wait
    until running tasks finish.

    Args:
        queue_name (str): Named queue; tasks without one go to `default` (P-QUEUE-1). Example:
            gpu-workers.
        body (RunningLimit):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | QueueControl]
    """

    kwargs = request_kwargs(
        queue_name=queue_name,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    queue_name: str,
    *,
    client: AuthenticatedClient | Client,
    body: RunningLimit,
) -> Problem | QueueControl | None:
    """Operator - cap the queue's running tasks

     At most `max_running` tasks of this queue run at once, across every replica; a
    claim that would pass the cap claims fewer or none (P-CTRL-2). `null` removes the
    cap. Lowering the cap below the running count stops no running task: claims wait
    until running tasks finish.

    Args:
        queue_name (str): Named queue; tasks without one go to `default` (P-QUEUE-1). Example:
            gpu-workers.
        body (RunningLimit):

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
            body=body,
        )
    ).parsed
