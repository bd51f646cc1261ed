from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.tenant_list import TenantList
from ...types import Response


def request_kwargs() -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/tenants",
    }

    return _kwargs


def parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | TenantList:
    if response.status_code == 200:
        response_200 = TenantList.from_dict(response.json())

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
) -> Response[Problem | TenantList]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
) -> Response[Problem | TenantList]:
    """Tenants that have tasks or workers (admin only)

     Every tenant with at least one stored task or registered worker, with counts, in
    tenant order (P-TEN-4). Only `admin` keys (or any caller of a server without keys).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | TenantList]
    """

    kwargs = request_kwargs()

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
) -> Problem | TenantList | None:
    """Tenants that have tasks or workers (admin only)

     Every tenant with at least one stored task or registered worker, with counts, in
    tenant order (P-TEN-4). Only `admin` keys (or any caller of a server without keys).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | TenantList
    """

    return sync_detailed(
        client=client,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
) -> Response[Problem | TenantList]:
    """Tenants that have tasks or workers (admin only)

     Every tenant with at least one stored task or registered worker, with counts, in
    tenant order (P-TEN-4). Only `admin` keys (or any caller of a server without keys).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | TenantList]
    """

    kwargs = request_kwargs()

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
) -> Problem | TenantList | None:
    """Tenants that have tasks or workers (admin only)

     Every tenant with at least one stored task or registered worker, with counts, in
    tenant order (P-TEN-4). Only `admin` keys (or any caller of a server without keys).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | TenantList
    """

    return (
        await asyncio_detailed(
            client=client,
        )
    ).parsed
