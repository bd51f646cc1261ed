from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.instance import Instance
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def request_kwargs(
    instance_id: str,
    *,
    wait_ms: int | Unset = 0,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["wait_ms"] = wait_ms

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/instances/{instance_id}".format(
            instance_id=quote(str(instance_id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Instance | Problem:
    if response.status_code == 200:
        response_200 = Instance.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

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
    wait_ms: int | Unset = 0,
) -> Response[Instance | Problem]:
    """Get an instance, optionally waiting until it is final

     With `wait_ms`, answers as soon as the instance is completed, failed or cancelled,
    or when the wait ends; the current state either way (P-WF-9).

    Args:
        instance_id (str):  Example: inst_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        wait_ms (int | Unset):  Default: 0.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Instance | Problem]
    """

    kwargs = request_kwargs(
        instance_id=instance_id,
        wait_ms=wait_ms,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    instance_id: str,
    *,
    client: AuthenticatedClient | Client,
    wait_ms: int | Unset = 0,
) -> Instance | Problem | None:
    """Get an instance, optionally waiting until it is final

     With `wait_ms`, answers as soon as the instance is completed, failed or cancelled,
    or when the wait ends; the current state either way (P-WF-9).

    Args:
        instance_id (str):  Example: inst_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        wait_ms (int | Unset):  Default: 0.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Instance | Problem
    """

    return sync_detailed(
        instance_id=instance_id,
        client=client,
        wait_ms=wait_ms,
    ).parsed


async def asyncio_detailed(
    instance_id: str,
    *,
    client: AuthenticatedClient | Client,
    wait_ms: int | Unset = 0,
) -> Response[Instance | Problem]:
    """Get an instance, optionally waiting until it is final

     With `wait_ms`, answers as soon as the instance is completed, failed or cancelled,
    or when the wait ends; the current state either way (P-WF-9).

    Args:
        instance_id (str):  Example: inst_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        wait_ms (int | Unset):  Default: 0.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Instance | Problem]
    """

    kwargs = request_kwargs(
        instance_id=instance_id,
        wait_ms=wait_ms,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    instance_id: str,
    *,
    client: AuthenticatedClient | Client,
    wait_ms: int | Unset = 0,
) -> Instance | Problem | None:
    """Get an instance, optionally waiting until it is final

     With `wait_ms`, answers as soon as the instance is completed, failed or cancelled,
    or when the wait ends; the current state either way (P-WF-9).

    Args:
        instance_id (str):  Example: inst_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        wait_ms (int | Unset):  Default: 0.

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
            wait_ms=wait_ms,
        )
    ).parsed
