from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.new_sequence import NewSequence
from ...models.problem import Problem
from ...models.sequence import Sequence
from ...types import Response


def request_kwargs(
    *,
    body: NewSequence,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/sequences",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | Sequence:
    if response.status_code == 200:
        response_200 = Sequence.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = Sequence.from_dict(response.json())

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
) -> Response[Problem | Sequence]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: NewSequence,
) -> Response[Problem | Sequence]:
    """Define the next version of a sequence

     Stores `blocks` (or `steps`, the same list) as the next version of the named
    sequence (201, versions 1, 2, ...). A definition equal to the latest version
    returns that version with 200 and stores nothing, so defining is idempotent
    (P-WF-1). Blocks (P-WF-11), templates and expressions (P-WF-12) and references
    (P-WF-2) are checked here: a malformed expression, a reference to an unknown block,
    to a later block, to the block itself or to a parallel sibling is a 422 pointing at
    it, and so is an object with a `$from` member that is not exactly
    `{"$from": "<path>"}`. The id `on_error` is reserved for the sequence's error
    handler (P-WF-1).

    Args:
        body (NewSequence): `blocks` (Orch8's name) or `steps` (the 1.x name) holds the sequence's
            blocks; give
            one of them, or both equal (a sequence read back has both) (P-WF-1).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Sequence]
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
    body: NewSequence,
) -> Problem | Sequence | None:
    """Define the next version of a sequence

     Stores `blocks` (or `steps`, the same list) as the next version of the named
    sequence (201, versions 1, 2, ...). A definition equal to the latest version
    returns that version with 200 and stores nothing, so defining is idempotent
    (P-WF-1). Blocks (P-WF-11), templates and expressions (P-WF-12) and references
    (P-WF-2) are checked here: a malformed expression, a reference to an unknown block,
    to a later block, to the block itself or to a parallel sibling is a 422 pointing at
    it, and so is an object with a `$from` member that is not exactly
    `{"$from": "<path>"}`. The id `on_error` is reserved for the sequence's error
    handler (P-WF-1).

    Args:
        body (NewSequence): `blocks` (Orch8's name) or `steps` (the 1.x name) holds the sequence's
            blocks; give
            one of them, or both equal (a sequence read back has both) (P-WF-1).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Sequence
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: NewSequence,
) -> Response[Problem | Sequence]:
    """Define the next version of a sequence

     Stores `blocks` (or `steps`, the same list) as the next version of the named
    sequence (201, versions 1, 2, ...). A definition equal to the latest version
    returns that version with 200 and stores nothing, so defining is idempotent
    (P-WF-1). Blocks (P-WF-11), templates and expressions (P-WF-12) and references
    (P-WF-2) are checked here: a malformed expression, a reference to an unknown block,
    to a later block, to the block itself or to a parallel sibling is a 422 pointing at
    it, and so is an object with a `$from` member that is not exactly
    `{"$from": "<path>"}`. The id `on_error` is reserved for the sequence's error
    handler (P-WF-1).

    Args:
        body (NewSequence): `blocks` (Orch8's name) or `steps` (the 1.x name) holds the sequence's
            blocks; give
            one of them, or both equal (a sequence read back has both) (P-WF-1).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Sequence]
    """

    kwargs = request_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: NewSequence,
) -> Problem | Sequence | None:
    """Define the next version of a sequence

     Stores `blocks` (or `steps`, the same list) as the next version of the named
    sequence (201, versions 1, 2, ...). A definition equal to the latest version
    returns that version with 200 and stores nothing, so defining is idempotent
    (P-WF-1). Blocks (P-WF-11), templates and expressions (P-WF-12) and references
    (P-WF-2) are checked here: a malformed expression, a reference to an unknown block,
    to a later block, to the block itself or to a parallel sibling is a 422 pointing at
    it, and so is an object with a `$from` member that is not exactly
    `{"$from": "<path>"}`. The id `on_error` is reserved for the sequence's error
    handler (P-WF-1).

    Args:
        body (NewSequence): `blocks` (Orch8's name) or `steps` (the 1.x name) holds the sequence's
            blocks; give
            one of them, or both equal (a sequence read back has both) (P-WF-1).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Sequence
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
