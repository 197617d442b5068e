"""The game server in this process: the one place piranhas-match, its reproducers, the league
and the distributed workers start it.

`in_process_server(settings, log_path)` serves on a free loopback port with a random admin
password, with a recorder sink (`ServerGames`) that hands over every
finished game with the server's own move times. The server logs every move: to `log_path`,
not between the command's lines; afterwards the logging is exactly what it was
(`server.logs.logging_to`), so a caller's handlers (a worker's log file, Dramatiq's lines) work
on after the server's file is closed.
"""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import AsyncIterator
from contextlib import ExitStack, asynccontextmanager
from dataclasses import replace
from functools import partial
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
    from server.logs import logging_to

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
        files.enter_context(logging_to(log_file, log_level))
        try:
            async with trio.open_nursery() as nursery:
                try:
                    port: int = await nursery.start(
                        partial(serve, settings, stop=stop, handle_signals=False, sinks=[games])
                    )
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
