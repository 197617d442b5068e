"""The server process: listen, serve connections, shut down gracefully on SIGINT/SIGTERM."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import signal
import socket
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from protocol import GAME_TYPE, ServerConnection
from protocol.messages import ErrorPacket
from server.config import Settings, with_start_state
from server.connection import CLOSE_GRACE, Connection
from server.feed import Companion, GuardsLogins
from server.limits import (
    Episode,
    address_key,
    connection_cap,
    is_loopback,
    raise_descriptor_limit,
)
from server.lobby import SHUTDOWN_REASON, Lobby
from server.logs import get_logger
from server.recorder import GameSink, Recorder
from server.transport import SocketTransport, stamp_listener

log = get_logger("server.app")

# The address of every client on the Unix socket (bots in containers, docs/sandbox.md).
UNIX_PEER = "unix"

# accept() errors that mean "no resources for a new connection right now" (as trio's
# serve_listeners): wait a little and try again, the server recovers when they come back.
_ACCEPT_CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
ACCEPT_RETRY_SECONDS = 0.1
# accept() errors trio's SocketListener.accept retries at once (the client gave up, the
# network is down...), and those of a listener closed under the loop.
_IGNORABLE_ACCEPT_ERRNOS = frozenset(
    getattr(errno, name)
    for name in (
        "EPERM",
        "ECONNABORTED",
        "EPROTO",
        "ENETDOWN",
        "ENOPROTOOPT",
        "EHOSTDOWN",
        "ENONET",
        "EHOSTUNREACH",
        "EOPNOTSUPP",
        "ENETUNREACH",
        "ENOSR",
        "ESOCKTNOSUPPORT",
        "EPROTONOSUPPORT",
        "ETIMEDOUT",
        "ECONNRESET",
    )
    if hasattr(errno, name)
)
_CLOSED_ERRNOS = frozenset({errno.EBADF, errno.ENOTSOCK})
_TCP_NOTSENT_LOWAT: int | None = getattr(socket, "TCP_NOTSENT_LOWAT", None)


async def serve(
    settings: Settings,
    *,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
    stop: trio.Event | None = None,
    handle_signals: bool = True,
    descriptor_limit: int | None = None,
    sinks: Sequence[GameSink] = (),
    companion: Companion | None = None,
) -> None:
    """Run the game server until SIGINT/SIGTERM (or `stop` is set). `task_status.started`
    gets the port actually bound, so `port=0` works. On stop, running games end with an
    aborted result that is sent to the clients (result, then left) and recorded before this
    returns; a second signal only shortens the wait for clients to take their last messages.

    The soft descriptor limit is raised to the hard one; `descriptor_limit` replaces what that
    gives (tests), and the connection cap is lowered to keep a reserve of descriptors. `sinks`
    get every finished game after the server's own (results log): how an embedding program
    (the match runner) learns the server-measured move times. A `companion` (the web viewer)
    gets the lobby's observer feed and runs in the server's nursery once the game port is
    bound."""
    stop = stop if stop is not None else trio.Event()
    if descriptor_limit is None:
        descriptor_limit = raise_descriptor_limit()
    admission = Admission(settings, connection_cap(settings.max_connections, descriptor_limit))
    # load_settings has loaded the start state already; settings built in code may not have.
    settings = with_start_state(settings)
    lobby = Lobby(
        settings,
        recorder=Recorder.from_settings(settings, sinks),
        feed=companion.feed if companion is not None else None,
    )
    listeners = await trio.open_tcp_listeners(settings.port, host=settings.host)
    port = listeners[0].socket.getsockname()[1]
    # Accepted TCP sockets inherit the listeners' receive stamps (one setsockopt less each).
    stamping = all([stamp_listener(listener) for listener in listeners])
    if settings.unix_socket is not None:
        listeners.append(await open_unix_listener(settings.unix_socket))
    connections: set[Connection] = set()
    all_closed = trio.Event()
    all_closed.set()

    def ended(connection: Connection, host: str, error: Exception | None) -> None:
        """A connection's end (`Connection.run` calls it last, on every path)."""
        if error is not None:
            log.exception("connection failed", peer=connection.name)
        connections.discard(connection)
        admission.release(host)
        if not connections:
            all_closed.set()

    grace = trio.CancelScope()  # the wait for clients at shutdown; a second signal ends it
    with contextlib.ExitStack() as exit_stack:
        signals = _signal_receiver(exit_stack) if handle_signals else None
        async with trio.open_nursery() as nursery:
            await nursery.start(lobby.run)
            if signals is not None:
                nursery.start_soon(_stop_on_signal, signals, stop, grace)
            async with trio.open_nursery() as connection_nursery:
                accept_scope = trio.CancelScope()

                def admit(sock: socket.socket, host: str, name: str) -> None:
                    refusal = admission.admit(host)
                    if refusal is not None:
                        _refuse(sock, refusal)
                        return
                    nonlocal all_closed
                    unix = host == UNIX_PEER
                    if not unix:
                        _tcp_options(sock)
                    transport = SocketTransport(sock, listener_stamped=stamping and not unix)
                    connection = Connection(
                        None,
                        lobby,
                        settings,
                        name,
                        address=address_key(host),
                        transport=transport,
                        # Its writer task (when a write does not fit at once) runs here: no
                        # nursery per connection.
                        spawn=connection_nursery.start_soon,
                    )
                    connections.add(connection)
                    if all_closed.is_set():
                        all_closed = trio.Event()
                    # Its run is the task (no coroutine around it: every switch of the read
                    # task passes each frame of its stack); `ended` does the bookkeeping.
                    connection_nursery.start_soon(
                        connection.run, functools.partial(ended, connection, host)
                    )

                async def accept() -> None:
                    exhausted = Episode("out of descriptors: not accepting connections")
                    with accept_scope:
                        async with trio.open_nursery() as accept_nursery:
                            for listener in listeners:
                                accept_nursery.start_soon(accept_loop, listener, admit, exhausted)

                connection_nursery.start_soon(accept)
                log.info(
                    "listening",
                    host=settings.host,
                    port=port,
                    max_connections=admission.cap,
                    descriptor_limit=descriptor_limit,
                    game_type=GAME_TYPE,
                    connect_a_bot=f"start.sh -h {_reachable_host(settings.host)} -p {port}",
                )
                if companion is not None:
                    if isinstance(companion, GuardsLogins):
                        companion.use_login_gate(lobby.logins)  # one lockout for both logins
                    await nursery.start(companion.run, port)
                task_status.started(port)
                await stop.wait()

                log.info("shutting down", open_rooms=len(lobby.rooms), connections=len(connections))
                accept_scope.cancel()
                for listener in listeners:
                    await trio.aclose_forcefully(listener)
                if settings.unix_socket is not None:
                    settings.unix_socket.unlink(missing_ok=True)
                await lobby.shutdown(SHUTDOWN_REASON)
                for connection in list(connections):
                    connection.close()
                grace.deadline = trio.current_time() + CLOSE_GRACE + 1
                with grace:
                    await all_closed.wait()
                if connections:
                    # Those left did not take their last messages (results were recorded).
                    log.info(
                        "stopped waiting for clients",
                        connections=len(connections),
                        ended_by="signal" if trio.current_time() < grace.deadline else "deadline",
                    )
                connection_nursery.cancel_scope.cancel()
            nursery.cancel_scope.cancel()
        # Still inside the signal handling: a signal now cannot cut this line off.
        log.info("server stopped")


