"""Viewer benchmark: does watching slow the server? `--viewers` WebSocket viewers on one game.

The server runs in its own process (`python -m cli.server --web-port ...`); the web viewer runs
in a child process of it (web.process). By default nothing is pinned and the kernel places every
process, as when the product runs. `--server-cpu N` pins the server alone to CPU N and moves the
web process to the other CPUs (`--web-cpu others`) or leaves it on the server's
(`--web-cpu server`).
In-process SC clients play `--games` prepared games at once, back to back:
one "watched" game whose bots think `--watched-think` seconds per move (like real bots: a game
lasts about half a minute), and the others with `--think` seconds per move, for load and
latency samples. The script measures `--rounds` windows with viewers in one run, each between two
windows without (none, V, none, ..., V, none: a drift of the machine's load hits both alike); the
viewers run in a process of their own (nice 19, SCHED_IDLE: they stand for browsers on other
machines), started before and stopped after each window with viewers, following the watched
game to the next one when it ends; it reads all its sockets every 20 ms rather than waiting
on them, so that the web process's writes do not wake it (`sweep`), and offers
permessage-deflate as browsers do with `--deflate`. For each window it prints:

- moves/s: moves the server accepted per second of wall time, all games;
- latency p50/p99: the server's per-move latency, from a client sending its move to the
  opponent receiving its moveRequest (both clients share this process's clock), all games;
- server CPU: CPU seconds the server process used per second of wall time; web CPU: the same
  for the web viewer's process;
- waited: milliseconds per second the players' clients (this process), the server and the
  web process spent on a run queue waiting for a CPU (/proc schedstat): whether a slower
  p99 comes from scheduling or from the work beside it (caches, the kernel);
- with viewers also the viewers' delay p50/p99: from the move leaving its client to a viewer
  reading a snapshot that shows it (snapshots are rate-limited, latest state wins; read up to
  20 ms after they arrive).

Then the comparison. The goal's figure: each window with viewers against the mean of the two
windows without viewers around it, the median of those ratios with a distribution-free interval
(the window is the unit: the machine drifts between windows by more than the goal's 10 %, so
more rounds narrow the interval); beside it the p99 of all windows' moves pooled (its bootstrap
over the moves is blind to that drift), the median of the per-window p99s, the throughput
likewise, the load average.

Run:  .venv/bin/python -m bench.viewer [--viewers 500] [--rounds 4] [--seconds 15] [--games 10]
"""

from __future__ import annotations

import argparse
import contextlib
import heapq
import os
import random
import re
import select
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import trio

from bench.serverprocess import (
    PASSWORD,
    REPO,
    cpu_seconds,
    median_interval,
    percentile,
    start_server,
)
from client import ConnectionClosed, open_session
from engine import GameState, Move
from protocol import GAME_TYPE
from protocol.events import JoinPrepared, Prepare, SlotDescriptor
from web.sc import admin_request
from web.wsclient import WebSocketClosed, WsClient

TURN = re.compile(r'"turn":(\d+)')


