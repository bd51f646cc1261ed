from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.rate_limit import RateLimit
from ...models.rate_limit_settings import RateLimitSettings
from ...types import Response


def request_kwargs(
    key: str,
    *,
    body: RateLimitSettings,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/rate-limits/{key}".format(
            key=quote(str(key), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | RateLimit:
    if response.status_code == 200:
        response_200 = RateLimit.from_dict(response.json())

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
) -> Response[Problem | RateLimit]:
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
    body: RateLimitSettings,
) -> Response[Problem | RateLimit]:
    """Operator - define or change a rate limit

     Tasks naming this `rate_limit_key` start at most `limit` per `period_ms`, at most
    `burst` at once (P-RATE-1). Applies at once to the tasks waiting for a token, on
    every replica. A new limit starts with a full bucket (`burst` tokens).

    Args:
        key (str): Names a rate limit (P-RATE-1), per tenant; an operator defines its pace with
            `PUT /rate-limits/{key}`. Example: crm-api.
        body (RateLimitSettings):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RateLimit]
    """

    kwargs = request_kwargs(
        key=key,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    key: str,
    *,
    client: AuthenticatedClient | Client,
    body: RateLimitSettings,
) -> Problem | RateLimit | None:
    """Operator - define or change a rate limit

     Tasks naming this `rate_limit_key` start at most `limit` per `period_ms`, at most
    `burst` at once (P-RATE-1). Applies at once to the tasks waiting for a token, on
    every replica. A new limit starts with a full bucket (`burst` tokens).

    Args:
        key (str): Names a rate limit (P-RATE-1), per tenant; an operator defines its pace with
            `PUT /rate-limits/{key}`. Example: crm-api.
        body (RateLimitSettings):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RateLimit
    """

    return sync_detailed(
        key=key,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    key: str,
    *,
    client: AuthenticatedClient | Client,
    body: RateLimitSettings,
) -> Response[Problem | RateLimit]:
    """Operator - define or change a rate limit

     Tasks naming this `rate_limit_key` start at most `limit` per `period_ms`, at most
    `burst` at once (P-RATE-1). Applies at once to the tasks waiting for a token, on
    every replica. A new limit starts with a full bucket (`burst` tokens).

    Args:
        key (str): Names a rate limit (P-RATE-1), per tenant; an operator defines its pace with
            `PUT /rate-limits/{key}`. Example: crm-api.
        body (RateLimitSettings):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RateLimit]
    """

    kwargs = request_kwargs(
        key=key,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    key: str,
    *,
    client: AuthenticatedClient | Client,
    body: RateLimitSettings,
) -> Problem | RateLimit | None:
    """Operator - define or change a rate limit

     Tasks naming this `rate_limit_key` start at most `limit` per `period_ms`, at most
    `burst` at once (P-RATE-1). Applies at once to the tasks waiting for a token, on
    every replica. A new limit starts with a full bucket (`burst` tokens).

    Args:
        key (str): Names a rate limit (P-RATE-1), per tenant; an operator defines its pace with
            `PUT /rate-limits/{key}`. Example: crm-api.
        body (RateLimitSettings):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RateLimit
    """

    return (
        await asyncio_detailed(
            key=key,
            client=client,
            body=body,
        )
    ).parsed
