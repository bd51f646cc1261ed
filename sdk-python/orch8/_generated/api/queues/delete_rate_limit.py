from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...types import Response


def request_kwargs(
    key: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/rate-limits/{key}".format(
            key=quote(str(key), safe=""),
        ),
    }

    return _kwargs


def parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Any | Problem:
    if response.status_code == 204:
        response_204 = cast(Any, None)
        return response_204

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    response_default = Problem.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Any | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=parse_response(client=client, response=response),
    )


def sync_detailed(
    key: str,
    *,
    client: AuthenticatedClient | Client,
) -> Response[Any | Problem]:
    """Operator - remove a rate limit

     The key's tasks are no longer paced; those waiting for a token become claimable at once (P-RATE-4).
    404 when the key has no limit.

    Args:
        key (str): Names a rate limit (P-RATE-1), per tenant; an operator defines its pace with
            `PUT /rate-limits/{key}`. Example: crm-api.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = request_kwargs(
        key=key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    key: str,
    *,
    client: AuthenticatedClient | Client,
) -> Any | Problem | None:
    """Operator - remove a rate limit

     The key's tasks are no longer paced; those waiting for a token become claimable at once (P-RATE-4).
    404 when the key has no limit.

    Args:
        key (str): Names a rate limit (P-RATE-1), per tenant; an operator defines its pace with
            `PUT /rate-limits/{key}`. Example: crm-api.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return sync_detailed(
        key=key,
        client=client,
    ).parsed


async def asyncio_detailed(
    key: str,
    *,
    client: AuthenticatedClient | Client,
) -> Response[Any | Problem]:
    """Operator - remove a rate limit

     The key's tasks are no longer paced; those waiting for a token become claimable at once (P-RATE-4).
    404 when the key has no limit.

    Args:
        key (str): Names a rate limit (P-RATE-1), per tenant; an operator defines its pace with
            `PUT /rate-limits/{key}`. Example: crm-api.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = request_kwargs(
        key=key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    key: str,
    *,
    client: AuthenticatedClient | Client,
) -> Any | Problem | None:
    """Operator - remove a rate limit

     The key's tasks are no longer paced; those waiting for a token become claimable at once (P-RATE-4).
    404 when the key has no limit.

    Args:
        key (str): Names a rate limit (P-RATE-1), per tenant; an operator defines its pace with
            `PUT /rate-limits/{key}`. Example: crm-api.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return (
        await asyncio_detailed(
            key=key,
            client=client,
        )
    ).parsed
