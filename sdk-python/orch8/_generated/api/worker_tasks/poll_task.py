from http import HTTPStatus
from typing import Any, cast

import httpx

from ...client import AuthenticatedClient, Client
from ...models.claimed_task import ClaimedTask
from ...models.poll_options import PollOptions
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def request_kwargs(
    *,
    body: PollOptions | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/workers/tasks/poll",
    }

    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Any | ClaimedTask | Problem:
    if response.status_code == 200:
        response_200 = ClaimedTask.from_dict(response.json())

        return response_200

    if response.status_code == 204:
        response_204 = cast(Any, None)
        return response_204

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
) -> Response[Any | ClaimedTask | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: PollOptions | Unset = UNSET,
) -> Response[Any | ClaimedTask | Problem]:
    """Claim one task, long-polling up to wait_ms

     Claims the first matching task (priority, then FIFO; P-ORDER-1) and returns it
    with a new lease (P-LEASE-1). When none arrives within `wait_ms` the answer is
    204 No Content (P-POLL-1). A task enqueued while the poll waits is handed over at
    once (P-POLL-3). An empty body polls every handler on the default queue.
    `batch_size` is accepted as seed 000 documents it, but this call claims at most
    one task whatever its value and always answers one task or 204; claim several
    with `POST /workers/tasks/poll/batch` (P-POLL-8).
    `queue_names` (with optional `queue_weights`) polls several queues in strict or
    weighted order (P-QUEUE-2, P-QUEUE-3). Paused queues hand out nothing (P-CTRL-1),
    running caps hold (P-CTRL-2), and a task with `required_labels` goes only to a
    registered worker with those labels (P-LABEL-1).

    Args:
        body (PollOptions | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | ClaimedTask | Problem]
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
    body: PollOptions | Unset = UNSET,
) -> Any | ClaimedTask | Problem | None:
    """Claim one task, long-polling up to wait_ms

     Claims the first matching task (priority, then FIFO; P-ORDER-1) and returns it
    with a new lease (P-LEASE-1). When none arrives within `wait_ms` the answer is
    204 No Content (P-POLL-1). A task enqueued while the poll waits is handed over at
    once (P-POLL-3). An empty body polls every handler on the default queue.
    `batch_size` is accepted as seed 000 documents it, but this call claims at most
    one task whatever its value and always answers one task or 204; claim several
    with `POST /workers/tasks/poll/batch` (P-POLL-8).
    `queue_names` (with optional `queue_weights`) polls several queues in strict or
    weighted order (P-QUEUE-2, P-QUEUE-3). Paused queues hand out nothing (P-CTRL-1),
    running caps hold (P-CTRL-2), and a task with `required_labels` goes only to a
    registered worker with those labels (P-LABEL-1).

    Args:
        body (PollOptions | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | ClaimedTask | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: PollOptions | Unset = UNSET,
) -> Response[Any | ClaimedTask | Problem]:
    """Claim one task, long-polling up to wait_ms

     Claims the first matching task (priority, then FIFO; P-ORDER-1) and returns it
    with a new lease (P-LEASE-1). When none arrives within `wait_ms` the answer is
    204 No Content (P-POLL-1). A task enqueued while the poll waits is handed over at
    once (P-POLL-3). An empty body polls every handler on the default queue.
    `batch_size` is accepted as seed 000 documents it, but this call claims at most
    one task whatever its value and always answers one task or 204; claim several
    with `POST /workers/tasks/poll/batch` (P-POLL-8).
    `queue_names` (with optional `queue_weights`) polls several queues in strict or
    weighted order (P-QUEUE-2, P-QUEUE-3). Paused queues hand out nothing (P-CTRL-1),
    running caps hold (P-CTRL-2), and a task with `required_labels` goes only to a
    registered worker with those labels (P-LABEL-1).

    Args:
        body (PollOptions | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | ClaimedTask | Problem]
    """

    kwargs = request_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: PollOptions | Unset = UNSET,
) -> Any | ClaimedTask | Problem | None:
    """Claim one task, long-polling up to wait_ms

     Claims the first matching task (priority, then FIFO; P-ORDER-1) and returns it
    with a new lease (P-LEASE-1). When none arrives within `wait_ms` the answer is
    204 No Content (P-POLL-1). A task enqueued while the poll waits is handed over at
    once (P-POLL-3). An empty body polls every handler on the default queue.
    `batch_size` is accepted as seed 000 documents it, but this call claims at most
    one task whatever its value and always answers one task or 204; claim several
    with `POST /workers/tasks/poll/batch` (P-POLL-8).
    `queue_names` (with optional `queue_weights`) polls several queues in strict or
    weighted order (P-QUEUE-2, P-QUEUE-3). Paused queues hand out nothing (P-CTRL-1),
    running caps hold (P-CTRL-2), and a task with `required_labels` goes only to a
    registered worker with those labels (P-LABEL-1).

    Args:
        body (PollOptions | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | ClaimedTask | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