def load() -> str:
    """The load average, as `uptime` shows it."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


@dataclass
class Window:
    """What one measured window saw."""

    measuring: bool = False
    moves: int = 0
    latencies: list[float] = field(default_factory=list)
    viewer_delays: list[float] = field(default_factory=list)
    snapshots: int = 0


@dataclass
class Shared:
    """The window being measured, shared by every series."""

    window: Window = field(default_factory=Window)


@dataclass
class Series:
    """One game after the other, by one pair of players."""

    shared: Shared
    name: str
    room: str = ""
    changed: trio.Event = field(default_factory=trio.Event)
    sent_at: dict[tuple[str, int], float] = field(default_factory=dict)  # (room, turn) -> time
    all_sent: dict[tuple[str, int], float] = field(default_factory=dict)  # kept for the viewers

    def next_room(self, room: str) -> None:
        self.room = room
        self.sent_at.clear()
        self.changed.set()
        self.changed = trio.Event()


async def player(port: int, code: str, series: Series, think: float, rng: random.Random) -> None:
    async def choose(state: GameState) -> Move:
        window = series.shared.window
        other = series.sent_at.get((series.room, state.turn))
        if other is not None and window.measuring:
            window.latencies.append(time.perf_counter() - other)
        if think:
            await trio.sleep(think)
        sent = time.perf_counter()  # the move leaves right after this returns
        series.sent_at[(series.room, state.turn + 1)] = sent
        series.all_sent[(series.room, state.turn + 1)] = sent
        if window.measuring:
            window.moves += 1
        return rng.choice(state.legal_moves())

    async with open_session("127.0.0.1", port) as session:
        await session.send(JoinPrepared(code))
        with contextlib.suppress(ConnectionClosed):
            await session.play(choose)


async def play_series(port: int, series: Series, think: float) -> None:
    rng = random.Random(2026)
    slots = tuple(SlotDescriptor(f"{series.name}-{team}", True, True) for team in ("a", "b"))
    while True:
        reply = await admin_request(port, PASSWORD, [Prepare(GAME_TYPE, False, slots)])
        prepared = reply.prepared[0]
        series.next_room(prepared.room_id)
        async with trio.open_nursery() as nursery:
            for code in prepared.reservations:
                nursery.start_soon(player, port, code, series, think, rng)


# ---------------------------------------------------------------------- the viewer process
# The viewers run in a process of their own, so their work (WebSocket frames, JSON) does not
# slow the players' clients that measure the server's latency. They find the game being played
# on the lobby socket, as the lobby page does, and report what they saw on stdout.


@dataclass
class Watched:
    room: str = ""
    changed: trio.Event = field(default_factory=trio.Event)
    seen: list[tuple[str, int, float]] = field(default_factory=list)  # room, turn, when


async def scout(web_port: int, watched: Watched) -> None:
    lobby = await WsClient.connect("127.0.0.1", web_port, "/ws/lobby")
    while True:
        rooms = (await lobby.receive_json())["data"]["rooms"]
        live = [
            room["id"]
            for room in rooms
            if room["status"] in ("waiting", "running") and room["names"][0] == "watched-a"
        ]
        if live and live[0] != watched.room:
            watched.room = live[0]
            watched.changed.set()
            watched.changed = trio.Event()


# What a browser offers (Chromium and Firefox alike): the server's frames then come deflated.
DEFLATE_OFFER = "permessage-deflate; client_max_window_bits"


class LeanSocket:
    """A WebSocket reader as lean as this process can make it: the viewers stand for browsers
    on other machines, so what reading costs here is the bench's, taken from the CPU of the
    players' clients that measure (with wsproto, 0.12 of a CPU for 500 viewers). Reads the
    server's unmasked frames itself; a fragmented message, a ping or a frame it does not know
    ends the connection (the web viewer sends whole text frames without pings). With `deflate`
    it offers permessage-deflate as browsers do and inflates the messages (RFC 7692) with one
    context per connection, as a browser keeps it."""

    def __init__(
        self, stream: trio.SocketStream, buffered: bytes, *, inflate: bool = False
    ) -> None:
        self.stream = stream
        self.buffer = bytearray(buffered)
        # What ended the connection, raised once the texts before it have been returned.
        self.ended: WebSocketClosed | None = None
        # The server accepted permessage-deflate: its compressed messages are inflated here.
        self.inflater = zlib.decompressobj(-zlib.MAX_WBITS) if inflate else None

    @classmethod
    async def connect(cls, port: int, path: str, *, deflate: bool = False) -> LeanSocket:
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        offer = f"Sec-WebSocket-Extensions: {DEFLATE_OFFER}\r\n" if deflate else ""
        try:
            await stream.send_all(
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                f"Sec-WebSocket-Version: 13\r\n{offer}\r\n".encode()
            )
            received = b""
            while b"\r\n\r\n" not in received:
                chunk = await stream.receive_some(65536)
                if not chunk or len(received) > 65536:
                    raise WebSocketClosed("no handshake")
                received += chunk
            head, _, rest = received.partition(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 101"):
                raise WebSocketClosed(head.split(b"\r\n", 1)[0].decode(errors="replace"))
        except BaseException:
            await stream.aclose()
            raise
        accepted = any(
            line.lower().startswith(b"sec-websocket-extensions:") and b"permessage-deflate" in line
            for line in head.split(b"\r\n")
        )
        return cls(stream, rest, inflate=accepted)

    def _next_text(self) -> str | None:
        """The next whole message's text from the buffer, None if it is not all there yet."""
        buffer = self.buffer
        if len(buffer) < 2:
            return None
        first, length = buffer[0], buffer[1] & 0x7F
        start = {126: 4, 127: 10}.get(length, 2)
        if start > 2 and len(buffer) >= start:
            length = int.from_bytes(buffer[2:start], "big")
        if len(buffer) < start + length:
            return None
        if first == 0x81:
            text = buffer[start : start + length].decode()
        elif first == 0xC1 and self.inflater is not None:  # a whole compressed text frame
            payload = bytes(buffer[start : start + length]) + b"\x00\x00\xff\xff"
            text = self.inflater.decompress(payload).decode()
        else:  # not a whole text frame: a close, or unexpected
            raise WebSocketClosed(f"frame 0x{first:02x}")
        del buffer[: start + length]
        return text

    def ready_texts(self) -> list[str]:
        """The messages that have arrived, without waiting (the sweep's read: see `sweep`).
        Raises WebSocketClosed once those before the end have been returned."""
        if self.ended is not None:
            raise self.ended
        descriptor = self.stream.socket.fileno()
        while True:
            try:
                chunk = os.read(descriptor, 65536)
            except BlockingIOError:
                break
            if not chunk:
                self.ended = WebSocketClosed("connection closed")
                break
            self.buffer += chunk
        texts = []
        try:
            while (text := self._next_text()) is not None:
                texts.append(text)
        except WebSocketClosed as error:
            self.ended = error
        if self.ended is not None and not texts:
            raise self.ended
        return texts

    async def aclose(self) -> None:
        await self.stream.aclose()