@dataclass
class Admission:
    """Counts open connections in total and per remote address and refuses one over a cap.

    Loopback clients are exempt from the per-address cap unless
    `per_address_limit_on_loopback` (a league on one machine opens many connections from
    127.0.0.1); they still count towards the total."""

    settings: Settings
    cap: int
    total: int = 0
    by_address: dict[str, int] = field(default_factory=dict)
    total_episode: Episode = field(init=False)
    address_episodes: dict[str, Episode] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.total_episode = Episode("connection limit reached: refusing connections", cap=self.cap)

    def admit(self, host: str) -> str | None:
        """Count a new connection from `host`, or return why it is refused."""
        if self.total >= self.cap:
            self.total_episode.hit(address=host)
            return f"Too many connections: the server accepts {self.cap} at once"
        key = address_key(host)
        per_address = self.settings.max_connections_per_address
        local = is_loopback(key) or key == UNIX_PEER
        limited = self.settings.per_address_limit_on_loopback or not local
        count = self.by_address.get(key, 0)
        if limited and count >= per_address:
            episode = self.address_episodes.get(key)
            if episode is None:
                episode = self.address_episodes[key] = Episode(
                    "connection limit per address reached: refusing connections",
                    address=key,
                    cap=per_address,
                )
            episode.hit()
            return f"Too many connections from {key}: the server accepts {per_address} at once"
        self.total += 1
        self.by_address[key] = count + 1
        self._relieve(key)
        return None

    def release(self, host: str) -> None:
        """A connection counted by `admit` has ended."""
        key = address_key(host)
        self.total -= 1
        count = self.by_address.get(key, 0) - 1
        if count > 0:
            self.by_address[key] = count
        else:
            self.by_address.pop(key, None)
        self._relieve(key)

    def _relieve(self, key: str) -> None:
        """End the episodes of the limits no longer reached (each decides if it is quiet
        long enough)."""
        if self.total < self.cap:
            self.total_episode.relieved()
        episode = self.address_episodes.get(key)
        if episode is not None and self.by_address.get(key, 0) < (
            self.settings.max_connections_per_address
        ):
            episode.relieved()
            if not episode.active:
                del self.address_episodes[key]


