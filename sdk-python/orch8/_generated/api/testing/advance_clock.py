from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.clock import Clock
from ...models.clock_advance import ClockAdvance
from ...models.problem import Problem
from ...types import Response


def request_kwargs(
    *,
    body: ClockAdvance,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/clock/advance",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
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

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())

        return response_409

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
    body: ClockAdvance,
) -> Response[Clock | Problem]:
    """Move the test clock forward and fire what falls due (admin only)

     Moves the test clock forward by `by_ms`, or to the next timer (`to_next_timer`),
    then, before answering, runs every timer now due: scheduled tasks and retry backoffs
    become pending, `good_until` expires tasks, leases expire, silent workers are
    declared dead, workflow timers (sleep steps, step retries) fire (P-CLOCK-2..4).
    409 `clock_not_controllable` on a server not started with `--test-clock`.

    Args:
        body (ClockAdvance): Exactly one of `by_ms` and `to_next_timer`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Clock | Problem]
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
    body: ClockAdvance,
) -> Clock | Problem | None:
    """Move the test clock forward and fire what falls due (admin only)

     Moves the test clock forward by `by_ms`, or to the next timer (`to_next_timer`),
    then, before answering, runs every timer now due: scheduled tasks and retry backoffs
    become pending, `good_until` expires tasks, leases expire, silent workers are
    declared dead, workflow timers (sleep steps, step retries) fire (P-CLOCK-2..4).
    409 `clock_not_controllable` on a server not started with `--test-clock`.

    Args:
        body (ClockAdvance): Exactly one of `by_ms` and `to_next_timer`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Clock | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: ClockAdvance,
) -> Response[Clock | Problem]:
    """Move the test clock forward and fire what falls due (admin only)

     Moves the test clock forward by `by_ms`, or to the next timer (`to_next_timer`),
    then, before answering, runs every timer now due: scheduled tasks and retry backoffs
    become pending, `good_until` expires tasks, leases expire, silent workers are
    declared dead, workflow timers (sleep steps, step retries) fire (P-CLOCK-2..4).
    409 `clock_not_controllable` on a server not started with `--test-clock`.

    Args:
        body (ClockAdvance): Exactly one of `by_ms` and `to_next_timer`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Clock | Problem]
    """

    kwargs = request_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: ClockAdvance,
) -> Clock | Problem | None:
    """Move the test clock forward and fire what falls due (admin only)

     Moves the test clock forward by `by_ms`, or to the next timer (`to_next_timer`),
    then, before answering, runs every timer now due: scheduled tasks and retry backoffs
    become pending, `good_until` expires tasks, leases expire, silent workers are
    declared dead, workflow timers (sleep steps, step retries) fire (P-CLOCK-2..4).
    409 `clock_not_controllable` on a server not started with `--test-clock`.

    Args:
        body (ClockAdvance): Exactly one of `by_ms` and `to_next_timer`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Clock | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
