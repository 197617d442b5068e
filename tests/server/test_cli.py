"""The command line entry point and logging set-up."""

from __future__ import annotations

import gc
import io
import json
import logging
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
import structlog
import trio

from cli.server import GC_YOUNG_THRESHOLD, main, tune_garbage_collection
from server.logs import FLUSH_SECONDS, configure_logging, flush_logs
from tests.helpers.logs import restored_logging


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    with restored_logging():
        yield


def test_config_error_exits_2_with_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "server.properties").write_text("password=x\nport=abc\n", encoding="utf-8")
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "server.properties:2" in err
    assert "'abc'" in err
    assert "Traceback" not in err


def test_bad_flag_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["--port", "70000"]) == 2
    assert "--port" in capsys.readouterr().err


def test_help_exits_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["--help"]) == 0
    assert "piranhas-server" in capsys.readouterr().out


def test_python_dash_m_cli_server_reports_config_error(tmp_path: Path) -> None:
    process = subprocess.run(
        [sys.executable, "-m", "cli.server", "--paused", "maybe"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert process.returncode == 2
    assert "--paused" in process.stderr and "'maybe'" in process.stderr
    assert "Traceback" not in process.stderr


def test_json_logs_are_one_object_per_line() -> None:
    stream = io.StringIO()
    configure_logging("json", "info", stream=stream, cache=False)
    log = structlog.get_logger("t")
    log.debug("hidden")
    log.info("game over", room="r1")
    log.warning("slow", ms=12)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(line["event"], line["level"]) for line in lines] == [
        ("game over", "info"),
        ("slow", "warning"),
    ]
    assert lines[0]["room"] == "r1"
    assert "timestamp" in lines[0]


def test_console_logs_are_plain_text_without_colours_when_not_a_tty() -> None:
    stream = io.StringIO()
    configure_logging("console", "warning", stream=stream, cache=False)
    log = structlog.get_logger("t")
    log.info("hidden")
    log.error("boom", port=13050)
    text = stream.getvalue()
    assert "hidden" not in text
    assert "boom" in text and "port=13050" in text
    assert "\x1b[" not in text


def test_plain_console_lines_quote_only_ambiguous_values_and_show_tracebacks() -> None:
    stream = io.StringIO()
    configure_logging("console", "info", stream=stream, cache=False)
    log = structlog.get_logger("t")
    log.info("move", room="r1", move="Schwimme von [9|8] in Richtung LEFT", ms=0.5)
    try:
        raise RuntimeError("kaputt")
    except RuntimeError:
        log.exception("failed", peer="p#1")
    first, second, *traceback = stream.getvalue().splitlines()
    assert "[info     ] move " in first
    assert first.endswith("room=r1 move='Schwimme von [9|8] in Richtung LEFT' ms=0.5")
    assert "[error    ] failed" in second and second.endswith("peer=p#1")
    assert traceback[0] == "Traceback (most recent call last):"
    assert traceback[-1] == "RuntimeError: kaputt"


def test_stderr_lines_are_buffered_in_order_and_flushed_soon(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server's stderr, no terminal: info lines wait a moment (no write per move), a
    warning or a standard-library record goes out at once, after the lines waiting."""
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    configure_logging("console", "info", cache=False)
    log = structlog.get_logger("t")
    log.info("first")
    log.info("second")
    assert stderr.getvalue() == ""  # waiting
    logging.getLogger("library").warning("third")
    log.info("fourth")
    log.warning("fifth")
    log.info("sixth")
    lines = stderr.getvalue().splitlines()
    assert [line.split("] ")[1].split()[0] for line in lines[:2]] == ["first", "second"]
    assert lines[2].endswith("library: third")
    assert [line.split("] ")[1].split()[0] for line in lines[3:]] == ["fourth", "fifth"]
    deadline = time.monotonic() + 5
    while "sixth" not in stderr.getvalue():
        assert time.monotonic() < deadline, "an info line was never flushed"
        time.sleep(FLUSH_SECONDS / 4)
    log.info("seventh")
    flush_logs()
    assert stderr.getvalue().splitlines()[-1].split("] ")[1].startswith("seventh")


def test_json_logs_render_exceptions() -> None:
    stream = io.StringIO()
    configure_logging("json", "debug", stream=stream, cache=False)
    try:
        raise RuntimeError("kaputt")
    except RuntimeError:
        structlog.get_logger("t").exception("failed")
    line = json.loads(stream.getvalue())
    assert "kaputt" in json.dumps(line["exception"])


def test_unknown_format_or_level_is_rejected() -> None:
    with pytest.raises(ValueError, match="format"):
        configure_logging("xml", "info")
    with pytest.raises(ValueError, match="level"):
        configure_logging("json", "loud")


async def start_server(cwd: Path, *args: str) -> trio.Process:
    return await trio.lowlevel.open_process(
        [sys.executable, "-m", "cli.server", "--log-format", "json", *args],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


async def read_until(process: trio.Process, text: bytes) -> bytes:
    assert process.stderr is not None
    output = b""
    while text not in output:
        chunk = await process.stderr.receive_some(4096)
        if not chunk:
            break
        output += chunk
    return output


async def test_sigint_shuts_down_gracefully_with_status_0(tmp_path: Path) -> None:
    with trio.fail_after(30):
        process = await start_server(tmp_path, "--port", "0")
        output = await read_until(process, b'"listening"')
        assert b'"listening"' in output
        # Right after "listening": the app handles signals before it announces the port.
        process.send_signal(signal.SIGINT)
        assert await process.wait() == 0
        assert b"server stopped" in await read_until(process, b"server stopped")


async def test_port_in_use_exits_1_with_a_message(tmp_path: Path) -> None:
    with socket.socket() as occupant, trio.fail_after(30):
        occupant.bind(("127.0.0.1", 0))
        occupant.listen()
        port = occupant.getsockname()[1]
        process = await start_server(tmp_path, "--port", str(port))
        output = await read_until(process, b"server failed")
        assert await process.wait() == 1
    line = next(json.loads(x) for x in output.splitlines() if b"server failed" in x)
    assert line["port"] == port
    assert line["level"] == "error"
    assert b"Traceback" not in output


# `piranhas-server` whose serve, once stopped by a SIGTERM, gets one SIGTERM and one SIGINT
# more: after serve gave the signals back (inside trio.run) and after main returned.
LATE_SIGNALS = """
import functools, os, signal, sys
import trio
import server.app
from cli.server import main

real_serve = server.app.serve

def late_signals():
    os.kill(os.getpid(), signal.SIGTERM)
    os.kill(os.getpid(), signal.SIGINT)

async def serve(settings, **options):
    async with trio.open_nursery() as nursery:
        await nursery.start(functools.partial(real_serve, settings, **options))
        os.kill(os.getpid(), signal.SIGTERM)
    late_signals()
    await trio.sleep(0)

server.app.serve = serve
status = main(sys.argv[1:])
late_signals()
sys.exit(status)
"""


async def test_a_signal_after_the_graceful_shutdown_changes_nothing(tmp_path: Path) -> None:
    """The server was asked to stop and did: a late SIGTERM or Ctrl+C (serve has given the
    signals back) neither kills it (-15) nor calls it interrupted (130): status 0."""
    with trio.fail_after(30):
        process = await trio.run_process(
            [sys.executable, "-c", LATE_SIGNALS, "--log-format", "json", "--port", "0"],
            cwd=tmp_path,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    output = process.stderr.decode()
    assert process.returncode == 0, output
    assert "server stopped" in output and "interrupted" not in output
    assert "Traceback" not in output


async def test_properties_warnings_are_logged_at_start(tmp_path: Path) -> None:
    (tmp_path / "server.properties").write_text("paused=false\nprot=1\n", encoding="utf-8")
    with trio.fail_after(30):
        process = await start_server(tmp_path, "--port", "0")
        output = await read_until(process, b'"listening"')
        process.send_signal(signal.SIGTERM)
        assert await process.wait() == 0
    warnings = [
        entry["event"]
        for entry in map(json.loads, output.splitlines())
        if entry.get("level") == "warning"
    ]
    assert any("no password" in warning for warning in warnings)
    assert any("server.properties:2: unknown key 'prot'" in warning for warning in warnings)


def fake_serve(error: BaseException) -> Callable[..., Awaitable[None]]:
    async def serve(settings: object, **_: object) -> None:
        async def fail() -> None:
            raise error

        async with trio.open_nursery() as nursery:
            nursery.start_soon(fail)

    return serve


@pytest.mark.parametrize(
    ("error", "status", "message"),
    [
        (KeyboardInterrupt(), 130, "interrupted before a graceful shutdown"),
        (OSError(98, "Address already in use"), 1, "Address already in use"),
    ],
)
def test_interrupt_during_start_up_and_os_errors_inside_exception_groups(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    error: BaseException,
    status: int,
    message: str,
) -> None:
    import server.app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(server.app, "serve", fake_serve(error))
    assert main(["--log-format", "json"]) == status
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_unexpected_errors_are_not_hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import server.app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(server.app, "serve", fake_serve(ZeroDivisionError("bug")))
    with pytest.raises(BaseExceptionGroup) as group:
        main([])
    assert group.group_contains(ZeroDivisionError)


def test_the_server_freezes_what_it_loaded_and_collects_the_young_less_often() -> None:
    threshold = gc.get_threshold()
    try:
        tune_garbage_collection()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, threshold[1], threshold[2])
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
