"""The game server in this process: the one place piranhas-match, its reproducers, the league
and the distributed workers start it.

`in_process_server(settings, log_path)` serves on a free loopback port with a random admin
password, with a recorder sink (`ServerGames`) that hands over every
finished game with the server's own move times. The server logs every move: to `log_path`,
not between the command's lines, through a log of its own (`server.logs.ServerLog`) that leaves
the process's logging alone: the caller's lines and its libraries' (a worker's log file,
Dramatiq's lines) go where the caller configured them while the server runs, and servers open
at once in one process keep separate logs.
"""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import AsyncIterator
from contextlib import ExitStack, asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import trio

from launching import MatchError
from runner.game import ServerAddress
from runner.timing import ServerGames
from server.config import Settings
from server.exits import lone_exception

__all__ = ["in_process_server", "server_settings"]


def server_settings(**changes: Any) -> Settings:
    """The server's default settings with `changes` (field names of server.config.Settings),
    for callers that start an in-process server without importing the server themselves."""
    return replace(Settings(), **changes)


@asynccontextmanager
async def in_process_server(
    settings: Settings,
    log_path: Path,
    *,
    log_level: str = "info",
    unix_socket: bool = False,
) -> AsyncIterator[ServerAddress]:
    """Serve `settings` on 127.0.0.1 (free port) for the time of the block; the address the
    bots and admins connect to. `unix_socket`: also listen on a socket in a private temporary
    directory (container players reach the server through a relay on it, docs/sandbox.md).
    Raises MatchError when the server cannot start. Leaving the block stops the server
    gracefully (it returns at once without rooms)."""
    from server.app import serve
    from server.logs import ServerLog

    settings = replace(
        settings,
        host="127.0.0.1",
        port=0,
        password=secrets.token_urlsafe(18),
    )
    games = ServerGames()
    stop = trio.Event()
    with ExitStack() as files:
        if unix_socket:
            socket_dir = files.enter_context(tempfile.TemporaryDirectory(prefix="piranhas-"))
            settings = replace(settings, unix_socket=Path(socket_dir) / "server.sock")
        try:
            log_file = files.enter_context(log_path.open("a", encoding="utf-8"))
        except OSError as error:
            raise MatchError(f"cannot open the server log {log_path}: {error}") from None
        server_log = ServerLog(log_file, log_level)
        files.callback(server_log.flush)  # its last lines, before the file closes

        async def serve_logging(*, task_status: trio.TaskStatus[int]) -> None:
            # In the server's task only: the tasks and threads it starts inherit the log,
            # the caller's task (the block below) keeps the process's logging.
            with server_log.serving():
                await serve(
                    settings,
                    task_status=task_status,
                    stop=stop,
                    handle_signals=False,
                    sinks=[games],
                )

        try:
            async with trio.open_nursery() as nursery:
                try:
                    port: int = await nursery.start(serve_logging)
                except OSError as error:
                    raise MatchError(f"cannot start the server: {error}") from None
                try:
                    yield ServerAddress(
                        host="127.0.0.1",
                        port=port,
                        password=settings.password,
                        password_source="random",
                        hard_timeout=settings.hard_timeout,
                        soft_timeout=settings.soft_timeout,
                        games=games,
                        unix_socket=settings.unix_socket,
                    )
                finally:
                    stop.set()
        except BaseExceptionGroup as group:
            # The nursery wraps what the block raised: the caller sees it as raised (a
            # MatchError, a KeyboardInterrupt), unless the server failed as well.
            lone = lone_exception(group)
            if lone is None:
                raise
            raise lone from lone.__cause__
