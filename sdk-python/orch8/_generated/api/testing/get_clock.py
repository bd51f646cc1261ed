from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.clock import Clock
from ...models.problem import Problem
from ...types import Response


def request_kwargs() -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/clock",
    }

    return _kwargs


def parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Clock | Problem:
    if response.status_code == 200:
        response_200 = Clock.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    response_default = Problem.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Clock | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
) -> Response[Clock | Problem]:
    """The server's clock and its next timer (admin only)

     The time the server's rules read (P-CLOCK-1): the system clock, or on a server
    started with `--test-clock` a clock that stands still until advanced. Only `admin`
    keys (or any caller of a server without keys).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Clock | Problem]
    """

    kwargs = request_kwargs()

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
) -> Clock | Problem | None:
    """The server's clock and its next timer (admin only)

     The time the server's rules read (P-CLOCK-1): the system clock, or on a server
    started with `--test-clock` a clock that stands still until advanced. Only `admin`
    keys (or any caller of a server without keys).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Clock | Problem
    """

    return sync_detailed(
        client=client,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
) -> Response[Clock | Problem]:
    """The server's clock and its next timer (admin only)

     The time the server's rules read (P-CLOCK-1): the system clock, or on a server
    started with `--test-clock` a clock that stands still until advanced. Only `admin`
    keys (or any caller of a server without keys).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Clock | Problem]
    """

    kwargs = request_kwargs()

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
) -> Clock | Problem | None:
    """The server's clock and its next timer (admin only)

     The time the server's rules read (P-CLOCK-1): the system clock, or on a server
    started with `--test-clock` a clock that stands still until advanced. Only `admin`
    keys (or any caller of a server without keys).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Clock | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
        )
    ).parsed
