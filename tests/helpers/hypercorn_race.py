"""hypercorn 0.18's send race on a closing connection, as its error logger receives it:
`BusyResourceError` raised in hypercorn's own `TCPServer.protocol_send` (`web.listen`)."""

from __future__ import annotations

import logging

import pytest
import trio
from hypercorn.events import RawData
from hypercorn.trio.tcp_server import TCPServer


class _ClosingStream:
    """A stream whose send is taken, as while hypercorn's `_close` runs `send_eof`."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def send_all(self, data: bytes) -> None:
        raise self.error


async def protocol_send_failure(error: Exception) -> BaseException:
    """`error` as hypercorn's own `TCPServer.protocol_send` raises it."""
    server = TCPServer.__new__(TCPServer)  # only what protocol_send touches
    server.send_lock = trio.Lock()
    server.stream = _ClosingStream(error)  # type: ignore[assignment]
    with pytest.raises(type(error)) as caught:
        await server.protocol_send(RawData(b"HTTP/1.1 408 \r\n"))
    return caught.value


async def send_race() -> BaseException:
    """The race's error: trio's `BusyResourceError` out of `protocol_send`."""
    busy = trio.BusyResourceError("another task is currently sending data on this SocketStream")
    return await protocol_send_failure(busy)


def error_record(error: BaseException) -> logging.LogRecord:
    """hypercorn's "Error in ASGI Framework" record for `error`."""
    return logging.LogRecord(
        "hypercorn.error",
        logging.ERROR,
        __file__,
        1,
        "Error in ASGI Framework",
        (),
        (type(error), error, error.__traceback__),
    )
