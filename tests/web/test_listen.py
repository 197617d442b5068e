"""The web port's hypercorn integration (web/listen.py): hypercorn's send race on a closing
connection is one info line, not a traceback; every other error it logs stays."""

from __future__ import annotations

import logging

import hypercorn.config
import pytest
import trio
from hypercorn.events import RawData
from hypercorn.trio.tcp_server import TCPServer

from web.listen import SendRaceFilter, error_logger


class _ClosingStream:
    """A stream whose send is taken, as while hypercorn's `_close` runs `send_eof`."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def send_all(self, data: bytes) -> None:
        raise self.error


async def _protocol_send_failure(error: Exception) -> BaseException:
    """`error` as hypercorn's own `TCPServer.protocol_send` raises it."""
    server = TCPServer.__new__(TCPServer)  # only what protocol_send touches
    server.send_lock = trio.Lock()
    server.stream = _ClosingStream(error)  # type: ignore[assignment]
    with pytest.raises(type(error)) as caught:
        await server.protocol_send(RawData(b"HTTP/1.1 408 \r\n"))
    return caught.value


def _record(error: BaseException) -> logging.LogRecord:
    return logging.LogRecord(
        "hypercorn.error",
        logging.ERROR,
        __file__,
        1,
        "Error in ASGI Framework",
        (),
        (type(error), error, error.__traceback__),
    )


async def test_the_send_race_of_a_closing_connection_is_dropped() -> None:
    busy = trio.BusyResourceError("another task is currently sending data on this SocketStream")
    race = await _protocol_send_failure(busy)
    assert SendRaceFilter().filter(_record(race)) is False


async def test_every_other_hypercorn_error_is_logged() -> None:
    # Another error in the same place, and the same error raised elsewhere: both stay.
    other = await _protocol_send_failure(RuntimeError("a bug"))
    assert SendRaceFilter().filter(_record(other)) is True
    try:
        raise trio.BusyResourceError("two tasks in one of our streams")
    except trio.BusyResourceError as error:
        ours = error
    assert SendRaceFilter().filter(_record(ours)) is True
    plain = logging.LogRecord("hypercorn.error", logging.ERROR, __file__, 1, "x", (), None)
    assert SendRaceFilter().filter(plain) is True


def test_hypercorn_logs_through_the_viewers_logging_with_the_filter_once() -> None:
    config = hypercorn.config.Config()
    config.errorlog = error_logger()
    config.errorlog = error_logger()  # a viewer started again in-process: still one filter
    logger = config.log.error_logger
    assert logger is logging.getLogger("hypercorn.error") and logger.propagate
    assert sum(isinstance(known, SendRaceFilter) for known in logger.filters) == 1