async def accept_loop(
    listener: trio.SocketListener,
    admit: Callable[[socket.socket, str, str], None],
    exhausted: Episode,
) -> None:
    """Accept connections and hand each to `admit` (a non-blocking stdlib socket, the remote
    host and "host:port" for logs). Running out of descriptors (or kernel memory) pauses
    accepting briefly and is logged once per episode, not once per attempt.

    The listener's descriptor is accepted from directly, as `SocketListener.accept` does
    (the same errors ignored), without trio's socket object, `SocketStream` and `getpeername`
    a connection: `admit` sets the stream's TCP options (`_tcp_options`)."""
    trio_socket = listener.socket
    # As SocketListener.accept: a checkpoint first (a stop that came before this task ran
    # cancels it here), and a listener closed meanwhile is a ClosedResourceError.
    await trio.lowlevel.checkpoint()
    if trio_socket.fileno() < 0:
        raise trio.ClosedResourceError("the listener is closed")
    # A view of the listener's descriptor, detached at the end (trio's listener closes it).
    view = socket.socket(
        trio_socket.family, trio_socket.type, trio_socket.proto, trio_socket.fileno()
    )
    try:
        # socket.accept without the socket module's per-call enum conversions of the family
        # and type (`_accept` is the C call socket.accept itself makes: descriptor, address).
        await accept_from(view, view._accept, admit, exhausted)  # type: ignore[attr-defined]
    finally:
        view.detach()


async def accept_from(
    listening: socket.socket,
    accept: Callable[[], tuple[int, Any]],
    admit: Callable[[socket.socket, str, str], None],
    exhausted: Episode,
) -> None:
    """`accept_loop`'s loop: wait for `listening` to be readable, `accept()` a descriptor and
    its peer's address, hand the socket to `admit`."""
    family, kind, proto = listening.family, listening.type, listening.proto
    unix = family == socket.AF_UNIX
    wait_readable = trio.lowlevel.wait_readable
    while True:
        # Waiting first is the checkpoint (a flood of connections cannot starve the games),
        # and at most one accept call a connection.
        await wait_readable(listening)
        try:
            fd, address = accept()
        except BlockingIOError:
            continue  # another process took it, or the client gave up
        except OSError as error:
            if error.errno in _CLOSED_ERRNOS:
                raise trio.ClosedResourceError from None
            if error.errno in _IGNORABLE_ACCEPT_ERRNOS:
                continue
            if error.errno not in _ACCEPT_CAPACITY_ERRNOS:
                raise
            exhausted.hit(error=os.strerror(error.errno), retry_seconds=ACCEPT_RETRY_SECONDS)
            await trio.sleep(ACCEPT_RETRY_SECONDS)
            continue
        exhausted.relieved()
        sock = socket.socket(family, kind, proto, fd)
        sock.setblocking(False)
        if unix:
            admit(sock, UNIX_PEER, UNIX_PEER)
        else:
            host, peer_port = address[:2]
            admit(sock, host, f"{host}:{peer_port}")