# How often the viewers' process reads its sockets (see `sweep`).
SWEEP_SECONDS = 0.02


@dataclass(eq=False)
class Reading:
    """A viewer's open connection to a game, read by `sweep` until the game ends."""

    ws: LeanSocket
    room: str
    first: bool = True  # the first snapshot shows a state of before the viewer came
    done: trio.Event = field(default_factory=trio.Event)


class Readings:
    """The viewers' open connections, by descriptor, and a level-triggered epoll of them that
    is only ever asked without a timeout: nobody waits on it, so a frame arriving wakes no
    one (`sweep`)."""

    def __init__(self) -> None:
        self.by_descriptor: dict[int, Reading] = {}
        self.epoll = select.epoll()

    def add(self, reading: Reading) -> None:
        descriptor = reading.ws.stream.socket.fileno()
        self.by_descriptor[descriptor] = reading
        self.epoll.register(descriptor, select.EPOLLIN)

    def end(self, reading: Reading) -> None:
        """Stop reading it (before its socket closes) and let its viewer go on."""
        descriptor = reading.ws.stream.socket.fileno()
        if self.by_descriptor.get(descriptor) is reading:
            del self.by_descriptor[descriptor]
            self.epoll.unregister(descriptor)
        reading.done.set()


async def sweep(watched: Watched, readings: Readings) -> None:
    """Read the viewers' sockets that have data, each SWEEP_SECONDS, without waiting on any of
    them: the viewers stand for browsers on other machines, and a process waiting on 500
    sockets is woken for the frames the web process writes (the kernel's wake-up runs in the
    writer's send, and the process then runs on the players' clients' CPU), a cost no remote
    browser puts on the server's machine. A move is seen at the sweep that finds it: up to
    SWEEP_SECONDS after it arrived."""
    while True:
        await trio.sleep(SWEEP_SECONDS)
        now = time.perf_counter()
        for descriptor, _ in readings.epoll.poll(0):
            reading = readings.by_descriptor.get(descriptor)
            if reading is None:
                continue
            try:
                texts = reading.ws.ready_texts()
            except (WebSocketClosed, OSError):
                readings.end(reading)
                continue
            over = False
            for text in texts:
                # Only the turn and the status: a browser parses the JSON once per snapshot too,
                # but here all viewers share one process on the machine measured.
                turn = TURN.search(text)
                if not reading.first and turn:
                    watched.seen.append((reading.room, int(turn.group(1)), now))
                reading.first = False
                over = '"status":"over"' in text or '"missing"' in text
                if over:
                    break
            if over or reading.ws.ended is not None:
                readings.end(reading)


