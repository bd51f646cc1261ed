from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.new_instance_batch import NewInstanceBatch
from ...models.problem import Problem
from ...models.started_instances import StartedInstances
from ...types import Response


def request_kwargs(
    *,
    body: NewInstanceBatch,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/instances/batch",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | StartedInstances:
    if response.status_code == 201:
        response_201 = StartedInstances.from_dict(response.json())

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
) -> Response[Problem | StartedInstances]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: NewInstanceBatch,
) -> Response[Problem | StartedInstances]:
    """Start up to 100 instances atomically

     Starts every instance as `POST /instances` would, in one transaction, in request
    order (P-WF-14): all start or none does. One invalid item rejects the whole batch,
    with field errors pointing into `/instances/N`; an unknown `sequence` or `version`
    is 404 naming the item. An item whose `idempotency_key` already names an instance
    of the tenant (or an earlier item of the batch) returns that instance, unchanged.
    The first steps of all items pass the enqueue rate and queue depth limits together
    (P-BP-1, P-BP-2): over a limit the answer is 429 and nothing is stored.

    Args:
        body (NewInstanceBatch):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StartedInstances]
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
    body: NewInstanceBatch,
) -> Problem | StartedInstances | None:
    """Start up to 100 instances atomically

     Starts every instance as `POST /instances` would, in one transaction, in request
    order (P-WF-14): all start or none does. One invalid item rejects the whole batch,
    with field errors pointing into `/instances/N`; an unknown `sequence` or `version`
    is 404 naming the item. An item whose `idempotency_key` already names an instance
    of the tenant (or an earlier item of the batch) returns that instance, unchanged.
    The first steps of all items pass the enqueue rate and queue depth limits together
    (P-BP-1, P-BP-2): over a limit the answer is 429 and nothing is stored.

    Args:
        body (NewInstanceBatch):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StartedInstances
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: NewInstanceBatch,
) -> Response[Problem | StartedInstances]:
    """Start up to 100 instances atomically

     Starts every instance as `POST /instances` would, in one transaction, in request
    order (P-WF-14): all start or none does. One invalid item rejects the whole batch,
    with field errors pointing into `/instances/N`; an unknown `sequence` or `version`
    is 404 naming the item. An item whose `idempotency_key` already names an instance
    of the tenant (or an earlier item of the batch) returns that instance, unchanged.
    The first steps of all items pass the enqueue rate and queue depth limits together
    (P-BP-1, P-BP-2): over a limit the answer is 429 and nothing is stored.

    Args:
        body (NewInstanceBatch):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StartedInstances]
    """

    kwargs = request_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: NewInstanceBatch,
) -> Problem | StartedInstances | None:
    """Start up to 100 instances atomically

     Starts every instance as `POST /instances` would, in one transaction, in request
    order (P-WF-14): all start or none does. One invalid item rejects the whole batch,
    with field errors pointing into `/instances/N`; an unknown `sequence` or `version`
    is 404 naming the item. An item whose `idempotency_key` already names an instance
    of the tenant (or an earlier item of the batch) returns that instance, unchanged.
    The first steps of all items pass the enqueue rate and queue depth limits together
    (P-BP-1, P-BP-2): over a limit the answer is 429 and nothing is stored.

    Args:
        body (NewInstanceBatch):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StartedInstances
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
