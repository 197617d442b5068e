"""The byte transports under a `Connection`: a TCP socket, or any trio stream (tests).

One interface, two implementations, each tested on its own:

- `SocketTransport` reads and writes the socket's descriptor directly (trio's generic stream
  calls cost two scheduler trips per call, a large share of the server's time per move) and
  takes the arrival time of the bytes from the kernel (Linux `SO_TIMESTAMPNS`): a move is
  timed to the moment its bytes reached the machine, not to the moment a busy event loop got
  round to reading them. Without kernel stamps it falls back to the time of the read.
- `StreamTransport` wraps any `trio.abc.Stream` (the tests' memory streams); its bytes are
  stamped when read.
"""

from __future__ import annotations

import math
import os
import socket
import struct
import sys
import time
from collections.abc import Callable
from typing import Protocol

import trio

RECEIVE_BYTES = 65536
# Linux SO_TIMESTAMPNS (= SCM_TIMESTAMPNS), which Python's socket module does not name; the
# value differs on a few architectures without a Linux x86/ARM ABI, where a missing or foreign
# control message simply means "no stamp".
SO_TIMESTAMPNS = 35
_TIMESPEC = struct.Struct("@ll")  # struct timespec: time_t seconds, long nanoseconds
_ANCILLARY_BYTES = socket.CMSG_SPACE(_TIMESPEC.size)
# Module globals for `kernel_stamp` (once per move: no attribute look-ups).
_SOL_SOCKET = socket.SOL_SOCKET
_TIMESPEC_SIZE = _TIMESPEC.size
_unpack_timespec = _TIMESPEC.unpack_from
# A kernel stamp older than this (seconds) is not believed: the event loop is never that late,
# so the wall clock must have been stepped between the stamp and our reading of it.
MAX_STAMP_AGE = 60.0


class Transport(Protocol):
    """What a `Connection` needs from the bytes underneath it."""

    async def receive(self) -> tuple[bytes, float]:
        """The next bytes (b"" at the end of the stream) and the trio time they arrived.
        Raises trio.BrokenResourceError when the connection broke."""
        ...

    def try_write(self, data: bytes | memoryview) -> int:
        """Write what can go out now without waiting; the number of bytes written (0 when
        the transport cannot write without waiting). Raises trio.BrokenResourceError."""
        ...

    async def send_all(self, data: bytes) -> None:
        """Write all of `data`, waiting for room as needed (the caller bounds the wait).
        Raises trio.BrokenResourceError."""
        ...

    async def aclose(self) -> None:
        """Close at once, discarding what was not written."""
        ...


def transport_for(stream: trio.abc.Stream) -> Transport:
    """The direct socket transport for a TCP stream, the generic one for anything else."""
    if isinstance(stream, trio.SocketStream):
        return SocketTransport(stream)
    return StreamTransport(stream)


def arrival_time(now: float, wall_now: float, wall_stamp: float) -> float:
    """Convert a kernel wall-clock stamp to trio's clock: `now` minus how long ago (by the
    wall clock) the bytes arrived, that age clamped to [0, MAX_STAMP_AGE]."""
    age = wall_now - wall_stamp
    # Comparisons rather than isfinite/min/max (three calls, once per move); NaN and
    # infinities fail both tests.
    if 0.0 < age <= MAX_STAMP_AGE:
        return now - age
    if MAX_STAMP_AGE < age < math.inf:
        return now - MAX_STAMP_AGE
    return now


def kernel_stamp(ancillary: list[tuple[int, int, bytes]]) -> float | None:
    """The SO_TIMESTAMPNS wall-clock time in recvmsg's control messages, if there is one."""
    for level, kind, payload in ancillary:
        if level == _SOL_SOCKET and kind == SO_TIMESTAMPNS and len(payload) >= _TIMESPEC_SIZE:
            seconds, nanoseconds = _unpack_timespec(payload)
            stamp: float = seconds + nanoseconds / 1e9  # a float already: int + float
            return stamp
    return None


_stamp_keeper: socket.socket | None = None


def _keep_stamping_on() -> None:
    """Linux stamps arriving packets only while some socket asks for it, and switches that on
    or off a moment after the first such socket opens or the last one closes: the bytes of a
    lone connection could miss their stamp. One socket that asks for the process's lifetime
    keeps stamping on."""
    global _stamp_keeper
    if _stamp_keeper is None:
        keeper = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        keeper.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        _stamp_keeper = keeper


def stamp_listener(listener: trio.SocketListener) -> bool:
    """Ask the kernel to stamp what the sockets accepted by `listener` receive: Linux copies
    the listening socket's SO_TIMESTAMPNS to each accepted one (a setsockopt a connection
    less). Whether it was switched on (Linux only)."""
    if sys.platform != "linux":
        return False
    try:
        listener.socket.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    _keep_stamping_on()
    return True


