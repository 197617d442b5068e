"""The server process: listen, serve connections, shut down gracefully on SIGINT/SIGTERM."""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import AsyncIterator
from dataclasses import replace

import structlog
import trio

from server.config import Settings
from server.connection import CLOSE_GRACE, Connection
from server.feed import Companion
from server.lobby import GAME_TYPE, SHUTDOWN_REASON, Lobby
from server.replays import load_start_state

log = structlog.get_logger("server.app")


async def serve(
    settings: Settings,
    *,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
    stop: trio.Event | None = None,
    handle_signals: bool = True,
    companion: Companion | None = None,
) -> None:
    """Run the game server until SIGINT/SIGTERM (or `stop` is set). `task_status.started`
    gets the port actually bound, so `port=0` works. On stop, running games end with an
    aborted result that is sent to the clients (result, then left) and recorded before this
    returns. A `companion` (the web viewer) gets the lobby's observer feed and runs in the
    server's nursery once the game port is bound."""
    stop = stop if stop is not None else trio.Event()
    if settings.load_game_file is not None and settings.start_state is None:
        # load_settings does this already; settings built in code may not have.
        settings = replace(
            settings, start_state=load_start_state(settings.load_game_file, settings.turn)
        )
    lobby = Lobby(settings, feed=companion.feed if companion is not None else None)
    listeners = await trio.open_tcp_listeners(settings.port, host=settings.host)
    port = listeners[0].socket.getsockname()[1]
    connections: set[Connection] = set()
    all_closed = trio.Event()
    all_closed.set()

    async def handle(stream: trio.SocketStream) -> None:
        nonlocal all_closed
        try:
            # trio sets TCP_NODELAY on accepted sockets already; make sure of it, as official.
            stream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
            host, peer_port = stream.socket.getpeername()[:2]
            name = f"{host}:{peer_port}"
        except OSError:
            name = "client"
        connection = Connection(stream, lobby, settings, name)
        connections.add(connection)
        if all_closed.is_set():
            all_closed = trio.Event()
        try:
            await connection.run()
        except Exception:
            log.exception("connection failed", peer=connection.name)
        finally:
            connections.discard(connection)
            if not connections:
                all_closed.set()

    with contextlib.ExitStack() as exit_stack:
        signals = _signal_receiver(exit_stack) if handle_signals else None
        async with trio.open_nursery() as nursery:
            await nursery.start(lobby.run)
            if signals is not None:
                nursery.start_soon(_stop_on_signal, signals, stop)
            async with trio.open_nursery() as connection_nursery:
                accept_scope = trio.CancelScope()

                async def accept() -> None:
                    with accept_scope:
                        await trio.serve_listeners(
                            handle, listeners, handler_nursery=connection_nursery
                        )

                connection_nursery.start_soon(accept)
                log.info(
                    "listening",
                    host=settings.host,
                    port=port,
                    game_type=GAME_TYPE,
                    connect_a_bot=f"start.sh -h {_reachable_host(settings.host)} -p {port}",
                )
                if companion is not None:
                    await nursery.start(companion.run, port)
                task_status.started(port)
                await stop.wait()

                log.info("shutting down", open_rooms=len(lobby.rooms), connections=len(connections))
                accept_scope.cancel()
                for listener in listeners:
                    await trio.aclose_forcefully(listener)
                await lobby.shutdown(SHUTDOWN_REASON)
                for connection in list(connections):
                    connection.close()
                with trio.move_on_after(CLOSE_GRACE + 1):
                    await all_closed.wait()
                connection_nursery.cancel_scope.cancel()
            nursery.cancel_scope.cancel()
    log.info("server stopped")


def _reachable_host(host: str) -> str:
    """A host name a bot can connect to: "0.0.0.0"/"::" listen everywhere but are no address."""
    if host in ("0.0.0.0", "::", ""):
        return socket.gethostname()
    return host


def _signal_receiver(exit_stack: contextlib.ExitStack) -> AsyncIterator[int] | None:
    """Catch SIGINT/SIGTERM from now on (before clients can connect), or None where signals
    cannot be caught (not the main thread, e.g. embedded in a test)."""
    try:
        return exit_stack.enter_context(trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM))
    except RuntimeError:
        log.debug("signal handling unavailable outside the main thread")
        return None


async def _stop_on_signal(signals: AsyncIterator[int], stop: trio.Event) -> None:
    async for signum in signals:
        log.info("signal received", signal=signal.Signals(signum).name)
        stop.set()
        return
