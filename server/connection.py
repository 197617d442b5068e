"""One client connection: bytes → protocol events → lobby, and lobby messages → bytes.

The reader parses the stream with the sans-IO `protocol.ServerConnection` and hands each packet
to the lobby, stamped with the time its bytes arrived (from the kernel where it can: see
`server.transport`). A writer task writes what the socket did not take at once.

Every connection's resources are bounded, so a hostile client cannot decide a game:

- the send queue is bounded in messages and bytes, and each queued message must be handed to
  the socket within `sendDeadline` of being queued (a trickle of reads does not extend it);
- a new connection must say `<protocol>` within `protocolDeadline`; a connection in no room
  must finish what it started sending within `packetDeadline`; one idle in no room is closed
  after `idleTimeout`;
- work per turn of the event loop is bounded: a connection handles at most `PACKETS_PER_TURN`
  packets before it lets the others run; an anonymous connection (in no room, not admin) that
  was refused or sent a costly packet is *rationed*: such connections take turns through one
  lobby-wide token, one packet at a time, so any number of them delays a game's packet by
  about one of theirs, and a costly packet keeps the token as long again, so together they
  get at most about half of the server's time. A newcomer's cheap join or login skips the line;
- an anonymous connection that is refused `maxRefusals` times is closed.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import time
import weakref
from collections.abc import Awaitable, Callable

import trio

from protocol import NEED_DATA, NeedData, ProtocolLimits, RemoteProtocolError, ServerConnection
from protocol.events import ClientPacket, CloseRequest, MovePacket, StreamEnd
from protocol.messages import CloseConnection, ErrorPacket, ServerMessage
from server.config import Settings
from server.lobby import DisconnectCause, Lobby
from server.logs import get_logger
from server.transport import Transport, transport_for

log = get_logger("server.connection")

# After the connection ends, queued messages and "</protocol>" get this long to go out.
CLOSE_GRACE = 5.0
# Packets a connection in a game (or an admin) handles before it lets the others run.
PACKETS_PER_TURN = 16
# An anonymous packet handled faster than this (any legitimate one) is not rationed.
ANONYMOUS_FREE_SECONDS = 0.002
# How much of the stream's start is searched for "<protocol>".
PROTOCOL_PREFIX_BYTES = 4096
_PROTOCOL_START = re.compile(rb"<protocol[\s>/]")

_numbers = itertools.count(1)

# (bytes, callback when handed to the socket, trio time queued, messages in the bytes)
_Outgoing = tuple[bytes, Callable[[float], None] | None, float, int]

# One token per lobby: anonymous connections handle their packets one at a time, in turn.
_anonymous_turns: weakref.WeakKeyDictionary[Lobby, trio.CapacityLimiter] = (
    weakref.WeakKeyDictionary()
)


def _anonymous_turn(lobby: Lobby) -> trio.CapacityLimiter:
    limiter = _anonymous_turns.get(lobby)
    if limiter is None:
        limiter = _anonymous_turns[lobby] = trio.CapacityLimiter(1)
    return limiter


@functools.lru_cache(maxsize=8)
def _limits(max_packet_bytes: int) -> ProtocolLimits:
    """The (frozen) limits of every connection of a server: checked once, not twice a game."""
    return ProtocolLimits(max_packet_bytes=max_packet_bytes)


class Connection:
    """A `Peer` of the lobby around one byte stream. `run()` serves it until it ends."""

    def __init__(
        self,
        stream: trio.abc.Stream | None,
        lobby: Lobby,
        settings: Settings,
        name: str = "",
        *,
        address: str = "",
        transport: Transport | None = None,
        spawn: Callable[[Callable[[], Awaitable[None]]], None] | None = None,
    ) -> None:
        self.name = f"{name or 'client'}#{next(_numbers)}"
        self.address = address  # remote host: failed admin logins are counted per address
        if transport is None:
            if stream is None:
                raise TypeError("a Connection needs a stream or a transport")
            transport = transport_for(stream)
        self._transport = transport  # (the server passes a socket's transport, no stream)
        self._lobby = lobby
        self._settings = settings
        self._protocol = ServerConnection(_limits(settings.max_packet_bytes))
        # Unbounded channel, made with the first write the socket does not take at once
        # (most connections never need one: it is ~10 µs, two a game): the bounds (messages,
        # bytes, age) are checked in `send`.
        self._outbox_in: trio.MemorySendChannel[_Outgoing] | None = None
        self._outbox: trio.MemoryReceiveChannel[_Outgoing] | None = None
        self._outbox_closed = False  # no more messages may be queued
        self._accepting = True  # the lobby may still queue messages
        # The read loop's scope now (`_read_loop` makes it; a scope is ~5k instructions to
        # enter, so not one around the loop as well): `_stop` cancels it.
        self._read_scope: trio.CancelScope | None = None
        # The writer task's scope, made with the task (a scope is ~5k instructions; most
        # connections never start one); an abort before cancels it at once.
        self._write_scope: trio.CancelScope | None = None
        self._stop_cause: DisconnectCause | None = None  # why the server ended the reading
        self._abort = False  # drop what is queued: the client cannot take it
        self._left_lobby = False
        self._opened_at = 0.0
        self._last_activity = 0.0  # when the last complete packet arrived
        self._said_protocol = False
        self._prefix = bytearray()  # the stream's start, until "<protocol>" is seen
        self._partial_since: float | None = None  # bytes that complete no packet since then
        self._received_at = 0.0  # when the bytes read last arrived
        self._refusals = 0  # errorpackets sent while anonymous
        # Anonymous and refused or costly before: its packets take turns behind the games'.
        # A fresh connection's cheap join or login is never made to wait in that line.
        self._rationed = False
        self._was_busy = False  # at the last deadline check
        # Messages queued or being written by the writer task, and their bytes. While nothing
        # is queued, `send` writes straight to the socket: no task switch per message.
        self._backlog = 0
        self._queued_bytes = 0
        # Starts the writer task: in the server's nursery (`spawn`: no nursery of its own per
        # connection, two a game), else in one `run` opens. None until `run` serves.
        self._given_spawn = spawn
        self._spawn: Callable[[Callable[[], Awaitable[None]]], None] | None = None
        self._writer_started = False
        self._writer_done: trio.Event | None = None  # made with the writer task, set at its end
        # What is left to write of "</protocol>" once written without the writer task; None:
        # the writer task writes all of it.
        self._closing: bytes | None = None
        # What the lobby sent during the handler now running (server/batch.py), or None.
        self._corked: list[tuple[bytes, Callable[[float], None] | None]] | None = None
        # trio.current_time, and in `run` the run's clock itself (the same time without two
        # calls in between; three readings a move).
        self._now: Callable[[], float] = trio.current_time

    # ------------------------------------------------------------------ Peer

    def send(self, message: ServerMessage, on_sent: Callable[[float], None] | None = None) -> None:
        """Queue `message` for this client (written at once while nothing is queued); `on_sent`
        gets the time it left. Never blocks; a client that does not read is dropped."""
        if not self._accepting:
            return
        try:
            # Rendered now, in the lobby's order: the receivers of one broadcast state render
            # it back to back, so the protocol's small state cache makes that once per move.
            data = self._protocol.send(message)
        except Exception:
            log.exception("cannot render a message", peer=self.name, message=repr(message))
            self._stop(DisconnectCause.UNKNOWN, abort=True)
            return
        if isinstance(message, ErrorPacket):
            self._count_refusal()
        if self._corked is not None:
            self._corked.append((data, on_sent))
            return
        batch = self._lobby.batch
        if batch.depth:  # (batch.open without a property call: every message)
            # Inside a lobby handler: held back, and written with the rest at its end.
            self._corked = [(data, on_sent)]
            batch.held.append(self)
            return
        self._write(data, on_sent, 1)

    def flush(self) -> None:
        """The lobby handler is done: write what it sent this connection, in one write."""
        corked, self._corked = self._corked, None
        if not corked:  # (a stop meanwhile does not drop them: each was accepted when sent)
            return
        if len(corked) == 1:
            self._write(*corked[0], 1)
            return
        if len(corked) == 2:
            # A move's usual pair: the memento (no callback), then the moveRequest.
            (first, first_sent), (second, second_sent) = corked
            if first_sent is None:
                self._write(first + second, second_sent, 2)
                return
        callbacks = [on_sent for _, on_sent in corked if on_sent is not None]
        data = b"".join([data for data, _ in corked])
        if len(callbacks) <= 1:  # (a memento and a moveRequest: the request's callback)
            self._write(data, callbacks[0] if callbacks else None, len(corked))
            return

        def on_sent(when: float) -> None:
            for callback in callbacks:
                callback(when)

        self._write(data, on_sent, len(corked))

    def _write(self, data: bytes, on_sent: Callable[[float], None] | None, count: int) -> None:
        """Write `data` (`count` messages) now, or what does not fit through the writer task."""
        if not self._backlog:
            try:
                written = self._transport.try_write(data)
            except trio.BrokenResourceError:
                self._stop(DisconnectCause.LOST_CONNECTION, abort=True)
                return
            if written == len(data):
                if on_sent is not None:
                    on_sent(self._now())
                return
            data = data[written:]  # the socket buffer is full: the writer task waits for room
        settings = self._settings
        if (
            self._backlog + count > settings.send_buffer_messages
            or self._queued_bytes + len(data) > settings.send_buffer_bytes
        ):
            log.warning(
                "slow reader: send queue full, disconnecting",
                peer=self.name,
                queued_messages=self._backlog,
                queued_bytes=self._queued_bytes,
            )
            self._stop(DisconnectCause.LOST_CONNECTION, abort=True)
            return
        if self._outbox_in is None:
            if self._outbox_closed:
                self._accepting = False
                return
            self._outbox_in, self._outbox = trio.open_memory_channel[_Outgoing](math.inf)
        try:
            self._outbox_in.send_nowait((data, on_sent, self._now(), count))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            self._accepting = False
            return
        self._backlog += count
        self._queued_bytes += len(data)
        self._start_writer()

    def _start_writer(self) -> None:
        if not self._writer_started and self._spawn is not None:
            self._writer_started = True
            scope = self._write_scope = trio.CancelScope()
            if self._abort:
                scope.cancel()
            done = trio.Event()
            self._spawn(self._writer)
            self._writer_done = done  # (only once spawned: the end of `run` waits for it)

    async def _writer(self) -> None:
        try:
            await self._write_loop()
        finally:
            if self._writer_done is not None:
                self._writer_done.set()

    def close(self) -> None:
        """End the connection from the server side, after what is queued went out."""
        self._stop(DisconnectCause.INITIATED_DISCONNECT)

    def _count_refusal(self) -> None:
        """An anonymous connection that keeps sending refused requests only costs the server:
        after `maxRefusals` of them it is closed (the last errorpacket still goes out)."""
        if self._lobby.is_busy(self):
            return
        self._refusals += 1
        self._rationed = True
        if self._refusals == self._settings.max_refusals:
            log.warning(
                "too many refused requests, closing", peer=self.name, refused=self._refusals
            )
            self._stop(DisconnectCause.PROTOCOL_ERROR)

    # ------------------------------------------------------------------ serving

    async def run(self, ended: Callable[[Exception | None], None] | None = None) -> None:
        """Serve this connection until it ends: read, hand packets to the lobby, write.

        `ended` (the server's bookkeeping) is called last, however the connection ended: with
        the exception that ended it, inside its handler (so `log.exception` has the
        traceback), which is then not raised; else with None. A callback rather than a
        coroutine around this one: every switch of the read task passes each frame of its
        stack."""
        if self._given_spawn is None and self._spawn is None:
            # Served alone (tests): a nursery of its own hosts the writer task.
            async with trio.open_nursery() as nursery:
                self._given_spawn = nursery.start_soon
                await self.run(ended)
            return
        try:
            self._now = trio.lowlevel.current_clock().current_time
            self._lobby.connect(self)
            try:
                # The writer task starts with the first write the socket does not take at
                # once (a task costs ~5 KiB: most connections, idle ones above all, never
                # need it).
                self._spawn = self._given_spawn
                if self._backlog:
                    self._start_writer()
                cause = await self._read_loop()
                if self._stop_cause is not None:
                    cause = self._stop_cause
                elif cause is DisconnectCause.RECEIVED_DISCONNECT:
                    # A <close/> right after a wrong password: the delayed answer (and the
                    # answers to what came between) still go out first, after the delay.
                    # Closing early must not be a way around the delay, nor lose the
                    # answers.
                    with trio.move_on_after(self._settings.login_failure_delay + CLOSE_GRACE):
                        await self._lobby.wait_for_held_answers(self)
                self._leave_lobby(cause)
                self._outbox_closed = True
                if self._outbox_in is not None:
                    self._outbox_in.close()
                if not self._writer_started and not self._abort:
                    # Nothing is queued (it would have started the writer): "</protocol>"
                    # goes straight to the socket, as messages do, and the writer task
                    # (a task per connection, two a game) only writes what did not fit.
                    self._write_closing()
                if self._closing:
                    self._start_writer()  # it writes what is queued, then "</protocol>"
                scope = self._write_scope
                if scope is not None:
                    scope.deadline = min(scope.deadline, trio.current_time() + CLOSE_GRACE)
                    if self._abort:
                        scope.cancel()
                if self._writer_done is not None:
                    await self._writer_done.wait()  # (bounded by the write scope)
            finally:
                self._spawn = None  # no writer after the end
                if self._writer_done is not None and not self._writer_done.is_set():
                    # Cancelled, or a bug: the writer must not outlive the socket (its
                    # descriptor could be another connection's by then).
                    if self._write_scope is not None:
                        self._write_scope.cancel()
                    with trio.CancelScope(shield=True):
                        await self._writer_done.wait()
                # Cancelled from outside (server stop): the lobby must still forget this peer.
                self._leave_lobby(DisconnectCause.INITIATED_DISCONNECT)
                await self._transport.aclose()
        except Exception as error:
            if ended is None:
                raise
            ended(error)
            return
        except BaseException:
            if ended is not None:
                ended(None)
            raise
        if ended is not None:
            ended(None)

    def _write_closing(self) -> None:
        """Hand "</protocol>" to the socket now; what it does not take stays in `_closing`."""
        closing = self._protocol.close()
        try:
            written = self._transport.try_write(closing)
        except trio.BrokenResourceError:
            self._stop(DisconnectCause.LOST_CONNECTION, abort=True)
            written = len(closing)  # the client is gone: nothing left to write
        self._closing = closing[written:]

    def _leave_lobby(self, cause: DisconnectCause) -> None:
        self._accepting = False
        if self._left_lobby:
            return
        self._left_lobby = True
        try:
            self._lobby.disconnect(self, cause)
        except Exception:
            log.exception("lobby failed to handle a disconnect", peer=self.name)

    def _stop(self, cause: DisconnectCause, *, abort: bool = False) -> None:
        if self._stop_cause is None:
            self._stop_cause = cause
        self._accepting = False
        self._abort = self._abort or abort
        if self._read_scope is not None:
            self._read_scope.cancel()  # (none yet: the read loop starts stopped)
        if abort and self._write_scope is not None:
            self._write_scope.cancel()

    # ------------------------------------------------------------------ reading

    def _deadline(self) -> float:
        """The next instant one of the read deadlines may have passed."""
        settings = self._settings
        deadline = self._last_activity + (settings.idle_timeout or math.inf)
        if not self._said_protocol and settings.protocol_deadline:
            deadline = min(deadline, self._opened_at + settings.protocol_deadline)
        if self._partial_since is not None and settings.packet_deadline:
            packet_deadline = self._partial_since + settings.packet_deadline
            if self._lobby.is_busy(self):
                # A player's unfinished packet is the move timeouts' business: look again later,
                # it may have left its room by then.
                later = trio.current_time() + settings.packet_deadline
                packet_deadline = max(packet_deadline, later)
            deadline = min(deadline, packet_deadline)
        return deadline

    async def _read_loop(self) -> DisconnectCause:
        """Feed the lobby until the stream ends; return the official disconnect cause.

        The deadlines apply only while waiting for the client's bytes: time its packets spend
        waiting for their turn in the server is never held against it."""
        self._opened_at = self._last_activity = trio.current_time()
        while True:
            # One cancel scope for many reads (a scope per read cost a tenth of the server's
            # time per move); its deadline is set only while waiting for bytes. `_stop`
            # cancels it: the loop ends with the stop's cause (`run` takes that one).
            with trio.CancelScope() as waiting:
                self._read_scope = waiting
                if self._stop_cause is not None:
                    waiting.cancel()  # stopped before the loop or between two scopes
                while True:
                    # _handle_buffered lifts the deadline before it waits for anything (setting
                    # a deadline is costly: not twice per move when nothing waits).
                    outcome = await self._handle_buffered(waiting)
                    if outcome is not None:
                        return outcome
                    # Only ever moved earlier: a later deadline (the idle timeout after every
                    # packet) would be a change per move, and a deadline that fires early only
                    # costs a look (_deadline_passed) and a fresh scope.
                    deadline = self._deadline()
                    if deadline < waiting.deadline:
                        waiting.deadline = deadline
                    while True:
                        try:
                            data, received_at = await self._transport.receive()
                        except (trio.BrokenResourceError, trio.ClosedResourceError):
                            return DisconnectCause.LOST_CONNECTION
                        self._received_at = received_at
                        if self._said_protocol and not self._rationed:
                            move = self._protocol.receive_move_fields(data)
                            if move is not None:
                                # One chunk, one whole move, nothing buffered (once per move):
                                # _handle_buffered's unrationed case for it, without the
                                # queue. Nothing is left to handle, and _deadline() could
                                # only be later now (the packet was activity): read on.
                                started = time.perf_counter()
                                room_id, played = move  # (not `*move`: the generic call)
                                # _handle_event's work, without the packet (Lobby.handle_move
                                # makes it only when needed) and without a call.
                                self._partial_since = None
                                self._last_activity = self._now()
                                try:
                                    self._lobby.handle_move(self, room_id, played, received_at)
                                except Exception:
                                    return self._handling_failed(MovePacket(room_id, played))
                                # _ration_if_costly's first test here: no call a move (its own
                                # later reading only passes when this one did).
                                if time.perf_counter() - started > ANONYMOUS_FREE_SECONDS:
                                    self._ration_if_costly(started)
                                continue
                        if not self._said_protocol:
                            self._note_received(data, received_at)
                        elif data and self._partial_since is None:
                            # (_note_received's usual case inlined.) Reset when these bytes
                            # complete a packet (`_handle_event`).
                            self._partial_since = received_at
                        self._protocol.receive_data(data)
                        break
            if self._stop_cause is not None:
                return self._stop_cause  # `_stop` ended the reading
            cause = self._deadline_passed()  # the scope ended: a deadline passed while waiting
            if cause is not None:
                return cause

    def _deadline_passed(self) -> DisconnectCause | None:
        """A read deadline fired: the cause to close with, or None to go on reading."""
        settings = self._settings
        now = trio.current_time()
        busy = self._lobby.is_busy(self)
        was_busy, self._was_busy = self._was_busy, busy
        if (
            not self._said_protocol
            and settings.protocol_deadline
            and now >= self._opened_at + settings.protocol_deadline
        ):
            log.info("no <protocol> in time, closing", peer=self.name)
            return DisconnectCause.TIMEOUT
        if (
            self._partial_since is not None
            and settings.packet_deadline
            and not busy
            and now >= self._partial_since + settings.packet_deadline
        ):
            log.info("unfinished packet, closing", peer=self.name)
            return DisconnectCause.TIMEOUT
        idle_timeout = settings.idle_timeout or math.inf
        if now - self._last_activity < idle_timeout:
            return None
        if busy or was_busy:
            # Busy, or stopped being busy since the last check (its game ended, say, a moment
            # ago): the idle period starts now, not at the last packet it sent.
            self._last_activity = now
            return None
        log.info("closing idle connection", peer=self.name, seconds=idle_timeout)
        self.send(CloseConnection())
        return DisconnectCause.TIMEOUT

    async def _handle_buffered(self, waiting: trio.CancelScope) -> DisconnectCause | None:
        """Handle the packets buffered so far; a disconnect cause when the stream ends. The
        read deadlines of `waiting` do not run while this waits for its turn."""
        lobby = self._lobby
        handled = 0
        while True:
            if self._rationed and not lobby.is_busy(self):
                waiting.deadline = math.inf
                # One packet per turn of the token: rationed traffic never makes a game's
                # packet wait for more than about one of its packets.
                async with _anonymous_turn(lobby):
                    started = time.perf_counter()
                    outcome = self._next_packet()
                    spent = time.perf_counter() - started
                    if outcome is None:
                        # Held across a turn of the loop: the other rationed connections wait
                        # in line while the games' connections run. A costly packet holds it
                        # as long again: together they get at most about half of the time.
                        if spent > ANONYMOUS_FREE_SECONDS:
                            await trio.sleep(spent)
                        else:
                            await trio.lowlevel.checkpoint()
            else:
                started = time.perf_counter()
                outcome = self._next_packet()
                if outcome is None:
                    self._ration_if_costly(started)
                    handled += 1
                    if handled >= PACKETS_PER_TURN:
                        handled = 0
                        waiting.deadline = math.inf
                        await trio.lowlevel.checkpoint()
            if outcome is NEED_DATA:
                return None
            if outcome is not None:
                return outcome

    def _ration_if_costly(self, started: float) -> None:
        """The rationing switch, after a packet handled unrationed since `started`
        (`time.perf_counter`): costly and in no room, the connection takes turns from now on."""
        if time.perf_counter() - started > ANONYMOUS_FREE_SECONDS and not self._lobby.is_busy(self):
            self._rationed = True

    def _note_received(self, data: bytes, received_at: float) -> None:
        """Keep the protocol and packet deadlines up to date for bytes just read."""
        if not self._said_protocol:
            self._prefix += data[: PROTOCOL_PREFIX_BYTES - len(self._prefix)]
            if _PROTOCOL_START.search(self._prefix):
                self._said_protocol = True
                self._prefix = bytearray()
            return
        if data and self._partial_since is None:
            # Reset when these bytes complete a packet (`_next_packet`).
            self._partial_since = received_at

    def _next_packet(self) -> DisconnectCause | NeedData | None:
        """Handle the next buffered packet: NEED_DATA when there is none, a disconnect cause
        when the stream ends, None after a packet was handled."""
        try:
            event = self._protocol.next_event()
        except RemoteProtocolError as error:
            if error.eof:
                return DisconnectCause.LOST_CONNECTION
            log.info("protocol error", peer=self.name, error=error.message)
            self.send(ErrorPacket(error.message, None))
            return DisconnectCause.PROTOCOL_ERROR
        if event is NEED_DATA:
            return NEED_DATA
        return self._handle_event(event)

    def _handle_event(self, event: ClientPacket) -> DisconnectCause | None:
        """Hand a packet just read to the lobby: a disconnect cause, or None to go on."""
        received_at = self._received_at
        self._partial_since = None
        self._last_activity = self._now()
        if isinstance(event, CloseRequest):
            return DisconnectCause.RECEIVED_DISCONNECT
        if isinstance(event, StreamEnd):
            # The official server sees the client's </protocol> as a lost connection.
            return DisconnectCause.LOST_CONNECTION
        try:
            # The move's time ended when its bytes arrived, before any work by the server.
            self._lobby.handle(self, event, received_at)
        except Exception:
            return self._handling_failed(event)
        return None

    def _handling_failed(self, event: ClientPacket) -> DisconnectCause:
        # A bug must cost only this connection (official: cause DisconnectCause.UNKNOWN).
        log.exception("handling a packet failed", peer=self.name, packet=repr(event))
        self.send(ErrorPacket("Internal server error while handling the request", event))
        return DisconnectCause.UNKNOWN

    # ------------------------------------------------------------------ writing

    async def _write_loop(self) -> None:
        protocol = self._protocol
        outbox = self._outbox
        if outbox is None:  # started to write "</protocol>" alone: nothing was ever queued
            sender, outbox = trio.open_memory_channel[_Outgoing](0)
            sender.close()
        transport = self._transport
        send_deadline = self._settings.send_deadline
        scope = self._write_scope
        if scope is None:  # (only `_start_writer` starts this task, and it makes the scope)
            scope = self._write_scope = trio.CancelScope()
        with scope:
            try:
                async for first in outbox:
                    batch = [first]
                    # Whatever else is queued goes out in the same write (memento + moveRequest).
                    while True:
                        try:
                            batch.append(outbox.receive_nowait())
                        except (trio.WouldBlock, trio.EndOfChannel):
                            break
                    data = b"".join([chunk for chunk, _, _, _ in batch])
                    # The oldest message's deadline: reading a little does not extend it.
                    with trio.move_on_at(first[2] + send_deadline):
                        await transport.send_all(data)
                        data = b""
                    if data:
                        log.warning(
                            "client does not read, disconnecting",
                            peer=self.name,
                            queued_bytes=self._queued_bytes,
                        )
                        self._stop(DisconnectCause.LOST_CONNECTION, abort=True)
                        return
                    sent_at = trio.current_time()
                    self._backlog -= sum(count for _, _, _, count in batch)
                    self._queued_bytes -= sum(len(chunk) for chunk, _, _, _ in batch)
                    for _, on_sent, _, _ in batch:
                        if on_sent is not None:
                            on_sent(sent_at)
                    # A write that never waited is still a checkpoint: one busy writer cannot
                    # hog the loop.
                    await trio.lowlevel.checkpoint()
                await transport.send_all(
                    protocol.close() if self._closing is None else self._closing
                )
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._stop(DisconnectCause.LOST_CONNECTION, abort=True)
            except Exception:
                log.exception("writing to the client failed", peer=self.name)
                self._stop(DisconnectCause.UNKNOWN, abort=True)