async def viewer(
    web_port: int, watched: Watched, connected: list[int], readings: Readings, deflate: bool
) -> None:
    counted = False
    while True:
        room = watched.room
        if not room:
            await watched.changed.wait()
            continue
        try:
            ws = await LeanSocket.connect(web_port, f"/ws/game/{room}", deflate=deflate)
        except (WebSocketClosed, OSError, trio.BrokenResourceError):
            # Closed unanswered: a web process starved of CPU (a loaded machine) lets
            # hypercorn's keep-alive timer end a connection whose request it did not read
            # yet. A browser would try again.
            await trio.sleep(0.5)
            continue
        if not counted:
            connected[0] += 1
            counted = True
        reading = Reading(ws, room)
        readings.add(reading)
        try:
            await reading.done.wait()  # the viewer watches the next game (or this one again)
        finally:
            readings.end(reading)
            await ws.aclose()
        while watched.room == room:
            await watched.changed.wait()


async def watch(web_port: int, viewers: int, deflate: bool) -> None:
    """Viewer process: connect, say "ready", watch until stdin closes, print what was seen."""
    watched = Watched()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(scout, web_port, watched)
        connected = [0]
        readings = Readings()
        nursery.start_soon(sweep, watched, readings)
        for _ in range(viewers):
            nursery.start_soon(viewer, web_port, watched, connected, readings, deflate)
        while connected[0] < viewers:
            await trio.sleep(0.05)
        print("ready", flush=True)
        await trio.to_thread.run_sync(sys.stdin.read)
        nursery.cancel_scope.cancel()
    for room, turn, when in watched.seen:
        print(f"{room} {turn} {when!r}")


def children(pid: int) -> list[int]:
    """The child processes of `pid` (the web viewer's process, when it has one), of every one
    of its threads: trio starts a process from a worker thread, and /proc lists a child under
    the thread that forked it (until that thread ends)."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                found += (int(child) for child in (task / "children").read_text().split())
    return found


def slice_ms(pid: int) -> str:
    """The scheduler slice of a process's main thread (EEVDF kernels show it in
    /proc/PID/sched), for the record: it decides how long a busy viewer may keep a CPU from a
    task that wakes up."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/sched").read_text().splitlines():
            if line.startswith("se.slice"):
                return f"{int(line.split(':')[1]) / 1e6:g} ms"
    return "unknown"


def waited_seconds(pid: int) -> float:
    """Seconds the threads of a process have waited on a run queue for a CPU (the second field
    of /proc/PID/task/TID/schedstat): what a slower move has to do with scheduling, apart
    from what it has to do with caches or the kernel's own work."""
    total = 0
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError, IndexError, ValueError):
                total += int((task / "schedstat").read_text().split()[1])
    return total / 1e9


def web_waited_seconds(pid: int) -> float:
    """Seconds the server's children (the web viewer runs in one) waited for a CPU."""
    return sum(waited_seconds(child) for child in children(pid))


def web_cpu_seconds(pid: int) -> float:
    """CPU seconds of the server's children (the web viewer runs in one)."""
    total = 0.0
    for child in children(pid):
        with contextlib.suppress(OSError):
            total += cpu_seconds(child)
    return total


def waits(pid: int) -> tuple[float, float, float]:
    """Seconds waited for a CPU so far: the players' clients (this process), the server, the
    web process."""
    return waited_seconds(os.getpid()), waited_seconds(pid), web_waited_seconds(pid)


async def measure(
    shared: Shared, pid: int, seconds: float
) -> tuple[Window, float, float, float, tuple[float, float, float]]:
    window = shared.window = Window(measuring=True)
    cpu_before, started = cpu_seconds(pid), time.perf_counter()
    web_before, waits_before = web_cpu_seconds(pid), waits(pid)
    await trio.sleep(seconds)
    window.measuring = False
    elapsed = time.perf_counter() - started
    clients, server, web = (
        (after - before) / elapsed for after, before in zip(waits(pid), waits_before, strict=True)
    )
    return (
        window,
        elapsed,
        (cpu_seconds(pid) - cpu_before) / elapsed,
        (web_cpu_seconds(pid) - web_before) / elapsed,
        (clients, server, web),
    )


