from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.poll_batch_options import PollBatchOptions
from ...models.poll_batch_result import PollBatchResult
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def request_kwargs(
    *,
    body: PollBatchOptions | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/workers/tasks/poll/batch",
    }

    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> PollBatchResult | Problem:
    if response.status_code == 200:
        response_200 = PollBatchResult.from_dict(response.json())

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
) -> Response[PollBatchResult | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: PollBatchOptions | Unset = UNSET,
) -> Response[PollBatchResult | Problem]:
    """Claim up to batch_size tasks, long-polling until at least one is available

     Always answers 200 with a possibly empty `tasks` list (P-POLL-5). Returns as soon
    as at least one task is claimed; never waits to fill the batch.

    Args:
        body (PollBatchOptions | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PollBatchResult | Problem]
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
    body: PollBatchOptions | Unset = UNSET,
) -> PollBatchResult | Problem | None:
    """Claim up to batch_size tasks, long-polling until at least one is available

     Always answers 200 with a possibly empty `tasks` list (P-POLL-5). Returns as soon
    as at least one task is claimed; never waits to fill the batch.

    Args:
        body (PollBatchOptions | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PollBatchResult | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: PollBatchOptions | Unset = UNSET,
) -> Response[PollBatchResult | Problem]:
    """Claim up to batch_size tasks, long-polling until at least one is available

     Always answers 200 with a possibly empty `tasks` list (P-POLL-5). Returns as soon
    as at least one task is claimed; never waits to fill the batch.

    Args:
        body (PollBatchOptions | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PollBatchResult | Problem]
    """

    kwargs = request_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: PollBatchOptions | Unset = UNSET,
) -> PollBatchResult | Problem | None:
    """Claim up to batch_size tasks, long-polling until at least one is available

     Always answers 200 with a possibly empty `tasks` list (P-POLL-5). Returns as soon
    as at least one task is claimed; never waits to fill the batch.

    Args:
        body (PollBatchOptions | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PollBatchResult | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
