"""The web port's hypercorn integration (web/listen.py): hypercorn's send race on a closing
connection is one info line, not a traceback; every other error it logs stays."""

from __future__ import annotations

import logging

import hypercorn.config
import trio

from tests.helpers.hypercorn_race import error_record, protocol_send_failure, send_race
from web.listen import SendRaceFilter, error_logger


async def test_the_send_race_of_a_closing_connection_is_dropped() -> None:
    assert SendRaceFilter().filter(error_record(await send_race())) is False


async def test_every_other_hypercorn_error_is_logged() -> None:
    # Another error in the same place, and the same error raised elsewhere: both stay.
    other = await protocol_send_failure(RuntimeError("a bug"))
    assert SendRaceFilter().filter(error_record(other)) is True
    try:
        raise trio.BusyResourceError("two tasks in one of our streams")
    except trio.BusyResourceError as error:
        ours = error
    assert SendRaceFilter().filter(error_record(ours)) is True
    plain = logging.LogRecord("hypercorn.error", logging.ERROR, __file__, 1, "x", (), None)
    assert SendRaceFilter().filter(plain) is True


def test_hypercorn_logs_through_the_viewers_logging_with_the_filter_once() -> None:
    config = hypercorn.config.Config()
    config.errorlog = error_logger()
    config.errorlog = error_logger()  # a viewer started again in-process: still one filter
    logger = config.log.error_logger
    assert logger is logging.getLogger("hypercorn.error") and logger.propagate
    assert sum(isinstance(known, SendRaceFilter) for known in logger.filters) == 1
