"""A game server's own log (server.logs.ServerLog): the server's loggers (`get_logger`) write to
it in the context it serves (the tasks and threads started there too), in the bytes of
`configure_logging`'s lines, and to the process's logging elsewhere; the process's logging is
never touched."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator

import pytest
import structlog
import trio

from server.logs import ServerLog, configure_logging, get_logger
from tests.helpers.logs import restored_logging

log = get_logger("server.test")

TIMESTAMP = re.compile(r"^\S+ ")


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    with restored_logging():
        yield


def log_some() -> None:
    log.debug("hidden")
    log.info("room created", room="r1", prepared=True)
    log.warning("slow", ms=12, text="a b")
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("connection failed", peer="p")


def without_timestamps(text: str) -> list[str]:
    return [TIMESTAMP.sub("", line) for line in text.splitlines()]


def test_a_servers_lines_are_the_bytes_of_the_process_logging() -> None:
    own = io.StringIO()
    server_log = ServerLog(own, "info")
    with server_log.serving():
        log_some()
    process = io.StringIO()
    configure_logging("console", "info", stream=process, cache=False)
    log_some()
    assert "hidden" not in own.getvalue()
    assert "ValueError: boom" in own.getvalue()
    assert without_timestamps(own.getvalue()) == without_timestamps(process.getvalue())


def test_a_servers_json_lines_are_those_of_the_process_logging() -> None:
    own = io.StringIO()
    with ServerLog(own, "debug", "json").serving():
        log_some()
    process = io.StringIO()
    configure_logging("json", "debug", stream=process, cache=False)
    log_some()
    ours = [json.loads(line) for line in own.getvalue().splitlines()]
    theirs = [json.loads(line) for line in process.getvalue().splitlines()]
    for line in ours + theirs:
        del line["timestamp"]
    assert ours == theirs
    assert [line["event"] for line in ours][:2] == ["hidden", "room created"]


async def test_the_tasks_and_threads_of_the_server_log_to_its_log_the_hosts_do_not() -> None:
    process = io.StringIO()
    configure_logging("console", "info", stream=process, cache=False)
    configured, handlers = structlog.get_config(), logging.root.handlers[:]
    own = io.StringIO()
    server_log = ServerLog(own, "info")

    async def server() -> None:
        with server_log.serving():
            assert structlog.get_config() == configured
            assert logging.root.handlers == handlers
            log.info("in the server's task")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(lambda: trio.to_thread.run_sync(log.info, "in its thread"))
                nursery.start_soon(trio.lowlevel.checkpoint)
                log.info("in its task")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(server)
        log.info("in the host's task")
        structlog.get_logger("host").info("the host's own line")
    served, hosted = own.getvalue(), process.getvalue()
    for line in ("in the server's task", "in its thread", "in its task"):
        assert line in served and line not in hosted
    for line in ("in the host's task", "the host's own line"):
        assert line in hosted and line not in served


def test_outside_a_servers_context_its_loggers_are_the_processs() -> None:
    with structlog.testing.capture_logs() as logs:
        log.info("room created", room="r1")
    assert logs == [{"event": "room created", "room": "r1", "log_level": "info"}]


def test_a_servers_log_refuses_an_unknown_level_or_format() -> None:
    with pytest.raises(ValueError, match="loud"):
        ServerLog(io.StringIO(), "loud")
    with pytest.raises(ValueError, match="xml"):
        ServerLog(io.StringIO(), "info", "xml")
