from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.instance import Instance
from ...models.new_instance import NewInstance
from ...models.problem import Problem
from ...types import Response


def request_kwargs(
    *,
    body: NewInstance,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/instances",
    }

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

    if response.status_code == 201:
        response_201 = Instance.from_dict(response.json())

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

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

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
) -> Response[Instance | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: NewInstance,
) -> Response[Instance | Problem]:
    """Start an instance of a sequence

     Starts the sequence's latest version (or `version`) with `input` and dispatches
    its first step (P-WF-4). With an `idempotency_key` that already names an instance
    of the tenant, that instance is returned with 200, unchanged whatever the new body,
    and nothing starts. The tasks of the first step pass the enqueue rate and queue
    depth limits (P-BP-1, P-BP-2): over a limit the answer is 429 and nothing is stored;
    a first step with more tasks than the enqueue burst is 422. With a
    `concurrency_key` whose `max_concurrency` instances are running, the instance is
    stored `running` and waits for a slot: no block starts until one of them ends
    (P-KEY-7).

    Args:
        body (NewInstance):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Instance | Problem]
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
    body: NewInstance,
) -> Instance | Problem | None:
    """Start an instance of a sequence

     Starts the sequence's latest version (or `version`) with `input` and dispatches
    its first step (P-WF-4). With an `idempotency_key` that already names an instance
    of the tenant, that instance is returned with 200, unchanged whatever the new body,
    and nothing starts. The tasks of the first step pass the enqueue rate and queue
    depth limits (P-BP-1, P-BP-2): over a limit the answer is 429 and nothing is stored;
    a first step with more tasks than the enqueue burst is 422. With a
    `concurrency_key` whose `max_concurrency` instances are running, the instance is
    stored `running` and waits for a slot: no block starts until one of them ends
    (P-KEY-7).

    Args:
        body (NewInstance):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Instance | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: NewInstance,
) -> Response[Instance | Problem]:
    """Start an instance of a sequence

     Starts the sequence's latest version (or `version`) with `input` and dispatches
    its first step (P-WF-4). With an `idempotency_key` that already names an instance
    of the tenant, that instance is returned with 200, unchanged whatever the new body,
    and nothing starts. The tasks of the first step pass the enqueue rate and queue
    depth limits (P-BP-1, P-BP-2): over a limit the answer is 429 and nothing is stored;
    a first step with more tasks than the enqueue burst is 422. With a
    `concurrency_key` whose `max_concurrency` instances are running, the instance is
    stored `running` and waits for a slot: no block starts until one of them ends
    (P-KEY-7).

    Args:
        body (NewInstance):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Instance | Problem]
    """

    kwargs = request_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: NewInstance,
) -> Instance | Problem | None:
    """Start an instance of a sequence

     Starts the sequence's latest version (or `version`) with `input` and dispatches
    its first step (P-WF-4). With an `idempotency_key` that already names an instance
    of the tenant, that instance is returned with 200, unchanged whatever the new body,
    and nothing starts. The tasks of the first step pass the enqueue rate and queue
    depth limits (P-BP-1, P-BP-2): over a limit the answer is 429 and nothing is stored;
    a first step with more tasks than the enqueue burst is 422. With a
    `concurrency_key` whose `max_concurrency` instances are running, the instance is
    stored `running` and waits for a slot: no block starts until one of them ends
    (P-KEY-7).

    Args:
        body (NewInstance):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Instance | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
