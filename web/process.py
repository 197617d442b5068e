"""The web viewer in a process of its own, fed by the observer feed: watchers cost the
players nothing.

Rule: the game server's thread only ever puts feed events into a bounded channel (O(1), a
full channel drops the event and logs the episode) and writes them, encoded in batches, to
the viewer's pipe. Everything a web client asks (pages, listings, replay parsing, gzip, JSON,
WebSocket sends) runs in the viewer process, at a lower CPU priority (`NICENESS`), on its own
trio loop; the bots it starts for people do not (`lower_priority`). The viewer is a client
like any other for the rest: admin actions and human players reach the game port over
loopback.

Frames on both pipes are a 4-byte big-endian length and a pickle (both ends are this module,
in processes the server started). Parent → child: `("start", settings, game_port, port)`
first, then lists of feed events and `("gate", id, answer)`. Child → parent:
`("listening", url)` or `("failed", errno, text)` once, then `("gate", id, method, address)`:
the web login asks the game server's own `LoginGate` (one lockout for both ports).

A viewer process that dies is started again (and told the open rooms again, from the
journal); one that cannot bind its port at start-up fails the server, as the game port does.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any

import structlog
import trio

from engine import GameState
from protocol.messages import Left, Memento, ServerMessage
from runner.processes import SpawnThread
from server.config import Settings
from server.feed import LoginGate, RoomPlayer
from web.gate import OpenGate, RemoteGate, answer_gate

log = structlog.get_logger("web.process")

# Feed events waiting for the viewer process; beyond this they are dropped (the viewer is
# stuck or far behind: a game never waits for it). A move makes 1-2 events.
FEED_BUFFER = 20_000
# The viewer yields the CPU to the game server whenever both want it (a tenth of the game
# server's share; not SCHED_IDLE, which starves the pages on a machine busy with bots).
NICENESS = 10
START_TIMEOUT = 30.0
RESTART_DELAY = 0.5
MAX_RESTART_DELAY = 60.0
STOP_TIMEOUT = 3.0
_HEADER = struct.Struct(">I")

Event = tuple[Any, ...]


def encode_event(event: Event) -> Event:
    """An event as it crosses the pipe: a state as its five bitboards (a GameState pickles
    with its geometry tables, 260 KB; this runs on the game server's thread for every move of
    every game, so it is a few attribute reads, ≈ 1 µs: the child builds the rows)."""
    if event[0] == "observe" and isinstance(event[2], Memento):
        state = event[2].state
        shape = (state.width, state.height, state.turn, state.first_union, state.last_move)
        return ("memento", event[1], event[2].room_id, state.bitboards(), shape)
    return event


def decode_event(event: Event) -> Event:
    """The inverse of `encode_event`."""
    if event[0] == "memento":
        _, now, room_id, boards, (width, height, turn, first_union, last_move) = event
        state = GameState.from_bitboards(boards, width, height, turn, first_union, last_move)
        return ("observe", now, Memento(room_id, state))
    return event


def frame(value: object) -> bytes:
    """One frame: length and pickle."""
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


class FrameReader:
    """Frames from a trio receive stream."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self._stream = stream
        self._buffer = bytearray()

    async def receive(self) -> Any:
        """The next frame's value; EOFError when the stream ends."""
        while True:
            if len(self._buffer) >= _HEADER.size:
                (length,) = _HEADER.unpack_from(self._buffer)
                if len(self._buffer) >= _HEADER.size + length:
                    data = bytes(self._buffer[_HEADER.size : _HEADER.size + length])
                    del self._buffer[: _HEADER.size + length]
                    return pickle.loads(data)
            chunk = await self._stream.receive_some(1 << 16)
            if not chunk:
                raise EOFError
            self._buffer += chunk


class Journal:
    """What a new viewer process must be told of the rooms still open: their events so far
    (references to immutable states the lobby made anyway; dropped when a room closes)."""

    def __init__(self) -> None:
        self.rooms: dict[str, list[Event]] = {}

    def add(self, room_id: str, event: Event) -> None:
        """Remember `event` of `room_id` (a room's first event opens it)."""
        if event[0] == "opened":
            self.rooms[room_id] = [event]
        elif room_id in self.rooms:
            if event[0] == "observe" and isinstance(event[2], Left):
                del self.rooms[room_id]
            else:
                self.rooms[room_id].append(event)

    def replay(self) -> list[Event]:
        """Every open room's events, in order."""
        return [event for events in self.rooms.values() for event in events]


