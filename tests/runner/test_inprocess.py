"""The game server in this process (runner.inprocess): it logs to its own file while it runs,
and afterwards the logging is the caller's again, the standard library's root handlers
included (a distributed worker's Dramatiq lines went to the server's closed file before)."""

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


async def test_the_callers_logging_works_on_after_the_server_stopped(tmp_path: Path) -> None:
    worker_log(tmp_path / "worker.log")
    logging.getLogger("dramatiq.worker").info("before the match")
    with trio.fail_after(30):
        async with (
            in_process_server(Settings(), tmp_path / "server.log") as server,
            admin_session(server),
        ):
            structlog.get_logger("test").info("while the server runs")
    logging.getLogger("dramatiq.worker").info("after the match")
    structlog.get_logger("test").info("structlog after the match")
    for handler in logging.root.handlers:
        handler.flush()
    worker = (tmp_path / "worker.log").read_text(encoding="utf-8")
    assert "before the match" in worker
    assert "after the match" in worker
    assert "structlog after the match" in worker
    assert "while the server runs" not in worker
    assert "while the server runs" in (tmp_path / "server.log").read_text(encoding="utf-8")


async def test_a_league_table_gives_the_worker_its_log_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a distributed worker does per match: open a league table, then log on."""
    bot = f'["{sys.executable}", "{TEST_BOTS / "fast_bot.py"}"]'
    config = parse_league(
        'name = "L"\n'
        + "".join(f'[[teams]]\nid = "{team}"\ncommand = {bot}\n' for team in ("a", "b")),
        base=tmp_path,
    )
    worker_log(tmp_path / "worker.log")
    with trio.fail_after(30):
        async with open_table(config, mode="process", log_dir=tmp_path / "logs"):
            pass
    logging.getLogger("dramatiq.worker").info("the next message")
    for handler in logging.root.handlers:
        handler.flush()
    assert "the next message" in (tmp_path / "worker.log").read_text(encoding="utf-8")
    assert "I/O operation on closed file" not in capsys.readouterr().err
