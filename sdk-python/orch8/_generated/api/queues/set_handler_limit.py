from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.handler_control import HandlerControl
from ...models.problem import Problem
from ...models.running_limit import RunningLimit
from ...types import Response


def request_kwargs(
    handler_name: str,
    *,
    body: RunningLimit,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/handlers/{handler_name}/limit".format(
            handler_name=quote(str(handler_name), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> HandlerControl | Problem:
    if response.status_code == 200:
        response_200 = HandlerControl.from_dict(response.json())

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
) -> Response[HandlerControl | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=parse_response(client=client, response=response),
    )


def sync_detailed(
    handler_name: str,
    *,
    client: AuthenticatedClient | Client,
    body: RunningLimit,
) -> Response[HandlerControl | Problem]:
    """Operator - cap the handler's running tasks

     At most `max_running` tasks of this handler run at once, on every queue and
    replica (P-CTRL-2). `null` removes the cap.

    Args:
        handler_name (str):  Example: process_image.
        body (RunningLimit):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[HandlerControl | Problem]
    """

    kwargs = request_kwargs(
        handler_name=handler_name,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    handler_name: str,
    *,
    client: AuthenticatedClient | Client,
    body: RunningLimit,
) -> HandlerControl | Problem | None:
    """Operator - cap the handler's running tasks

     At most `max_running` tasks of this handler run at once, on every queue and
    replica (P-CTRL-2). `null` removes the cap.

    Args:
        handler_name (str):  Example: process_image.
        body (RunningLimit):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        HandlerControl | Problem
    """

    return sync_detailed(
        handler_name=handler_name,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    handler_name: str,
    *,
    client: AuthenticatedClient | Client,
    body: RunningLimit,
) -> Response[HandlerControl | Problem]:
    """Operator - cap the handler's running tasks

     At most `max_running` tasks of this handler run at once, on every queue and
    replica (P-CTRL-2). `null` removes the cap.

    Args:
        handler_name (str):  Example: process_image.
        body (RunningLimit):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[HandlerControl | Problem]
    """

    kwargs = request_kwargs(
        handler_name=handler_name,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    handler_name: str,
    *,
    client: AuthenticatedClient | Client,
    body: RunningLimit,
) -> HandlerControl | Problem | None:
    """Operator - cap the handler's running tasks

     At most `max_running` tasks of this handler run at once, on every queue and
    replica (P-CTRL-2). `null` removes the cap.

    Args:
        handler_name (str):  Example: process_image.
        body (RunningLimit):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        HandlerControl | Problem
    """

    return (
        await asyncio_detailed(
            handler_name=handler_name,
            client=client,
            body=body,
        )
    ).parsed