class PipeFeed:
    """The lobby's `ObserverFeed`: each call is one O(1) put (see module docstring)."""

    def __init__(self, buffer: int = FEED_BUFFER) -> None:
        self.buffer = buffer
        self.send, self.receive = trio.open_memory_channel[Event](buffer)
        self.journal = Journal()
        self.dropped = 0

    def _put(self, room_id: str, event: Event) -> None:
        self.journal.add(room_id, event)
        try:
            self.send.send_nowait(event)
        except trio.WouldBlock:
            if self.dropped == 0:
                log.warning("web viewer behind: dropping feed events", buffer=self.buffer)
            self.dropped += 1

    def room_opened(self, room_id: str, *, paused: bool, prepared: bool) -> None:
        """Queued for the viewer."""
        self._put(room_id, ("opened", time.time(), room_id, paused, prepared))

    def players_changed(self, room_id: str, players: Sequence[RoomPlayer]) -> None:
        """Queued for the viewer."""
        self._put(room_id, ("players", time.time(), room_id, tuple(players)))

    def observe(self, message: ServerMessage) -> None:
        """Queued for the viewer."""
        room_id = getattr(message, "room_id", None)
        if isinstance(room_id, str):
            self._put(room_id, ("observe", time.time(), message))


class WebProcess:
    """The web viewer as a `server.feed.Companion` in a child process (module docstring)."""

    def __init__(
        self, settings: Settings, *, port: int | None = None, feed_buffer: int = FEED_BUFFER
    ) -> None:
        self.settings = settings
        self.port = port if port is not None else settings.web_port
        self._feed = PipeFeed(feed_buffer)
        self.url = ""
        self.starts = 0  # viewer processes started
        self.process: trio.Process | None = None
        self._gate: LoginGate = OpenGate()

    @property
    def feed(self) -> PipeFeed:
        """The lobby's observer feed."""
        return self._feed

    def use_login_gate(self, gate: LoginGate) -> None:
        """The viewer's logins are checked against `gate` (`server.feed.GuardsLogins`)."""
        self._gate = gate

    async def run(
        self, game_port: int, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Keep a viewer process running until cancelled (started again after a crash, the
        delay doubling up to MAX_RESTART_DELAY while it keeps failing soon)."""
        started = False
        delay = RESTART_DELAY
        while True:
            began = trio.current_time()
            try:
                await self._run_once(game_port, task_status if not started else None)
            except _StartFailed as failure:
                if not started:
                    raise OSError(failure.errno, failure.text) from None
                log.error("web viewer could not start again", error=failure.text)
            started = True
            lasted = trio.current_time() - began
            delay = (
                RESTART_DELAY if lasted > MAX_RESTART_DELAY else min(2 * delay, MAX_RESTART_DELAY)
            )
            await trio.sleep(delay)

    async def _run_once(self, game_port: int, task_status: trio.TaskStatus[None] | None) -> None:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "web.process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.process = process
        self.starts += 1
        self.url = ""
        assert process.stdin is not None and process.stdout is not None
        stdin, reader = process.stdin, FrameReader(process.stdout)
        writing = trio.Lock()  # the feed and the gate's answers share the pipe

        async def write(data: bytes) -> None:
            async with writing:
                await stdin.send_all(data)

        try:
            # Events queued meanwhile are in the journal if their room is still open.
            while True:
                try:
                    self._feed.receive.receive_nowait()
                except trio.WouldBlock:
                    break
            backlog = self._feed.journal.replay()
            await stdin.send_all(frame(("start", self.settings, game_port, self.port)))
            answer: tuple[Any, ...] = ("failed", 0, "the web viewer did not start in time")
            with trio.move_on_after(START_TIMEOUT):
                answer = await reader.receive()
            if answer[0] != "listening":
                raise _StartFailed(*answer[1:])
            self.url = answer[1]
            if task_status is not None:
                task_status.started()
            else:
                log.warning("web viewer started again", url=self.url, open_rooms=len(backlog))
            if backlog:
                await write(frame([encode_event(event) for event in backlog]))
            async with trio.open_nursery() as nursery:

                async def watch_exit() -> None:
                    status = await process.wait()
                    log.error("web viewer process ended", status=status)
                    nursery.cancel_scope.cancel()

                async def until_broken(task: Callable[[], Awaitable[None]]) -> None:
                    # A pipe that breaks means the child is gone: watch_exit reports it.
                    with contextlib.suppress(
                        EOFError, trio.BrokenResourceError, trio.ClosedResourceError
                    ):
                        await task()
                    await trio.sleep_forever()

                nursery.start_soon(watch_exit)
                nursery.start_soon(until_broken, partial(self._answer_gate, reader, write))
                await until_broken(partial(self._pump_feed, write))
        except (EOFError, trio.BrokenResourceError, trio.ClosedResourceError):
            if task_status is not None:
                raise _StartFailed(0, "the web viewer process ended at start-up") from None
            log.error("web viewer process gone")
        finally:
            with trio.CancelScope(shield=True):
                await _stop(process)

    async def _answer_gate(
        self, reader: FrameReader, write: Callable[[bytes], Awaitable[None]]
    ) -> None:
        while True:
            request = await reader.receive()
            if request[0] == "gate":
                _, request_id, method, address = request
                await write(frame(("gate", request_id, answer_gate(self._gate, method, address))))

    async def _pump_feed(self, write: Callable[[bytes], Awaitable[None]]) -> None:
        receive = self._feed.receive
        while True:
            batch = [encode_event(await receive.receive())]
            while len(batch) < 1000:
                try:
                    batch.append(encode_event(receive.receive_nowait()))
                except trio.WouldBlock:
                    break
            await write(frame(batch))


class _StartFailed(Exception):
    def __init__(self, errno: int = 0, text: str = "no answer from the web viewer") -> None:
        super().__init__(text)
        self.errno = errno
        self.text = text


async def _stop(process: trio.Process) -> None:
    """Close the child's input (it stops serving), wait a little, then kill."""
    if process.stdin is not None:
        await trio.aclose_forcefully(process.stdin)
    with trio.move_on_after(STOP_TIMEOUT):
        await process.wait()
    if process.returncode is None:
        process.kill()
        await process.wait()


# ---------------------------------------------------------------------- the child


async def _child(control_in: int, control_out: int, spawner: SpawnThread | None = None) -> None:
    from server.logs import configure_logging
    from web.app import WebViewer

    reader = FrameReader(trio.lowlevel.FdStream(control_in))
    out = trio.lowlevel.FdStream(control_out)
    writing = trio.Lock()

    async def send(value: tuple[Any, ...]) -> None:
        async with writing:
            await out.send_all(frame(value))

    _kind, settings, game_port, port = await reader.receive()
    configure_logging(settings.log_format, settings.log_level)
    viewer = WebViewer(settings, port=port, spawner=spawner)
    gate = RemoteGate(send)
    viewer.gate = gate
    hub = viewer.hub
    async with trio.open_nursery() as nursery:
        try:
            await nursery.start(viewer.run, game_port)
        except (OSError, BaseExceptionGroup) as failure:
            error = _os_error(failure)
            if error is None:
                raise
            await send(("failed", error.errno or 0, error.strerror or str(error)))
            return
        await send(("listening", viewer.url))
        try:
            while True:
                received = await reader.receive()
                if isinstance(received, tuple):  # ("gate", id, answer)
                    gate.answer(received[1], received[2])
                    continue
                for event in received:
                    hub.apply(decode_event(event))
        except EOFError:
            pass  # the server closed the pipe: stop
        nursery.cancel_scope.cancel()


def _os_error(error: BaseException) -> OSError | None:
    if isinstance(error, OSError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _os_error(inner)
            if found is not None:
                return found
    return None


def lower_priority() -> SpawnThread | None:
    """Give this thread (and every thread and process it starts from now on) the viewer's
    priority: nice NICENESS and SCHED_BATCH, and the shortest slice the kernel grants
    (`shorten_slice`). First, where priority is per thread (Linux), a `SpawnThread` that keeps
    the priority the server gave us: the bots of "play from here" start there, so a person's
    opponent gets the CPU share of a bot in a real game."""
    spawner = SpawnThread() if sys.platform.startswith("linux") else None
    os.nice(NICENESS)
    # SCHED_BATCH: the viewer's wakeups never preempt another task (the game server), yet it
    # keeps its fair share of the CPU (SCHED_IDLE would starve it on a machine busy with bots).
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    shorten_slice()
    return spawner


# sched_setattr's number where the kernel has it (glibc has no wrapper).
_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}
# struct sched_attr up to sched_period (SCHED_ATTR_SIZE_VER0): size, policy, flags, nice,
# priority, runtime, deadline, period.
_SCHED_ATTR = struct.Struct("=IIQiIQQQ")
# The shortest slice Linux accepts (0.1 ms; the default is 0.75 ms times 1 + log2(CPUs)).
SHORT_SLICE_NS = 100_000


def shorten_slice() -> bool:
    """Ask for the shortest scheduler slice for this thread (Linux 6.12 and later: EEVDF takes
    `sched_runtime` as the slice of a normal task). Why: EEVDF lets a running task finish its
    slice before a task that wakes up may run (RUN_TO_PARITY), whatever their weights: with
    the default slice a busy viewer made a bot or a player's client on its CPU wait up to a
    millisecond and more for each wakeup (`bench.viewer`: the games' p99 +52 % under 500
    viewers on such a kernel). Nice and policy stay as they are. False where it cannot be
    asked (another OS or architecture); older kernels take and ignore it."""
    number = _SCHED_SETATTR.get(os.uname().machine) if sys.platform.startswith("linux") else None
    if number is None:
        return False
    import ctypes  # (only here: the viewer process, once)

    attr = ctypes.create_string_buffer(
        _SCHED_ATTR.pack(
            _SCHED_ATTR.size,
            os.sched_getscheduler(0),
            0,
            os.getpriority(os.PRIO_PROCESS, 0),
            0,
            SHORT_SLICE_NS,
            0,
            0,
        )
    )
    libc = ctypes.CDLL(None, use_errno=True)
    status: int = libc.syscall(number, 0, attr, 0)
    return status == 0


def main() -> None:
    """`python -m web.process`: the child (started by `WebProcess`, never by hand)."""
    spawner = lower_priority()
    # The server stops the viewer by closing its input; a Ctrl-C reaches both processes.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The control pipes are stdin and stdout; print() and friends go to stderr instead.
    control_out = os.dup(1)
    os.dup2(2, 1)
    trio.run(_child, 0, control_out, spawner)


if __name__ == "__main__":
    main()
