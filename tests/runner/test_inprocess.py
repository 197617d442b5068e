"""The game server in this process (runner.inprocess) logs to its own file and leaves the
process's logging alone: while it runs, the host's lines (structlog's and the standard
library's: a distributed worker's, Dramatiq's) go where the host configured them, the server's
lines to the server's file only, and two servers at once keep two logs. Before, the server
took over structlog's configuration and the root handlers while it was open."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
import trio

from league.config import parse_league
from league.run import open_table
from runner.game import admin_session
from runner.inprocess import in_process_server
from server.config import Settings
from server.logs import configure_logging
from tests.helpers.logs import restored_logging
from tests.helpers.process import TEST_BOTS


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    with restored_logging():
        yield


def worker_log(path: Path) -> None:
    """The logging of a distributed worker (fleet.worker): everything to its log file."""
    stream = path.open("a", encoding="utf-8")
    configure_logging("console", "info", stream=stream, cache=False)


def flushed_text(path: Path) -> str:
    for handler in logging.root.handlers:
        handler.flush()
    return path.read_text(encoding="utf-8")


async def test_the_hosts_lines_go_to_the_hosts_log_while_the_server_runs(tmp_path: Path) -> None:
    worker_log(tmp_path / "worker.log")
    configured, handlers = structlog.get_config(), logging.root.handlers[:]
    logging.getLogger("dramatiq.worker").info("before the match")
    with trio.fail_after(30):
        async with (
            in_process_server(Settings(), tmp_path / "server.log") as server,
            admin_session(server),
        ):
            structlog.get_logger("fleet.worker").info("structlog while the server runs")
            logging.getLogger("dramatiq.worker").info("dramatiq while the server runs")
            # The process's configuration is the host's all the time.
            assert structlog.get_config() == configured
            assert logging.root.handlers == handlers
    logging.getLogger("dramatiq.worker").info("after the match")
    structlog.get_logger("test").info("structlog after the match")
    worker = flushed_text(tmp_path / "worker.log")
    served = (tmp_path / "server.log").read_text(encoding="utf-8")
    for line in (
        "before the match",
        "structlog while the server runs",
        "dramatiq while the server runs",
        "after the match",
        "structlog after the match",
    ):
        assert line in worker
        assert line not in served
    # The server's own lines, from its start to its stop, in its file only.
    for line in ("listening", "admin authenticated", "shutting down", "server stopped"):
        assert line in served
        assert line not in worker
    assert f"port={server.port}" in served


async def test_a_host_without_a_logging_set_up_keeps_its_stdout_and_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    structlog.reset_defaults()  # structlog's default: lines on stdout
    with trio.fail_after(30):
        async with (
            in_process_server(Settings(), tmp_path / "server.log") as server,
            admin_session(server),
        ):
            structlog.get_logger("host").info("the host's line")
    printed = capsys.readouterr()
    assert "the host's line" in printed.out
    assert "listening" not in printed.out + printed.err
    served = (tmp_path / "server.log").read_text(encoding="utf-8")
    assert "the host's line" not in served
    assert "admin authenticated" in served


async def test_two_servers_in_one_process_keep_separate_logs(tmp_path: Path) -> None:
    worker_log(tmp_path / "worker.log")
    with trio.fail_after(30):
        async with (
            in_process_server(Settings(), tmp_path / "one.log") as one,
            in_process_server(Settings(), tmp_path / "two.log") as two,
            admin_session(one),
            admin_session(two),
        ):
            structlog.get_logger("host").info("the host's line")
    logs = {name: (tmp_path / f"{name}.log").read_text(encoding="utf-8") for name in ("one", "two")}
    for name, server, other in (("one", one, two), ("two", two, one)):
        assert f"port={server.port}" in logs[name]
        assert f"port={other.port}" not in logs[name]
        assert logs[name].count("admin authenticated") == 1
        assert logs[name].count("server stopped") == 1
        assert "the host's line" not in logs[name]
    worker = flushed_text(tmp_path / "worker.log")
    assert "the host's line" in worker
    assert "listening" not in worker


async def test_a_league_table_leaves_the_workers_log_working(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a distributed worker does per match: open a league table, log, close it, log on."""
    bot = f'["{sys.executable}", "{TEST_BOTS / "fast_bot.py"}"]'
    config = parse_league(
        'name = "L"\n'
        + "".join(f'[[teams]]\nid = "{team}"\ncommand = {bot}\n' for team in ("a", "b")),
        base=tmp_path,
    )
    worker_log(tmp_path / "worker.log")
    with trio.fail_after(30):
        async with open_table(config, mode="process", log_dir=tmp_path / "logs"):
            logging.getLogger("dramatiq.worker").info("while the table is open")
    logging.getLogger("dramatiq.worker").info("the next message")
    worker = flushed_text(tmp_path / "worker.log")
    assert "while the table is open" in worker
    assert "the next message" in worker
    assert "while the table is open" not in (tmp_path / "logs" / "server.log").read_text()
    assert "I/O operation on closed file" not in capsys.readouterr().err
