from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.worker_heartbeat import WorkerHeartbeat
from ...models.worker_heartbeat_result import WorkerHeartbeatResult
from ...types import UNSET, Response, Unset


def request_kwargs(
    worker_id: str,
    *,
    body: WorkerHeartbeat | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/workers/{worker_id}/heartbeat".format(
            worker_id=quote(str(worker_id), safe=""),
        ),
    }

    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | WorkerHeartbeatResult:
    if response.status_code == 200:
        response_200 = WorkerHeartbeatResult.from_dict(response.json())

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
) -> Response[Problem | WorkerHeartbeatResult]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=parse_response(client=client, response=response),
    )


def sync_detailed(
    worker_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: WorkerHeartbeat | Unset = UNSET,
) -> Response[Problem | WorkerHeartbeatResult]:
    """One heartbeat for the worker and every task it holds

     Extends the lease of every listed task the worker still holds and answers with the
    directive the worker must follow and, per task, whether it should stop
    (P-WORKER-2, P-WORKER-3). An unknown worker is registered on the fly.

    Args:
        worker_id (str): Stable identifier of one worker process. Example: img-worker-1.
        body (WorkerHeartbeat | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | WorkerHeartbeatResult]
    """

    kwargs = request_kwargs(
        worker_id=worker_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    worker_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: WorkerHeartbeat | Unset = UNSET,
) -> Problem | WorkerHeartbeatResult | None:
    """One heartbeat for the worker and every task it holds

     Extends the lease of every listed task the worker still holds and answers with the
    directive the worker must follow and, per task, whether it should stop
    (P-WORKER-2, P-WORKER-3). An unknown worker is registered on the fly.

    Args:
        worker_id (str): Stable identifier of one worker process. Example: img-worker-1.
        body (WorkerHeartbeat | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | WorkerHeartbeatResult
    """

    return sync_detailed(
        worker_id=worker_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    worker_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: WorkerHeartbeat | Unset = UNSET,
) -> Response[Problem | WorkerHeartbeatResult]:
    """One heartbeat for the worker and every task it holds

     Extends the lease of every listed task the worker still holds and answers with the
    directive the worker must follow and, per task, whether it should stop
    (P-WORKER-2, P-WORKER-3). An unknown worker is registered on the fly.

    Args:
        worker_id (str): Stable identifier of one worker process. Example: img-worker-1.
        body (WorkerHeartbeat | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | WorkerHeartbeatResult]
    """

    kwargs = request_kwargs(
        worker_id=worker_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    worker_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: WorkerHeartbeat | Unset = UNSET,
) -> Problem | WorkerHeartbeatResult | None:
    """One heartbeat for the worker and every task it holds

     Extends the lease of every listed task the worker still holds and answers with the
    directive the worker must follow and, per task, whether it should stop
    (P-WORKER-2, P-WORKER-3). An unknown worker is registered on the fly.

    Args:
        worker_id (str): Stable identifier of one worker process. Example: img-worker-1.
        body (WorkerHeartbeat | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | WorkerHeartbeatResult
    """

    return (
        await asyncio_detailed(
            worker_id=worker_id,
            client=client,
            body=body,
        )
    ).parsed
