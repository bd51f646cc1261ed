"""The minimal HTTP loop: the minimal job table of `minimal.py` behind Starlette on uvicorn
(uvloop, httptools, orjson), the stack the server uses, answering the subset of the
protocol the load client speaks (same paths and bodies, the claimed payload spliced into
the answer unparsed). No validation, no lifecycle rules, no attempt history: the most an
HTTP queue on this stack can do here, so "ours / limit" means something.

A poll that finds nothing waits for the next enqueue (up to its `wait_ms`), so idle
consumers park instead of spinning, as they do against the server.

Usage: python -m orch8bench.minimal_http SQLITE_PATH|postgresql://URL [--conns 4]
Prints `orch8-minimal listening on http://HOST:PORT` once it accepts requests (port 0:
the OS picks); stops on SIGTERM. Run with the root venv's interpreter (Starlette).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from orch8bench.minimal import Claimed, PgJobs, SqliteJobs

LISTENING = "orch8-minimal listening on "


class Store:
    """The same three calls over either backend: SQLite inline on the loop, PostgreSQL
    through asyncpg."""

    def __init__(self, target: str, conns: int) -> None:
        self.target, self.conns = target, conns
        self.sqlite: SqliteJobs | None = None
        self.pg: PgJobs | None = None

    async def open(self) -> None:
        if self.target.startswith("postgres"):
            self.pg = await PgJobs.open(self.target, self.conns)
        else:
            self.sqlite = SqliteJobs(self.target)

    async def close(self) -> None:
        if self.pg:
            await self.pg.close()
        if self.sqlite:
            self.sqlite.close()

    async def enqueue(self, payloads: list[str]) -> list[int]:
        return self.sqlite.enqueue(payloads) if self.sqlite else await self.pg.enqueue(payloads)  # type: ignore[union-attr]

    async def claim(self, n: int) -> list[Claimed]:
        return self.sqlite.claim(n) if self.sqlite else await self.pg.claim(n)  # type: ignore[union-attr]

    async def release(self, claimed: list[Claimed]) -> None:
        if self.sqlite:
            self.sqlite.release(claimed)
        else:
            await self.pg.release(claimed)  # type: ignore[union-attr]

    async def complete(self, items: list[tuple[int, str]]) -> int:
        return self.sqlite.complete(items) if self.sqlite else await self.pg.complete(items)  # type: ignore[union-attr]


class Wake:
    """Parks empty polls; an enqueue of n tasks wakes the oldest waiters until they ask
    for n tasks in all (no herd of empty re-claims)."""

    def __init__(self) -> None:
        self.waiters: collections.deque[tuple[asyncio.Future[None], int]] = collections.deque()

    async def wait(self, want: int, seconds: float, req: Request) -> bool:
        """False when the client hung up first: it must not take tasks it never receives."""
        fut = asyncio.get_running_loop().create_future()
        entry = (fut, want)
        self.waiters.append(entry)
        gone = asyncio.ensure_future(_disconnected(req))
        hung_up = False
        try:
            await asyncio.wait((fut, gone), timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
            hung_up = gone.done()
        finally:
            gone.cancel()
            if not fut.done():
                fut.cancel()
                with contextlib.suppress(ValueError):
                    self.waiters.remove(entry)
            elif hung_up:  # woken for tasks it will not take: pass the wake-up on
                self.fire(want)
        return not hung_up

    def fire(self, n: int) -> None:
        while n > 0 and self.waiters:
            fut, want = self.waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                n -= want

    def fire_all(self) -> None:
        self.fire(sys.maxsize)


async def _disconnected(req: Request) -> None:
    while (await req.receive())["type"] != "http.disconnect":
        pass


def _json(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status, media_type="application/json")


def _view(c: Claimed) -> dict[str, Any]:
    return {"id": str(c[0]), "params": orjson.Fragment(c[1]), "lease": {"id": c[2]}}


def create_app(target: str, conns: int = 4) -> Starlette:
    store, wake = Store(target, conns), Wake()

    async def claim_waiting(req: Request, n: int, wait_ms: int) -> list[Claimed]:
        claimed = await store.claim(n)
        if not claimed and wait_ms > 0 and await wake.wait(n, wait_ms / 1000, req):
            claimed = await store.claim(n)
            # Woken just as its client hung up (a load client that exited): the answer
            # would be lost, and this table has no lease expiry to bring the tasks back.
            if claimed and await req.is_disconnected():
                await store.release(claimed)
                wake.fire(len(claimed))
                return []
        return claimed

    async def enqueue_batch(req: Request) -> Response:
        tasks = orjson.loads(await req.body())["tasks"]
        ids = await store.enqueue([orjson.dumps(t.get("params") or {}).decode() for t in tasks])
        wake.fire(len(ids))
        return _json({"tasks": [{"id": str(i), "status": "pending"} for i in ids]}, 201)

    async def enqueue_one(req: Request) -> Response:
        task = orjson.loads(await req.body())
        (i,) = await store.enqueue([orjson.dumps(task.get("params") or {}).decode()])
        wake.fire(1)
        return _json({"id": str(i), "status": "pending"}, 201)

    async def poll_batch(req: Request) -> Response:
        body = orjson.loads(await req.body())
        claimed = await claim_waiting(req, body.get("batch_size", 1), body.get("wait_ms", 0))
        return _json({"tasks": [_view(c) for c in claimed]})

    async def poll_one(req: Request) -> Response:
        body = orjson.loads(await req.body())
        claimed = await claim_waiting(req, 1, body.get("wait_ms", 0))
        return _json(_view(claimed[0])) if claimed else Response(status_code=204)

    async def complete_batch(req: Request) -> Response:
        items = orjson.loads(await req.body())["items"]
        done = await store.complete([(int(i["task_id"]), i["lease_id"]) for i in items])
        return _json({"completed": done})

    async def complete_one(req: Request) -> Response:
        body = orjson.loads(await req.body())
        done = await store.complete([(int(req.path_params["task_id"]), body["lease_id"])])
        return _json({"completed": done}) if done else _json({"code": "lease_lost"}, 409)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await store.open()
        yield
        wake.fire_all()
        await store.close()

    def post(path: str, fn: Callable[[Request], Awaitable[Response]]) -> Route:
        return Route(path, fn, methods=["POST"])

    return Starlette(
        routes=[
            post("/tasks/batch", enqueue_batch),
            post("/tasks", enqueue_one),
            post("/workers/tasks/poll/batch", poll_batch),
            post("/workers/tasks/poll", poll_one),
            post("/workers/tasks/complete/batch", complete_batch),
            post("/workers/tasks/{task_id}/complete", complete_one),
        ],
        lifespan=lifespan,
    )


def main() -> None:
    import uvicorn

    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--host", default="127.0.0.1")
    a = ap.parse_args()
    # Bound before uvicorn starts, announced once it serves: no port picked by the caller.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((a.host, 0))
    config = uvicorn.Config(
        create_app(a.target, a.conns), loop="uvloop", http="httptools", lifespan="on",
        access_log=False, log_level="warning", timeout_keep_alive=35,
    )  # fmt: skip

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                host, port = sock.getsockname()[:2]
                print(f"{LISTENING}http://{host}:{port}", flush=True)

    Announcing(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