class SocketTransport:
    """A TCP socket read with recvmsg (kernel receive stamps) and written with os.write.

    `listener_stamped`: the socket was accepted from a listener `stamp_listener` switched
    stamping on for, so it has SO_TIMESTAMPNS already."""

    def __init__(
        self, stream: trio.SocketStream | socket.socket, *, listener_stamped: bool = False
    ) -> None:
        if isinstance(stream, socket.socket):
            # A socket the server accepted itself (server/app.py: no trio wrappers a
            # connection), non-blocking; this transport owns and closes it.
            self._stream: trio.SocketStream | None = None
            self._fd = stream.fileno()
            self._socket: socket.socket | None = stream
            self._view = False
        else:
            self._stream = stream
            self._fd = stream.socket.fileno()
            # The stdlib socket for recvmsg: trio's own (it closes it), else a view of the
            # same descriptor made on first use and detached (not closed) before trio closes
            # it (a socket from a bare descriptor costs three system calls to find its kind).
            own = getattr(stream.socket, "_sock", None)
            self._socket = own if type(own) is socket.socket else None
            self._view = self._socket is None
        self.stamped = False  # the kernel stamps what we receive
        if listener_stamped:
            self.stamped = True
        elif sys.platform == "linux":
            try:
                stream.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
                self.stamped = True
            except OSError:
                pass
            else:
                _keep_stamping_on()
        self._last_arrival = -math.inf
        self._clock: Callable[[], float] | None = None  # the run's clock, at the first read

    @property
    def fileno(self) -> int:
        """The socket's descriptor (tests look at its options)."""
        return self._fd

    async def receive(self) -> tuple[bytes, float]:
        """The next bytes (b"" at the end) and when they arrived, on trio's clock."""
        sock = self._socket
        if sock is None:
            sock = self._socket = socket.socket(fileno=self._fd)
        clock = self._clock
        if clock is None:
            # trio.current_time() is this clock's current_time behind two more calls (once
            # per move); a run's clock never changes.
            clock = self._clock = trio.lowlevel.current_clock().current_time
        fd = self._fd
        while True:
            # Waiting first is the checkpoint: a client that floods us cannot starve the others.
            await trio.lowlevel.wait_readable(fd)
            try:
                data, ancillary, _flags, _address = sock.recvmsg(RECEIVE_BYTES, _ANCILLARY_BYTES)
            except BlockingIOError:
                continue
            except OSError as error:
                raise trio.BrokenResourceError(str(error)) from error
            now = clock()
            stamp = kernel_stamp(ancillary) if ancillary and self.stamped else None
            arrived = now if stamp is None else arrival_time(now, time.time(), stamp)
            # Never earlier than bytes read before: they arrived first.
            if arrived < self._last_arrival:
                arrived = self._last_arrival
            self._last_arrival = arrived
            return data, arrived

    def try_write(self, data: bytes | memoryview) -> int:
        """Write what fits now without waiting; the number of bytes written (0 if none)."""
        try:
            return os.write(self._fd, data)  # os.write retries EINTR itself (PEP 475)
        except BlockingIOError:
            return 0
        except OSError as error:
            raise trio.BrokenResourceError(str(error)) from error

    async def send_all(self, data: bytes) -> None:
        """Write all of `data`, waiting for room; raises BrokenResourceError if the peer is gone."""
        view = memoryview(data)
        while view:
            written = self.try_write(view)
            if written:
                view = view[written:]
            else:
                await trio.lowlevel.wait_writable(self._fd)

    async def aclose(self) -> None:
        """Close the connection at once."""
        sock, self._socket = self._socket, None
        if self._stream is None:
            # Only the close: no trio.lowlevel.notify_closing (~0.5 % of the server's CPU,
            # two a game), because nothing can wait on the descriptor now: its connection
            # closes it after its read loop and writer task ended (`Connection.run`), and
            # trio keeps no registration of a descriptor once its waits are over. And no
            # checkpoint: the connection's task ends with this (a task switch a connection).
            if sock is not None:
                sock.close()
            return
        if sock is not None and self._view:
            sock.detach()
        # What trio.SocketStream.aclose does (close, then a checkpoint), with a checkpoint
        # that cannot raise Cancelled instead of aclose_forcefully's cancel scope: the same
        # close for ~45 µs less CPU a connection (measured with time.process_time).
        self._stream.socket.close()
        await trio.lowlevel.cancel_shielded_checkpoint()


class StreamTransport:
    """Any trio stream; bytes are stamped when read, writes always go through `send_all`."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self._stream = stream

    async def receive(self) -> tuple[bytes, float]:
        """The next bytes (b"" at the end) and when they arrived, on trio's clock."""
        try:
            data = await self._stream.receive_some(RECEIVE_BYTES)
        except trio.ClosedResourceError as error:
            raise trio.BrokenResourceError(str(error)) from error
        return bytes(data), trio.current_time()

    def try_write(self, data: bytes | memoryview) -> int:
        """Write what fits now without waiting; the number of bytes written (0 if none)."""
        return 0  # a generic stream has no non-blocking write

    async def send_all(self, data: bytes) -> None:
        """Write all of `data`, waiting for room; raises BrokenResourceError if the peer is gone."""
        try:
            await self._stream.send_all(data)
        except trio.ClosedResourceError as error:
            raise trio.BrokenResourceError(str(error)) from error

    async def aclose(self) -> None:
        """Close the connection at once."""
        await trio.aclose_forcefully(self._stream)
