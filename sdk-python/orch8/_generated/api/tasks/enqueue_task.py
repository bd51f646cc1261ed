from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.new_task import NewTask
from ...models.problem import Problem
from ...models.task import Task
from ...types import Response


def request_kwargs(
    *,
    body: NewTask,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/tasks",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | Task:
    if response.status_code == 200:
        response_200 = Task.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = Task.from_dict(response.json())

        return response_201

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

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    response_default = Problem.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Problem | Task]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: NewTask,
) -> Response[Problem | Task]:
    """Enqueue one task

     Creates a task (P-TASK-1). With an `idempotency_key` that already names a task,
    the existing task is returned with status 200 and nothing is created (P-TASK-3).

    Args:
        body (NewTask):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Task]
    """

    kwargs = request_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    body: NewTask,
) -> Problem | Task | None:
    """Enqueue one task

     Creates a task (P-TASK-1). With an `idempotency_key` that already names a task,
    the existing task is returned with status 200 and nothing is created (P-TASK-3).

    Args:
        body (NewTask):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Task
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: NewTask,
) -> Response[Problem | Task]:
    """Enqueue one task

     Creates a task (P-TASK-1). With an `idempotency_key` that already names a task,
    the existing task is returned with status 200 and nothing is created (P-TASK-3).

    Args:
        body (NewTask):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Task]
    """

    kwargs = request_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: NewTask,
) -> Problem | Task | None:
    """Enqueue one task

     Creates a task (P-TASK-1). With an `idempotency_key` that already names a task,
    the existing task is returned with status 200 and nothing is created (P-TASK-3).

    Args:
        body (NewTask):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Task
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
