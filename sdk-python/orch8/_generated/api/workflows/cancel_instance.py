from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.instance import Instance
from ...models.problem import Problem
from ...models.task_cancellation import TaskCancellation
from ...types import UNSET, Response, Unset


def request_kwargs(
    instance_id: str,
    *,
    body: TaskCancellation | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/instances/{instance_id}/cancel".format(
            instance_id=quote(str(instance_id), safe=""),
        ),
    }

    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Instance | Problem:
    if response.status_code == 200:
        response_200 = Instance.from_dict(response.json())

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
) -> Response[Instance | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=parse_response(client=client, response=response),
    )


def sync_detailed(
    instance_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: TaskCancellation | Unset = UNSET,
) -> Response[Instance | Problem]:
    """Cancel a running instance

     The instance becomes cancelled and the running step's tasks are cancelled as by
    `cancelTask`: a worker holding one learns it from its heartbeat (P-WF-7,
    P-CANCEL-2). Cancelling a cancelled instance returns it; a completed or failed
    one is 409 `invalid_state`.

    Args:
        instance_id (str):  Example: inst_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        body (TaskCancellation | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Instance | Problem]
    """

    kwargs = request_kwargs(
        instance_id=instance_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    instance_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: TaskCancellation | Unset = UNSET,
) -> Instance | Problem | None:
    """Cancel a running instance

     The instance becomes cancelled and the running step's tasks are cancelled as by
    `cancelTask`: a worker holding one learns it from its heartbeat (P-WF-7,
    P-CANCEL-2). Cancelling a cancelled instance returns it; a completed or failed
    one is 409 `invalid_state`.

    Args:
        instance_id (str):  Example: inst_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        body (TaskCancellation | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Instance | Problem
    """

    return sync_detailed(
        instance_id=instance_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    instance_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: TaskCancellation | Unset = UNSET,
) -> Response[Instance | Problem]:
    """Cancel a running instance

     The instance becomes cancelled and the running step's tasks are cancelled as by
    `cancelTask`: a worker holding one learns it from its heartbeat (P-WF-7,
    P-CANCEL-2). Cancelling a cancelled instance returns it; a completed or failed
    one is 409 `invalid_state`.

    Args:
        instance_id (str):  Example: inst_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        body (TaskCancellation | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Instance | Problem]
    """

    kwargs = request_kwargs(
        instance_id=instance_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    instance_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: TaskCancellation | Unset = UNSET,
) -> Instance | Problem | None:
    """Cancel a running instance

     The instance becomes cancelled and the running step's tasks are cancelled as by
    `cancelTask`: a worker holding one learns it from its heartbeat (P-WF-7,
    P-CANCEL-2). Cancelling a cancelled instance returns it; a completed or failed
    one is 409 `invalid_state`.

    Args:
        instance_id (str):  Example: inst_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        body (TaskCancellation | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Instance | Problem
    """

    return (
        await asyncio_detailed(
            instance_id=instance_id,
            client=client,
            body=body,
        )
    ).parsed
