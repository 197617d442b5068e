"""One client connection: bytes → protocol events → lobby, and lobby messages → bytes.

A reader task parses the stream with the sans-IO `protocol.ServerConnection` and hands each
packet to the lobby, stamped with the time its last bytes arrived. A writer task serializes
queued messages and writes them. The queue is bounded: a client that does not read its
messages is disconnected instead of making the server buffer without limit, and nothing a
connection does can block the lobby or another connection.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable

import structlog
import trio

from protocol import NEED_DATA, ProtocolLimits, RemoteProtocolError, ServerConnection
from protocol.events import CloseRequest, StreamEnd
from protocol.messages import CloseConnection, ErrorPacket, ServerMessage
from server.config import Settings
from server.lobby import (
    LOST_CONNECTION,
    PROTOCOL_ERROR,
    RECEIVED_DISCONNECT,
    TIMEOUT,
    UNKNOWN,
    Lobby,
)

log = structlog.get_logger("server.connection")

RECEIVE_BYTES = 65536
# A single write may block this long (the client reads nothing) before the client counts as gone.
SEND_TIMEOUT = 30.0
# After the connection ends, queued messages and "</protocol>" get this long to go out.
CLOSE_GRACE = 5.0
# The server closes this connection deliberately (shutdown); reported like the official one.
INITIATED_DISCONNECT = "INITIATED_DISCONNECT"

_numbers = itertools.count(1)

_Outgoing = tuple[bytes, Callable[[float], None] | None]


class Connection:
    """A `Peer` of the lobby around one byte stream. `run()` serves it until it ends."""

    def __init__(
        self,
        stream: trio.abc.Stream,
        lobby: Lobby,
        settings: Settings,
        name: str = "",
        *,
        address: str = "",
    ) -> None:
        self.name = f"{name or 'client'}#{next(_numbers)}"
        self.address = address  # remote host: failed admin logins are counted per address
        self._stream = stream
        self._lobby = lobby
        self._settings = settings
        self._protocol = ServerConnection(
            ProtocolLimits(max_packet_bytes=settings.max_packet_bytes)
        )
        self._outbox_in, self._outbox = trio.open_memory_channel[_Outgoing](
            max(1, settings.send_buffer_messages)
        )
        self._accepting = True  # the lobby may still queue messages
        self._read_scope = trio.CancelScope()
        self._write_scope = trio.CancelScope()
        self._stop_cause: str | None = None  # why the server ended the reading
        self._abort = False  # drop what is queued: the client cannot take it
        self._left_lobby = False
        self._last_activity = 0.0
        # On a real socket, read and write the descriptor directly and wait with trio's
        # wait_readable/wait_writable: trio's generic stream calls cost two scheduler trips per
        # call, a large share of the server's time per move. Other streams (tests) use the
        # generic calls.
        self._fd: int | None = (
            stream.socket.fileno() if isinstance(stream, trio.SocketStream) else None
        )
        # Messages queued or being written by the writer task. While it is zero, `send` writes
        # straight to the socket: no task switch per message, and the order stays the same.
        self._backlog = 0

    # ------------------------------------------------------------------ Peer

    def send(self, message: ServerMessage, on_sent: Callable[[float], None] | None = None) -> None:
        if not self._accepting:
            return
        try:
            # Rendered now, in the lobby's order: the receivers of one broadcast state render
            # it back to back, so the protocol's small state cache makes that once per move.
            data = self._protocol.send(message)
        except Exception:
            log.exception("cannot render a message", peer=self.name, message=repr(message))
            self._stop(UNKNOWN, abort=True)
            return
        if self._fd is not None and not self._backlog:
            try:
                written = _write_some(self._fd, data)
            except trio.BrokenResourceError:
                self._stop(LOST_CONNECTION, abort=True)
                return
            if written == len(data):
                if on_sent is not None:
                    on_sent(trio.current_time())
                return
            data = data[written:]  # the socket buffer is full: the writer task waits for room
        try:
            self._outbox_in.send_nowait((data, on_sent))
            self._backlog += 1
        except trio.WouldBlock:
            log.warning(
                "slow reader: send queue full, disconnecting",
                peer=self.name,
                queued=self._settings.send_buffer_messages,
            )
            self._stop(LOST_CONNECTION, abort=True)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            self._accepting = False

    def close(self) -> None:
        """End the connection from the server side, after what is queued went out."""
        self._stop(INITIATED_DISCONNECT)

    # ------------------------------------------------------------------ serving

    async def run(self) -> None:
        self._lobby.connect(self)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._write_loop)
                cause = UNKNOWN
                with self._read_scope:
                    cause = await self._read_loop()
                if self._stop_cause is not None:
                    cause = self._stop_cause
                self._leave_lobby(cause)
                self._outbox_in.close()
                self._write_scope.deadline = min(
                    self._write_scope.deadline, trio.current_time() + CLOSE_GRACE
                )
                if self._abort:
                    self._write_scope.cancel()
        finally:
            # Cancelled from outside (server stop): the lobby must still forget this peer.
            self._leave_lobby(INITIATED_DISCONNECT)
            await trio.aclose_forcefully(self._stream)

    def _leave_lobby(self, cause: str) -> None:
        self._accepting = False
        if self._left_lobby:
            return
        self._left_lobby = True
        try:
            self._lobby.disconnect(self, cause)
        except Exception:
            log.exception("lobby failed to handle a disconnect", peer=self.name)

    def _stop(self, cause: str, *, abort: bool = False) -> None:
        if self._stop_cause is None:
            self._stop_cause = cause
        self._accepting = False
        self._abort = self._abort or abort
        self._read_scope.cancel()
        if abort:
            self._write_scope.cancel()

    async def _receive(self) -> bytes:
        """The next bytes from the client; b"" at the end of the stream."""
        fd = self._fd
        if fd is None:
            data = await self._stream.receive_some(RECEIVE_BYTES)
            return data if isinstance(data, bytes) else bytes(data)
        while True:
            # Waiting first is the checkpoint: a client that floods us cannot starve the others.
            await trio.lowlevel.wait_readable(fd)
            try:
                return os.read(fd, RECEIVE_BYTES)
            except BlockingIOError:
                continue
            except OSError as error:
                raise trio.BrokenResourceError(str(error)) from error

    async def _read_loop(self) -> str:
        """Feed the lobby until the stream ends; return the official disconnect cause.

        The idle timeout is one cancel scope per idle period rather than one per receive: when
        it fires, the connection is closed only if it really was idle (and in no room)."""
        idle_timeout = self._settings.idle_timeout or math.inf
        self._last_activity = trio.current_time()
        was_busy = False
        while True:
            with trio.CancelScope(deadline=self._last_activity + idle_timeout):
                return await self._read_packets()
            # Only the idle deadline gets here.
            if trio.current_time() - self._last_activity < idle_timeout:
                continue
            busy = self._lobby.is_busy(self)
            if busy or was_busy:
                # Busy, or stopped being busy since the last check (its game ended, say, a
                # moment ago): the idle period starts now, not at the last packet it sent.
                was_busy = busy
                self._last_activity = trio.current_time()
                continue
            log.info("closing idle connection", peer=self.name, seconds=idle_timeout)
            self.send(CloseConnection())
            return TIMEOUT

    async def _read_packets(self) -> str:
        protocol = self._protocol
        lobby = self._lobby
        while True:
            try:
                data = await self._receive()
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return LOST_CONNECTION
            # The move's time ends here, before any parsing or processing by the server.
            received_at = self._last_activity = trio.current_time()
            protocol.receive_data(data)
            while True:
                try:
                    event = protocol.next_event()
                except RemoteProtocolError as error:
                    if error.eof:
                        return LOST_CONNECTION
                    log.info("protocol error", peer=self.name, error=error.message)
                    self.send(ErrorPacket(error.message, None))
                    return PROTOCOL_ERROR
                if event is NEED_DATA:
                    break
                if isinstance(event, CloseRequest):
                    return RECEIVED_DISCONNECT
                if isinstance(event, StreamEnd):
                    # The official server sees the client's </protocol> as a lost connection.
                    return LOST_CONNECTION
                try:
                    lobby.handle(self, event, received_at)
                except Exception:
                    # A bug must cost only this connection (official: cause UNKNOWN).
                    log.exception("handling a packet failed", peer=self.name, packet=repr(event))
                    self.send(
                        ErrorPacket("Internal server error while handling the request", event)
                    )
                    return UNKNOWN

    async def _send_all(self, data: bytes) -> bool:
        """Write all of `data`; False if the client read nothing for SEND_TIMEOUT."""
        fd = self._fd
        if fd is None:
            with trio.move_on_after(SEND_TIMEOUT):
                await self._stream.send_all(data)
                return True
            return False
        view = memoryview(data)
        while view:
            written = _write_some(fd, view)
            if written:
                view = view[written:]
                continue
            # Only a full socket buffer costs a cancel scope; the usual write does not wait.
            with trio.move_on_after(SEND_TIMEOUT):
                await trio.lowlevel.wait_writable(fd)
                continue
            return False
        # A write that never waited is still a checkpoint, so one busy writer cannot hog the loop.
        await trio.lowlevel.checkpoint()
        return True

    async def _write_loop(self) -> None:
        protocol = self._protocol
        outbox = self._outbox
        with self._write_scope:
            try:
                async for first in outbox:
                    batch = [first]
                    # Whatever else is queued goes out in the same write (memento + moveRequest).
                    while True:
                        try:
                            batch.append(outbox.receive_nowait())
                        except (trio.WouldBlock, trio.EndOfChannel):
                            break
                    data = b"".join([chunk for chunk, _ in batch])
                    if not await self._send_all(data):
                        log.warning("client does not read, disconnecting", peer=self.name)
                        self._stop(LOST_CONNECTION, abort=True)
                        return
                    sent_at = trio.current_time()
                    self._backlog -= len(batch)
                    for _, on_sent in batch:
                        if on_sent is not None:
                            on_sent(sent_at)
                await self._send_all(protocol.close())
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._stop(LOST_CONNECTION, abort=True)
            except Exception:
                log.exception("writing to the client failed", peer=self.name)
                self._stop(UNKNOWN, abort=True)


def _write_some(fd: int, data: bytes | memoryview) -> int:
    """Write what the socket takes now: 0 when its buffer is full. A dead peer raises
    BrokenResourceError. (os.write retries EINTR itself, PEP 475.)"""
    try:
        return os.write(fd, data)
    except BlockingIOError:
        return 0
    except OSError as error:
        raise trio.BrokenResourceError(str(error)) from error


async def handle_stream(
    stream: trio.abc.Stream, lobby: Lobby, settings: Settings, name: str = ""
) -> None:
    """Serve one connection; never raises (one bad connection must not affect the others)."""
    try:
        await Connection(stream, lobby, settings, name).run()
    except Exception:
        log.exception("connection failed", peer=name)