@dataclass
class Measured:
    """One window's figures."""

    viewers: int
    window: Window
    elapsed: float
    cpu: float
    web_cpu: float
    viewers_cpu: float = 0.0  # the viewers' process (the browsers' stand-in)
    load: float = 0.0  # the 1-minute load average at the window's end
    # Seconds per second waited for a CPU: the players' clients, the server, the web process.
    waited: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def rate(self) -> float:
        return self.window.moves / self.elapsed

    @property
    def p99(self) -> float:
        return percentile(self.window.latencies, 0.99)


async def start_viewers(
    web_port: int, viewers: int, cpus: set[int] | None, deflate: bool
) -> trio.Process:
    """The viewer process, its viewers connected ("ready"); on `cpus` (None: this
    process's); `deflate`: they offer permessage-deflate, as browsers do."""
    process = await trio.lowlevel.open_process(
        [
            sys.executable,
            "-m",
            "bench.viewer",
            "--watch",
            str(web_port),
            "--viewers",
            str(viewers),
            *(["--deflate"] if deflate else []),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    if cpus is not None:
        os.sched_setaffinity(process.pid, cpus)
    assert process.stdout is not None
    output = b""
    while b"ready\n" not in output:
        chunk = await process.stdout.receive_some()
        if not chunk:
            raise SystemExit("the viewer process ended before its viewers connected")
        output += chunk
    return process


async def stop_viewers(process: trio.Process) -> list[tuple[str, int, float]]:
    """Close the viewer process's input; what its viewers saw (room, turn, when)."""
    assert process.stdin is not None and process.stdout is not None
    await process.stdin.aclose()
    output = b""
    while chunk := await process.stdout.receive_some():
        output += chunk
    await process.wait()
    seen = []
    for line in output.decode().splitlines():
        if line != "ready":
            room, turn, when = line.split()
            seen.append((room, int(turn), float(when)))
    return seen


async def run(
    port: int,
    web_port: int,
    pid: int,
    viewers: int,
    seconds: float,
    think: float,
    games: int,
    watched_think: float,
    rounds: int,
    settle: float,
    viewer_cpus: set[int] | None,
    deflate: bool,
) -> list[Measured]:
    """`rounds` windows with viewers, each between two without (none, V, none, ..., V, none):
    a slow drift of the machine's load hits both alike. Between windows the games go on for
    `settle` seconds (the viewers connecting or leaving are in no window)."""
    shared = Shared()
    series = Series(shared, "watched")
    others = [Series(shared, f"game{index}") for index in range(games - 1)]
    measured: list[Measured] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(play_series, port, series, watched_think)
        for other in others:
            nursery.start_soon(play_series, port, other, think)
        await trio.sleep(3.0)  # warm-up: every game started
        for window_number in range(2 * rounds + 1):
            count = viewers if window_number % 2 else 0
            process = await start_viewers(web_port, count, viewer_cpus, deflate) if count else None
            await trio.sleep(settle)
            viewers_before = cpu_seconds(process.pid) if process is not None else 0.0
            window, elapsed, cpu, web_cpu, waited = await measure(shared, pid, seconds)
            viewers_cpu = (
                (cpu_seconds(process.pid) - viewers_before) / elapsed
                if process is not None
                else 0.0
            )
            measured_to = time.perf_counter()
            measured_from = measured_to - elapsed
            if process is not None:
                for room, turn, when in await stop_viewers(process):
                    sent = series.all_sent.get((room, turn))
                    if sent is not None and measured_from <= when <= measured_to:
                        window.snapshots += 1
                        window.viewer_delays.append(when - sent)
            measured.append(
                Measured(
                    count,
                    window,
                    elapsed,
                    cpu,
                    web_cpu,
                    viewers_cpu,
                    os.getloadavg()[0],
                    waited,
                )
            )
            print(format_window(measured[-1]), flush=True)
        nursery.cancel_scope.cancel()
    return measured


def format_window(measured: Measured) -> str:
    """One window's line."""
    window = measured.window
    view = (
        f"{percentile(window.viewer_delays, 0.5) * 1000:8.1f}ms"
        f"{percentile(window.viewer_delays, 0.99) * 1000:8.1f}ms"
        if window.viewer_delays
        else f"{'-':>10}{'-':>10}"
    )
    return (
        f"{measured.viewers:>7} {len(window.latencies):>6} {measured.rate:8.1f} "
        f"{percentile(window.latencies, 0.5) * 1000:8.3f} {measured.p99 * 1000:8.3f} "
        f"{measured.cpu:6.2f} {measured.web_cpu:7.2f} {measured.viewers_cpu:7.2f} {view}"
        f" {measured.load:5.1f} " + "/".join(f"{wait * 1000:.1f}" for wait in measured.waited)
    )


HEADER = (
    f"{'viewers':>7} {'moves':>6} {'moves/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'CPU':>6} "
    f"{'web CPU':>7} {'vw CPU':>7} {'view p50/p99':>20} {'load':>5} "
    "waited ms/s: clients/server/web"
)


def bootstrap_ratio(
    base: list[float], other: list[float], resamples: int, rng: random.Random
) -> tuple[float, float]:
    """95 % bootstrap interval of p99(other) / p99(base), each pooled sample resampled with
    replacement (the p99 as the k-th largest, k = 1 % of the sample)."""
    ratios = []
    for _ in range(resamples):
        one = rng.choices(base, k=len(base))
        two = rng.choices(other, k=len(other))
        ratios.append(
            heapq.nlargest(len(two) // 100 + 1, two)[-1]
            / heapq.nlargest(len(one) // 100 + 1, one)[-1]
        )
    ratios.sort()
    return ratios[int(0.025 * resamples)], ratios[int(0.975 * resamples) - 1]


def summarise(measured: list[Measured], viewers: int, resamples: int) -> None:
    """The comparison of the two configurations over all windows."""
    alone = [m for m in measured if m.viewers == 0]
    watched = [m for m in measured if m.viewers > 0]

    def pooled(windows: list[Measured]) -> list[float]:
        return [latency for m in windows for latency in m.window.latencies]

    def rate(windows: list[Measured]) -> float:
        return sum(m.window.moves for m in windows) / sum(m.elapsed for m in windows)

    base, other = pooled(alone), pooled(watched)
    low, high = bootstrap_ratio(base, other, resamples, random.Random(21))
    median_alone = statistics.median(m.p99 for m in alone)
    median_watched = statistics.median(m.p99 for m in watched)
    # Each window with viewers against the mean of the windows without viewers around it.
    pairs = [
        (
            watched[index].p99 / statistics.fmean(m.p99 for m in alone[index : index + 2]),
            watched[index].rate / statistics.fmean(m.rate for m in alone[index : index + 2]),
        )
        for index in range(len(watched))
    ]
    delays = [delay for m in watched for delay in m.window.viewer_delays]
    change = percentile(other, 0.99) / percentile(base, 0.99) - 1
    print(
        f"{len(alone)} windows without and {len(watched)} with {viewers} viewers, in turn, "
        f"{len(base)} and {len(other)} moves:"
    )
    # The goal's figure: each window with viewers against the windows without around it, and
    # a distribution-free interval of the median of those ratios. The unit is the window: the
    # machine drifts between windows (one window without viewers alone can double the p99),
    # and a bootstrap over the pooled moves, which treats every move as independent, gives an
    # interval far too narrow for that. "met" only when the whole interval is within +10 %,
    # "missed" only when all of it is above (else the run cannot tell).
    ratios = [ratio for ratio, _ in pairs]
    paired_low, paired_high, coverage = median_interval(ratios)
    verdict = (
        "met" if paired_high - 1 <= 0.10 else "missed" if paired_low - 1 > 0.10 else "undecided"
    )
    print(
        f"  p99, each window with viewers against the two without around it: median "
        f"{100 * (statistics.median(ratios) - 1):+.1f} % ({len(ratios)} pairs; "
        f"{100 * coverage:.0f} % interval {100 * (paired_low - 1):+.1f} .. "
        f"{100 * (paired_high - 1):+.1f} %: p99 within +10 % {verdict})"
    )
    print(
        f"  p99 pooled: {percentile(base, 0.99) * 1000:.3f} -> "
        f"{percentile(other, 0.99) * 1000:.3f} ms, {100 * change:+.1f} % "
        f"(bootstrap over the moves, blind to the drift between windows: "
        f"{100 * (low - 1):+.1f} .. {100 * (high - 1):+.1f} %)"
    )
    print(
        f"  p99 median of the windows: {median_alone * 1000:.3f} -> "
        f"{median_watched * 1000:.3f} ms, {100 * (median_watched / median_alone - 1):+.1f} %; "
        f"each window with viewers against the windows around it: "
        + ", ".join(f"{100 * (ratio - 1):+.1f}" for ratio, _ in pairs)
        + " %"
    )
    if len(alone) > 1 and len(watched) > 1:
        # How much one window decides: the pooled p99 with each side's worst window left out.
        def trimmed(windows: list[Measured]) -> list[float]:
            worst = max(windows, key=lambda m: m.p99)
            return pooled([m for m in windows if m is not worst])

        base_trim, other_trim = trimmed(alone), trimmed(watched)
        print(
            f"  p99 pooled without each side's worst window: "
            f"{percentile(base_trim, 0.99) * 1000:.3f} -> "
            f"{percentile(other_trim, 0.99) * 1000:.3f} ms, "
            f"{100 * (percentile(other_trim, 0.99) / percentile(base_trim, 0.99) - 1):+.1f} %"
        )
    print(
        f"  p50 pooled: {percentile(base, 0.5) * 1000:.3f} -> "
        f"{percentile(other, 0.5) * 1000:.3f} ms"
    )
    print(
        f"  throughput: {rate(alone):.1f} -> {rate(watched):.1f} moves/s, "
        f"{100 * (rate(watched) / rate(alone) - 1):+.1f} % (per window: "
        + ", ".join(f"{100 * (ratio - 1):+.1f}" for _, ratio in pairs)
        + " %)"
    )
    if delays:
        print(
            f"  viewers see a move after p50 {percentile(delays, 0.5) * 1000:.0f} ms, "
            f"p99 {percentile(delays, 0.99) * 1000:.0f} ms "
            f"({sum(m.window.snapshots for m in watched)} snapshots delivered)"
        )
    web_alone = statistics.fmean(m.web_cpu for m in alone)
    web_watched = statistics.fmean(m.web_cpu for m in watched)
    per_second = sum(m.window.snapshots for m in watched) / sum(m.elapsed for m in watched)
    if per_second:
        print(
            f"  the web process's CPU per snapshot delivered: "
            f"{(web_watched - web_alone) / per_second * 1e6:.0f} µs "
            f"({per_second:.0f} snapshots/s to the viewers)"
        )

    def waited(windows: list[Measured], which: int) -> str:
        return f"{statistics.fmean(m.waited[which] for m in windows) * 1000:.2f}"

    print(
        "  waited for a CPU (ms per second): the players' clients "
        f"{waited(alone, 0)} -> {waited(watched, 0)}, the server {waited(alone, 1)} -> "
        f"{waited(watched, 1)}, the web process {waited(alone, 2)} -> {waited(watched, 2)}"
    )
    print(
        f"  server CPU {statistics.fmean(m.cpu for m in alone):.3f} -> "
        f"{statistics.fmean(m.cpu for m in watched):.3f}, web CPU "
        f"{web_alone:.3f} -> {web_watched:.3f}, the viewers' process "
        f"{statistics.fmean(m.viewers_cpu for m in watched):.3f} (CPU seconds per second)"
    )


def cpu_or_none(text: str) -> int | None:
    """`--server-cpu`'s value: a CPU number, or "none"."""
    if text == "none":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a CPU number or 'none': {text!r}") from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--viewers", type=int, default=100, help="WebSocket viewers")
    parser.add_argument("--seconds", type=float, default=15.0, help="measured window each")
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="windows with viewers, each between two without (default 4: 9 windows)",
    )
    parser.add_argument(
        "--settle", type=float, default=2.0, help="seconds between windows (not measured)"
    )
    parser.add_argument(
        "--resamples", type=int, default=400, help="bootstrap resamples of the p99 ratio"
    )
    parser.add_argument("--games", type=int, default=10, help="games played at once")
    parser.add_argument(
        "--think", type=float, default=0.03, help="seconds per move in the unwatched games"
    )
    parser.add_argument(
        "--watched-think",
        type=float,
        default=0.5,
        help="seconds per move in the watched game (as real bots: it lasts about 30 s)",
    )
    parser.add_argument(
        "--server-cpu",
        type=cpu_or_none,
        default=None,
        help="'none' (the default): nothing pinned, the kernel places every process, as the "
        "product runs (nothing in it pins the server or its web process; a league pins its "
        "bots over all cores); or a CPU to pin the server alone to, the players' clients, the "
        "web process and the viewers on the others (the default until 7 December)",
    )
    parser.add_argument(
        "--web-cpu",
        choices=("others", "server"),
        default="others",
        help="where the web viewer's process runs: on the CPUs other than the server's "
        "(default: the server's CPU is the game server's) or on the server's CPU",
    )
    parser.add_argument(
        "--web-sched",
        choices=("as-started", "idle", "other"),
        default="as-started",
        help="the web viewer's scheduling policy: as web.process sets it (default), "
        "SCHED_IDLE (it runs only when a CPU would idle otherwise) or SCHED_OTHER",
    )
    parser.add_argument(
        "--viewer-cpu",
        choices=("clients", "server"),
        default="clients",
        help="where the viewers' process runs: on the players' clients' CPUs (default) or on "
        "the server's CPU (so that the clients that measure have theirs to themselves)",
    )
    parser.add_argument(
        "--deflate",
        action="store_true",
        help="the viewers offer permessage-deflate as browsers do and get the snapshots "
        "deflated (a fifth of the bytes), which the stand-in then inflates on the machine "
        "measured (default: plain frames)",
    )
    parser.add_argument("--profile", metavar="FILE", help="run the server under cProfile")
    parser.add_argument(
        "--root",
        type=Path,
        default=REPO,
        help="run the server and its web viewer from this checkout (before/after with the "
        "same bench and viewers: e.g. a worktree at main's commit)",
    )
    parser.add_argument("--watch", type=int, metavar="WEB_PORT", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.watch:
        # The players' clients measure the latency: they get the CPU first (the viewers stand
        # for browsers on other machines). SCHED_IDLE, not SCHED_BATCH: on an EEVDF kernel a
        # running batch task keeps the CPU until its slice ends when a client wakes, and this
        # stand-in's slices showed up in the games' p99; an idle-policy task is preempted at
        # once and runs only on CPU time nobody else wants.
        os.nice(19)
        with contextlib.suppress(AttributeError, OSError):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        trio.run(watch, arguments.watch, arguments.viewers, arguments.deflate)
        return
    usable = sorted(os.sched_getaffinity(0))
    if arguments.server_cpu is not None and arguments.server_cpu not in usable:
        parser.error(f"--server-cpu {arguments.server_cpu}: this process may use CPUs {usable}")
    options = ["--log-level", "warning", "--reservation-ttl", "0"]
    profile = Path(arguments.profile) if arguments.profile else None
    with (
        tempfile.TemporaryDirectory() as cwd,
        start_server(
            options,
            cwd=Path(cwd),
            root=arguments.root.resolve(),
            profile=profile,
            cpu=arguments.server_cpu,
            web=True,
        ) as server,
    ):
        assert server.web_port is not None
        others = set(os.sched_getaffinity(0))
        if arguments.web_cpu == "others" and others != set(os.sched_getaffinity(server.pid)):
            for child in children(server.pid):  # the web viewer's process
                os.sched_setaffinity(child, others)
        if arguments.web_sched != "as-started":
            policy = os.SCHED_IDLE if arguments.web_sched == "idle" else os.SCHED_OTHER
            for child in children(server.pid):
                os.sched_setscheduler(child, policy, os.sched_param(0))
        print(
            "web viewer's policy: "
            + ", ".join(
                {os.SCHED_IDLE: "SCHED_IDLE", os.SCHED_BATCH: "SCHED_BATCH"}.get(
                    os.sched_getscheduler(child), "SCHED_OTHER"
                )
                + f" nice {os.getpriority(os.PRIO_PROCESS, child)} slice {slice_ms(child)}"
                for child in children(server.pid)
            )
        )
        print(
            f"server from {arguments.root}; load average before: {load()} ({os.cpu_count()} CPUs)"
        )
        print(HEADER)
        measured = trio.run(
            run,
            server.port,
            server.web_port,
            server.pid,
            arguments.viewers,
            arguments.seconds,
            arguments.think,
            arguments.games,
            arguments.watched_think,
            max(1, arguments.rounds),
            arguments.settle,
            set(os.sched_getaffinity(server.pid)) if arguments.viewer_cpu == "server" else None,
            arguments.deflate,
        )
    summarise(measured, arguments.viewers, arguments.resamples)
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