def _tcp_options(sock: socket.socket) -> None:
    """What trio.SocketStream sets on a TCP socket: TCP_NODELAY (as official: a memento must
    not wait for the client's ack of the last one) and a 16 KiB TCP_NOTSENT_LOWAT (what the
    kernel queues unsent, so a slow reader's backlog stays in the send queue's bounds)."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if _TCP_NOTSENT_LOWAT is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, _TCP_NOTSENT_LOWAT, 2**14)


def _refuse(sock: socket.socket, message: str) -> None:
    """Close a connection over a cap at once: one non-blocking write of an errorpacket (what
    the socket buffer takes, which is all of it on a fresh connection), then close."""
    # An OSError: the client is gone or does not read, closing is all that is left.
    with contextlib.suppress(OSError):
        os.write(sock.fileno(), _refusal_bytes(message))
    sock.close()


def _refusal_bytes(message: str) -> bytes:
    protocol = ServerConnection()
    return protocol.send(ErrorPacket(message, None)) + protocol.close()


async def open_unix_listener(path: Path) -> trio.SocketListener:
    """A listener on the Unix domain socket `path`, next to the TCP one: bots in containers
    without a network reach the server through it (docs/sandbox.md). A socket file left by a
    server that died is replaced; any other file there is an error (OSError)."""
    if path.is_socket():
        path.unlink()
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        await sock.bind(str(path))
        sock.listen(socket.SOMAXCONN)
    except BaseException:
        sock.close()
        raise
    return trio.SocketListener(sock)


def _reachable_host(host: str) -> str:
    """A host name a bot can connect to: "0.0.0.0"/"::" listen everywhere but are no address."""
    if host in ("0.0.0.0", "::", ""):
        return socket.gethostname()
    return host


def _signal_receiver(exit_stack: contextlib.ExitStack) -> AsyncIterator[int] | None:
    """Catch SIGINT/SIGTERM from now on (before clients can connect), or None where signals
    cannot be caught (not the main thread, e.g. embedded in a test).

    trio re-raises signals its receiver has not handed out when it closes, with the handlers
    that were in place before it. Those are "ignore" here, restored to the real ones only
    afterwards: a signal during the last moments of the shutdown cannot kill the process."""
    if threading.current_thread() is not threading.main_thread():
        log.debug("signal handling unavailable outside the main thread")
        return None
    stop_signals = (signal.SIGINT, signal.SIGTERM)
    originals = {signum: signal.getsignal(signum) for signum in stop_signals}
    exit_stack.callback(_restore_handlers, originals)
    for signum in stop_signals:
        signal.signal(signum, signal.SIG_IGN)
    return exit_stack.enter_context(trio.open_signal_receiver(*stop_signals))


def _restore_handlers(handlers: dict[signal.Signals, Any]) -> None:
    for signum, handler in handlers.items():
        signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


async def _stop_on_signal(
    signals: AsyncIterator[int], stop: trio.Event, grace: trio.CancelScope
) -> None:
    """The first signal starts the graceful shutdown. Later ones are consumed here (trio would
    re-raise a signal left unread, and the default SIGTERM action kills the process before
    the results are recorded): they only end the wait for clients to read their last
    messages; games are still ended and recorded."""
    async for signum in signals:
        name = signal.Signals(signum).name
        if not stop.is_set():
            log.info("signal received", signal=name)
            stop.set()
        else:
            log.info("signal received again: not waiting for clients any longer", signal=name)
            grace.cancel()
