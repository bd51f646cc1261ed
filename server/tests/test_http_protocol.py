"""The server's HTTP protocol joins a response's writes into one socket write per loop
turn (issue 15: two `send` syscalls per response were a third of the server at batch 1),
and never loses or reorders bytes: a close sends what is buffered first."""

from __future__ import annotations

import asyncio

from orch8_server.http.protocol import _TurnBuffer


class _Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        assert not self.closed
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> str:
        return f"extra:{name}"


def test_writes_of_one_turn_are_one_write_in_order() -> None:
    async def main() -> None:
        real = _Transport()
        buffered = _TurnBuffer(real, asyncio.get_running_loop())  # type: ignore[arg-type]
        buffered.write(b"HTTP/1.1 200 OK\r\n\r\n")
        buffered.write(b'{"a":1}')
        assert real.writes == []  # nothing sent before the turn ends
        await asyncio.sleep(0)
        assert real.writes == [b'HTTP/1.1 200 OK\r\n\r\n{"a":1}']
        buffered.write(b"next")
        await asyncio.sleep(0)
        assert real.writes[1:] == [b"next"]
        assert buffered.get_extra_info("peername") == "extra:peername"  # the rest: delegated

    asyncio.run(main())


def test_close_sends_what_is_buffered_first() -> None:
    async def main() -> None:
        real = _Transport()
        buffered = _TurnBuffer(real, asyncio.get_running_loop())  # type: ignore[arg-type]
        buffered.write(b"last response")
        buffered.close()
        assert real.writes == [b"last response"] and real.closed
        await asyncio.sleep(0)  # the flush scheduled by the write finds nothing left
        assert real.writes == [b"last response"]

    asyncio.run(main())
