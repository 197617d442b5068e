"""Subprocesses of this checkout: the repository paths, their environment, and the real
server command on loopback port 0."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio

REPO = Path(__file__).resolve().parents[2]
TEST_BOTS = REPO / "tests" / "bots"  # fast_bot.py (our protocol), random_bot.py (socha)
BIN = Path(sys.executable).parent  # the console scripts of this environment


def environment() -> dict[str, str]:
    """os.environ for a subprocess that must run the code of this checkout, whatever the
    installed package points at, and write its output unbuffered."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    return env


@dataclass
class ServerProcess:
    """A server command started by `server_process`."""

    process: trio.Process
    port: int
    log_path: Path


@asynccontextmanager
async def server_process(command: Sequence[str], cwd: Path) -> AsyncIterator[ServerProcess]:
    """Start the server on a free port (--port 0; the port is read from its JSON log) and
    stop it with SIGTERM afterwards, checking that it shuts down cleanly with status 0."""
    log_path = cwd / "server.log"
    with log_path.open("wb") as log_file:
        process = await trio.lowlevel.open_process(
            [*command, "--port", "0", "--log-format", "json", "--log-level", "info"],
            cwd=cwd,
            env=environment(),
            stdout=log_file,
            stderr=log_file,
        )
    try:
        port = await wait_for_port(process, log_path)
        yield ServerProcess(process, port, log_path)
    finally:
        if process.returncode is None:
            process.terminate()
    with trio.fail_after(15):
        status = await process.wait()
    assert status == 0, log_path.read_text(encoding="utf-8")


async def wait_for_port(process: trio.Process, log_path: Path) -> int:
    """The port of the server's JSON "listening" log line (polled: the log is a file)."""
    with trio.fail_after(20):
        while True:
            for line in log_path.read_text(encoding="utf-8").splitlines():
                if line.startswith("{"):
                    entry = json.loads(line)
                    if entry.get("event") == "listening":
                        return int(entry["port"])
            if process.returncode is not None:
                pytest.fail(f"server exited early: {log_path.read_text(encoding='utf-8')}")
            await trio.sleep(0.05)
