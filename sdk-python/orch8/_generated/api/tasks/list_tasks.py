import datetime
from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.task_page import TaskPage
from ...models.task_status import TaskStatus
from ...types import UNSET, Response, Unset


def request_kwargs(
    *,
    status: list[TaskStatus] | Unset = UNSET,
    handler_name: str | Unset = UNSET,
    queue_name: str | Unset = UNSET,
    worker_id: str | Unset = UNSET,
    instance_id: str | Unset = UNSET,
    created_after: datetime.datetime | Unset = UNSET,
    created_before: datetime.datetime | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_status: list[str] | Unset = UNSET
    if not isinstance(status, Unset):
        json_status = []
        for status_item_data in status:
            status_item: str = status_item_data
            json_status.append(status_item)

    params["status"] = json_status

    params["handler_name"] = handler_name

    params["queue_name"] = queue_name

    params["worker_id"] = worker_id

    params["instance_id"] = instance_id

    json_created_after: str | Unset = UNSET
    if not isinstance(created_after, Unset):
        json_created_after = created_after.isoformat()
    params["created_after"] = json_created_after

    json_created_before: str | Unset = UNSET
    if not isinstance(created_before, Unset):
        json_created_before = created_before.isoformat()
    params["created_before"] = json_created_before

    params["limit"] = limit

    params["cursor"] = cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/tasks",
        "params": params,
    }

    return _kwargs


def parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | TaskPage:
    if response.status_code == 200:
        response_200 = TaskPage.from_dict(response.json())

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
) -> Response[Problem | TaskPage]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    status: list[TaskStatus] | Unset = UNSET,
    handler_name: str | Unset = UNSET,
    queue_name: str | Unset = UNSET,
    worker_id: str | Unset = UNSET,
    instance_id: str | Unset = UNSET,
    created_after: datetime.datetime | Unset = UNSET,
    created_before: datetime.datetime | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,
) -> Response[Problem | TaskPage]:
    """List tasks, newest first, with filters and cursor pagination

    Args:
        status (list[TaskStatus] | Unset):
        handler_name (str | Unset):  Example: process_image.
        queue_name (str | Unset): Named queue; tasks without one go to `default` (P-QUEUE-1).
            Example: gpu-workers.
        worker_id (str | Unset): Stable identifier of one worker process. Example: img-worker-1.
        instance_id (str | Unset):  Example: inst_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        created_after (datetime.datetime | Unset):
        created_before (datetime.datetime | Unset):
        limit (int | Unset):  Default: 50.
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | TaskPage]
    """

    kwargs = request_kwargs(
        status=status,
        handler_name=handler_name,
        queue_name=queue_name,
        worker_id=worker_id,
        instance_id=instance_id,
        created_after=created_after,
        created_before=created_before,
        limit=limit,
        cursor=cursor,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    status: list[TaskStatus] | Unset = UNSET,
    handler_name: str | Unset = UNSET,
    queue_name: str | Unset = UNSET,
    worker_id: str | Unset = UNSET,
    instance_id: str | Unset = UNSET,
    created_after: datetime.datetime | Unset = UNSET,
    created_before: datetime.datetime | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,
) -> Problem | TaskPage | None:
    """List tasks, newest first, with filters and cursor pagination

    Args:
        status (list[TaskStatus] | Unset):
        handler_name (str | Unset):  Example: process_image.
        queue_name (str | Unset): Named queue; tasks without one go to `default` (P-QUEUE-1).
            Example: gpu-workers.
        worker_id (str | Unset): Stable identifier of one worker process. Example: img-worker-1.
        instance_id (str | Unset):  Example: inst_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        created_after (datetime.datetime | Unset):
        created_before (datetime.datetime | Unset):
        limit (int | Unset):  Default: 50.
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | TaskPage
    """

    return sync_detailed(
        client=client,
        status=status,
        handler_name=handler_name,
        queue_name=queue_name,
        worker_id=worker_id,
        instance_id=instance_id,
        created_after=created_after,
        created_before=created_before,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    status: list[TaskStatus] | Unset = UNSET,
    handler_name: str | Unset = UNSET,
    queue_name: str | Unset = UNSET,
    worker_id: str | Unset = UNSET,
    instance_id: str | Unset = UNSET,
    created_after: datetime.datetime | Unset = UNSET,
    created_before: datetime.datetime | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,
) -> Response[Problem | TaskPage]:
    """List tasks, newest first, with filters and cursor pagination

    Args:
        status (list[TaskStatus] | Unset):
        handler_name (str | Unset):  Example: process_image.
        queue_name (str | Unset): Named queue; tasks without one go to `default` (P-QUEUE-1).
            Example: gpu-workers.
        worker_id (str | Unset): Stable identifier of one worker process. Example: img-worker-1.
        instance_id (str | Unset):  Example: inst_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        created_after (datetime.datetime | Unset):
        created_before (datetime.datetime | Unset):
        limit (int | Unset):  Default: 50.
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | TaskPage]
    """

    kwargs = request_kwargs(
        status=status,
        handler_name=handler_name,
        queue_name=queue_name,
        worker_id=worker_id,
        instance_id=instance_id,
        created_after=created_after,
        created_before=created_before,
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    status: list[TaskStatus] | Unset = UNSET,
    handler_name: str | Unset = UNSET,
    queue_name: str | Unset = UNSET,
    worker_id: str | Unset = UNSET,
    instance_id: str | Unset = UNSET,
    created_after: datetime.datetime | Unset = UNSET,
    created_before: datetime.datetime | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,
) -> Problem | TaskPage | None:
    """List tasks, newest first, with filters and cursor pagination

    Args:
        status (list[TaskStatus] | Unset):
        handler_name (str | Unset):  Example: process_image.
        queue_name (str | Unset): Named queue; tasks without one go to `default` (P-QUEUE-1).
            Example: gpu-workers.
        worker_id (str | Unset): Stable identifier of one worker process. Example: img-worker-1.
        instance_id (str | Unset):  Example: inst_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        created_after (datetime.datetime | Unset):
        created_before (datetime.datetime | Unset):
        limit (int | Unset):  Default: 50.
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | TaskPage
    """

    return (
        await asyncio_detailed(
            client=client,
            status=status,
            handler_name=handler_name,
            queue_name=queue_name,
            worker_id=worker_id,
            instance_id=instance_id,
            created_after=created_after,
            created_before=created_before,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
