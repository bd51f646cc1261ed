from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.task import Task
from ...models.task_cancellation import TaskCancellation
from ...types import UNSET, Response, Unset


def request_kwargs(
    task_id: str,
    *,
    body: TaskCancellation | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/tasks/{task_id}/cancel".format(
            task_id=quote(str(task_id), safe=""),
        ),
    }

    if not isinstance(body, Unset):
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

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())

        return response_409

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
) -> Response[Problem | Task]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=parse_response(client=client, response=response),
    )


def sync_detailed(
    task_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: TaskCancellation | Unset = UNSET,
) -> Response[Problem | Task]:
    """Cancel a task

     A pending or scheduled task is cancelled at once. A running task is cancelled too;
    its worker learns it through its next worker heartbeat (`cancel_requested`) or a
    409 `task_cancelled` on its task heartbeat, and a later
    complete or fail gets 409 `task_cancelled` (P-CANCEL-1, P-CANCEL-2). Cancelling a
    cancelled task is a no-op; a finished task gives 409 `invalid_state`.

    Args:
        task_id (str): Server-assigned id, `task_` + a time-ordered ULID. Example:
            task_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        body (TaskCancellation | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Task]
    """

    kwargs = request_kwargs(
        task_id=task_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    task_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: TaskCancellation | Unset = UNSET,
) -> Problem | Task | None:
    """Cancel a task

     A pending or scheduled task is cancelled at once. A running task is cancelled too;
    its worker learns it through its next worker heartbeat (`cancel_requested`) or a
    409 `task_cancelled` on its task heartbeat, and a later
    complete or fail gets 409 `task_cancelled` (P-CANCEL-1, P-CANCEL-2). Cancelling a
    cancelled task is a no-op; a finished task gives 409 `invalid_state`.

    Args:
        task_id (str): Server-assigned id, `task_` + a time-ordered ULID. Example:
            task_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        body (TaskCancellation | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Task
    """

    return sync_detailed(
        task_id=task_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    task_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: TaskCancellation | Unset = UNSET,
) -> Response[Problem | Task]:
    """Cancel a task

     A pending or scheduled task is cancelled at once. A running task is cancelled too;
    its worker learns it through its next worker heartbeat (`cancel_requested`) or a
    409 `task_cancelled` on its task heartbeat, and a later
    complete or fail gets 409 `task_cancelled` (P-CANCEL-1, P-CANCEL-2). Cancelling a
    cancelled task is a no-op; a finished task gives 409 `invalid_state`.

    Args:
        task_id (str): Server-assigned id, `task_` + a time-ordered ULID. Example:
            task_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        body (TaskCancellation | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Task]
    """

    kwargs = request_kwargs(
        task_id=task_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    task_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: TaskCancellation | Unset = UNSET,
) -> Problem | Task | None:
    """Cancel a task

     A pending or scheduled task is cancelled at once. A running task is cancelled too;
    its worker learns it through its next worker heartbeat (`cancel_requested`) or a
    409 `task_cancelled` on its task heartbeat, and a later
    complete or fail gets 409 `task_cancelled` (P-CANCEL-1, P-CANCEL-2). Cancelling a
    cancelled task is a no-op; a finished task gives 409 `invalid_state`.

    Args:
        task_id (str): Server-assigned id, `task_` + a time-ordered ULID. Example:
            task_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        body (TaskCancellation | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Task
    """

    return (
        await asyncio_detailed(
            task_id=task_id,
            client=client,
            body=body,
        )
    ).parsed
