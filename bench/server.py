"""Server benchmark: many concurrent games over loopback against `python -m cli.server`.

The server runs in its own process (pinned to one CPU when there are several) with its
default timeouts. Lightweight in-process clients (trio, client.ClientSession; players read the
stream with a byte-level splitter instead of parsing every memento, see `read_split`) play
prepared games and answer every move request at once with the first legal move. For each level
of concurrency the script prints:

- moves/s: moves the server accepted per second of wall time, over the whole window;
- latency p50/p99/max: the server's per-move latency, defined as the time from a client
  sending its move to the opponent receiving its moveRequest (both clients of a game live in
  the same process and use the same clock);
- server CPU: CPU seconds the server process used per second of wall time (1.0 = one core
  saturated), and the server's CPU time per move;
- in flight: the games being played (both players connected), sampled in the window: the
  level is what the loops ask for, this is what they get (between a game and the next a loop
  waits for its prepare and its players' connections).

With `--relay`, each level is also played against `bench.relay` (the socket floor: the same
socket work per move, no XML, rules or logs; pinned like the server) and a second row gives its
CPU per move and the server's as a multiple of it, in the same run. The relay's own figure
varies by a third between runs on a shared machine, which moves the ratio as much as a change
to the server does: `--repeat N` plays each level N times, the server and the relay in turns
(which goes first alternates), and prints every run, each run's ratio, and the median ratio
with its range and a distribution-free interval for it (`serverprocess.median_interval`: ten
runs give the 2nd and 9th smallest ratios, 97.9 %). `--checkout DIR` also runs another
checkout's server (e.g. a worktree at main's commit) in the same turns, so old and new compare
side by side in one run. The load average is printed at each run's start.

Run:  .venv/bin/python -m bench.server [--levels 1,10,100] [--seconds 10] [--relay]
          [--repeat N] [--checkout OLD_CHECKOUT]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import trio

from bench.serverprocess import (
    PASSWORD,
    ServerProcess,
    cpu_seconds,
    median_interval,
    percentile,
    start_server,
)
from client import ClientSession, ConnectionClosed, open_session
from engine import GameState
from protocol import ClientConnection
from protocol.events import GAME_TYPE, JoinPrepared, MovePacket, Prepare, SlotDescriptor
from protocol.messages import (
    ErrorPacket,
    Left,
    Memento,
    MoveRequest,
    Prepared,
    ResultMessage,
    RoomError,
)

THINK_RANDOM = random.Random(2026)


@dataclass
class Stats:
    start: float  # the measured window: [start, deadline)
    deadline: float
    verify: bool = False
    think: float = 0.0  # mean seconds a client waits before answering a moveRequest
    moves: int = 0  # sent within the window
    games: int = 0
    latencies: list[float] = field(default_factory=list)
    playing: int = 0  # games whose players are connected now (from the first to the last)
    in_flight: list[int] = field(default_factory=list)  # `playing`, sampled in the window


@dataclass
class Game:
    """What the two clients of one game share: the state (tracked by applying the moves
    they send, so the mementos need not be decoded) and when the last move was sent."""

    state: GameState | None = None
    sent_at: float | None = None


class PacketSplitter:
    """Cuts the server's stream into depth-1 packets by the official byte layout
    (`<room ...>` up to its `\n  </room>`, single-line packets up to `/>`): far cheaper
    than parsing every memento, which would make the clients the bottleneck."""

    def __init__(self) -> None:
        self.buffer = b""
        self.started = False

    def feed(self, data: bytes) -> list[bytes]:
        self.buffer += data
        packets = []
        while True:
            buffer = self.buffer.lstrip()
            if not self.started:
                if len(buffer) < len(b"<protocol>"):
                    break
                assert buffer.startswith(b"<protocol>"), buffer[:50]
                self.buffer = buffer[len(b"<protocol>") :]
                self.started = True
                continue
            if buffer.startswith(b"<room"):
                end = buffer.find(b"\n  </room>")
                if end < 0:
                    break
                end += len(b"\n  </room>")
            elif buffer.startswith(b"</protocol>"):
                end = len(b"</protocol>")
            else:
                end = buffer.find(b">")
                if end < 0:
                    break
                end += 1
                if buffer[end - 2 : end] != b"/>":
                    raise RuntimeError(f"unexpected packet: {buffer[:200]!r}")
            packets.append(buffer[:end])
            self.buffer = buffer[end:]
        self.buffer = buffer
        return packets


async def play(port: int, reservation: str, game: Game, stats: Stats) -> None:
    client = ClientSession(await trio.open_tcp_stream("127.0.0.1", port))
    await client.send(JoinPrepared(reservation))
    try:
        if stats.verify:
            await read_parsed(client, game, stats)
        else:
            await read_split(client, game, stats)
    finally:
        await client.stream.aclose()  # no goodbye: the server closes after <left> anyway


async def read_split(client: ClientSession, game: Game, stats: Stats) -> None:
    """The session sends; its stream is read here directly, through the byte splitter, on
    purpose: parsing every memento would make the clients (one process for all games) the
    bottleneck. `python -m bench.server --levels 10,100 --seconds 5` against `... --verify` (every
    message through ClientSession.receive), on a busy 2-core machine: client CPU per move
    0.2 ms with the splitter, 0.9 ms parsed, and the moves/s halved (697 -> 339 at 10
    games)."""
    splitter = PacketSplitter()
    while True:
        data = await client.stream.receive_some(65536)
        if not data:
            return
        for packet in splitter.feed(bytes(data)):
            if packet.startswith(b"<left") or packet == b"</protocol>":
                return
            head = packet[:200]
            if b'class="moveRequest"' in head:
                await answer(client, head.split(b'"', 2)[1].decode(), game, stats)
            elif b'class="memento"' in head:
                if game.state is None:
                    game.state = decode_memento(packet).state
            elif b'class="result"' in head:
                if stats.start <= time.perf_counter() < stats.deadline:
                    stats.games += 1
            elif packet.startswith(b"<errorpacket") or b'class="error"' in head:
                raise RuntimeError(f"server error: {packet[:300]!r}")


async def read_parsed(client: ClientSession, game: Game, stats: Stats) -> None:
    """Every message through the session, each memento checked against the clients' state."""
    while True:
        try:
            message = await client.receive()
        except ConnectionClosed:
            return
        if isinstance(message, Left):
            return
        if isinstance(message, MoveRequest):
            await answer(client, message.room_id, game, stats)
        elif isinstance(message, Memento):
            if game.state is None:
                game.state = message.state
            elif game.state.turn == message.state.turn:
                assert game.state == message.state, "client state out of sync"
        elif isinstance(message, ResultMessage):
            if stats.start <= time.perf_counter() < stats.deadline:
                stats.games += 1
        elif isinstance(message, (ErrorPacket, RoomError)):
            raise RuntimeError(f"server error: {message!r}")


def decode_memento(packet: bytes) -> Memento:
    """One memento cut by the splitter (the first of a game: the start board)."""
    connection = ClientConnection()
    connection.receive_data(b"<protocol>" + packet)
    message = connection.next_event()
    assert isinstance(message, Memento), message
    return message


async def answer(client: ClientSession, room: str, game: Game, stats: Stats) -> None:
    """Answer a move request with the first legal move; measure the latency."""
    now = time.perf_counter()
    if game.sent_at is not None and stats.start <= game.sent_at < stats.deadline:
        stats.latencies.append(now - game.sent_at)
    if stats.think:
        # Exponential think times keep the games from moving in lockstep.
        await trio.sleep(THINK_RANDOM.expovariate(1 / stats.think))
    state = game.state
    assert state is not None, "moveRequest before any memento"
    move = state.legal_moves()[0]
    # Before sending: the opponent may run before send_all returns.
    game.state = state.apply(move)
    game.sent_at = time.perf_counter()
    await client.send(MovePacket(room, move))
    if stats.start <= game.sent_at < stats.deadline:
        stats.moves += 1


@dataclass
class Window:
    """CPU seconds used during the measured window."""

    server_cpu: float = 0.0
    client_cpu: float = 0.0


async def run_level(
    port: int,
    concurrency: int,
    seconds: float,
    server_pid: int,
    verify: bool = False,
    think: float = 0.0,
    ramp: float = 1.0,
    watch: Callable[[Stats], Awaitable[None]] | None = None,
) -> tuple[Stats, Window]:
    """`concurrency` game loops, each playing prepared games back to back. Moves are counted
    in a window of `seconds` that opens `ramp` seconds after the start (once every game
    runs); games running at its end are finished but no longer counted. `watch` runs beside
    the games with their (live) stats."""
    now = time.perf_counter()
    stats = Stats(start=now + ramp, deadline=now + ramp + seconds, verify=verify, think=think)
    window = Window()

    async def measure_cpu() -> None:
        await trio.sleep_until(trio.current_time() + ramp)
        server_before, client_before = cpu_seconds(server_pid), time.process_time()
        end = trio.current_time() + seconds
        while trio.current_time() < end:  # how many of the level's games really run
            stats.in_flight.append(stats.playing)
            await trio.sleep(min(0.05, max(0.0, end - trio.current_time())))
        window.server_cpu = cpu_seconds(server_pid) - server_before
        window.client_cpu = time.process_time() - client_before

    async with open_session("127.0.0.1", port, password=PASSWORD) as admin:
        preparer = Preparer(admin)

        async def game_loop(delay: float) -> None:
            # The loops start spread over the ramp, as the games of a running server are:
            # started together, their ends (and their set-up work) would come in bursts.
            await trio.sleep(delay)
            while time.perf_counter() < stats.deadline:
                first, second = await preparer.reservations()
                game = Game()
                stats.playing += 1
                try:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(play, port, first, game, stats)
                        nursery.start_soon(play, port, second, game, stats)
                finally:
                    stats.playing -= 1

        async with trio.open_nursery() as nursery:
            nursery.start_soon(preparer.run)
            nursery.start_soon(measure_cpu)
            if watch is not None:
                nursery.start_soon(watch, stats)
            async with trio.open_nursery() as loops:
                for index in range(concurrency):
                    loops.start_soon(game_loop, ramp * index / concurrency)
            nursery.cancel_scope.cancel()  # the preparer waits for requests forever
    return stats, window


class Preparer:
    """The game loops' prepares on the one admin session, pipelined: every request waiting
    when the last answers came is sent at once and their answers (in order) are read after.

    One prepare awaited at a time (as before) kept far fewer games than the level in flight:
    a game's loop waited a round trip through both busy processes per waiting loop in front
    of it, so at 100 "concurrent" games 34 were being played (sampled, load 4.5) and the
    throughput was the prepares' rate, not the server's. Each game still costs the server
    one `<prepare>`."""

    def __init__(self, admin: ClientSession) -> None:
        self.admin = admin
        self.slots = (SlotDescriptor("a", True, True), SlotDescriptor("b", True, True))
        self.requests, self._requests = trio.open_memory_channel[
            tuple[list[tuple[str, str]], trio.Event]
        ](math.inf)

    async def reservations(self) -> tuple[str, str]:
        """The two reservation codes of a freshly prepared game."""
        answer: list[tuple[str, str]] = []
        done = trio.Event()
        self.requests.send_nowait((answer, done))
        await done.wait()
        return answer[0]

    async def run(self) -> None:
        while True:
            batch = [await self._requests.receive()]
            while True:
                try:
                    batch.append(self._requests.receive_nowait())
                except trio.WouldBlock:
                    break
            for _ in batch:
                await self.admin.send(Prepare(GAME_TYPE, False, self.slots, None, None))
            for answer, done in batch:
                prepared = await self.admin.expect(Prepared)
                first, second = prepared.reservations
                answer.append((first, second))
                done.set()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="1,10,100", help="concurrent games per run")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured window per level")
    parser.add_argument("--log-level", default="info", help="server log level")
    parser.add_argument("--server-cpu", type=int, default=0, help="CPU to pin the server to")
    parser.add_argument("--json", action="store_true", help="print results as JSON lines too")
    parser.add_argument(
        "--think-ms",
        type=float,
        default=0.0,
        help="clients wait a random time with this mean before answering (opens the closed "
        "loop: with 0 the server is always saturated and latency = concurrency / throughput)",
    )
    parser.add_argument("--profile", metavar="FILE", help="run the server under cProfile")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="clients read every message through ClientSession.receive and check each memento "
        "against their state (slower clients)",
    )
    parser.add_argument(
        "--relay",
        action="store_true",
        help="also play each level against bench.relay (the socket floor) and print the ratio",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs per level, the targets in turns; prints the median ratio and its range",
    )
    parser.add_argument(
        "--checkout",
        metavar="DIR",
        type=Path,
        help="also run the server of this checkout (e.g. a worktree at main) in the same turns",
    )
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.checkout is not None and not (args.checkout / "cli" / "server.py").is_file():
        parser.error(f"--checkout {args.checkout}: no cli/server.py there")
    levels = [int(level) for level in args.levels.split(",")]

    with contextlib.ExitStack() as servers:
        # Removed after the servers stopped (entered first, left last): each run's logs are
        # megabytes, and nothing reads them after the run.
        workdir = Path(servers.enter_context(tempfile.TemporaryDirectory(prefix="bench-server-")))
        targets: dict[str, ServerProcess] = {}
        targets["server"] = servers.enter_context(
            start_server(
                ["--log-level", args.log_level],
                cwd=workdir,
                log=workdir / "server.log",
                profile=Path(args.profile) if args.profile else None,
                cpu=args.server_cpu,
            )
        )
        if args.checkout is not None:
            olddir = workdir / "checkout"
            olddir.mkdir()
            targets["old"] = servers.enter_context(
                start_server(
                    ["--log-level", args.log_level],
                    cwd=olddir,
                    root=args.checkout.resolve(),
                    log=olddir / "server.log",
                    cpu=args.server_cpu,
                )
            )
        if args.relay:
            targets["relay"] = servers.enter_context(
                start_server(module="bench.relay", cwd=workdir, cpu=args.server_cpu)
            )
        for target in targets.values():
            trio.run(run_level, target.port, 2, 1.0, target.pid)  # warm-up, not reported
        server = targets["server"]
        print(
            f"server: {' '.join(server.command[1:])}  "
            f"(pinned to CPU {args.server_cpu}: {server.pinned})"
        )
        if args.checkout is not None:
            print(f"old: the same, from {args.checkout.resolve()}")
        print(
            f"clients: one trio process on CPUs {sorted(os.sched_getaffinity(0))}, "
            f"think time {args.think_ms:g} ms"
        )
        print(
            f"{'':>6} {'games':>6} {'moves/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
            f"{'server CPU':>10} {'CPU µs/move':>11} {'client CPU':>10} {'games done':>10} "
            f"{'in flight':>9} {'load':>5}"
        )
        for concurrency in levels:
            runs: dict[str, list[float]] = {label: [] for label in targets}
            for turn in range(args.repeat):
                # Alternating who goes first: a drift in the machine's load hits all alike.
                order = list(targets) if turn % 2 == 0 else list(reversed(targets))
                row = {
                    label: measure(targets[label], label, concurrency, args)[
                        "server_cpu_us_per_move"
                    ]
                    for label in order
                }
                for label, per_move in row.items():
                    runs[label].append(per_move)
                if args.relay:
                    for label in targets:
                        if label != "relay":
                            print(
                                f"{'':>6} {concurrency:>6} {label} CPU per move = "
                                f"{row[label] / max(1e-9, row['relay']):.2f} x the relay's"
                            )
            if args.repeat > 1 or args.relay:
                summarise(concurrency, runs, args.json)


def summarise(concurrency: int, runs: dict[str, list[float]], as_json: bool) -> None:
    """Each target's median CPU per move over the runs; with the relay, each one's ratio per
    run (to the relay's run of the same turn) as median and range."""
    for label, figures in runs.items():
        line = (
            f"{'':>6} {concurrency:>6} {label}: median {statistics.median(figures):.0f} µs/move "
            f"({min(figures):.0f}-{max(figures):.0f}, {len(figures)} runs)"
        )
        ratios: list[float] = []
        if "relay" in runs and label != "relay":
            ratios = [
                mine / max(1e-9, floor) for mine, floor in zip(figures, runs["relay"], strict=True)
            ]
            low, high, coverage = median_interval(ratios)
            line += (
                f"; x the relay: median {statistics.median(ratios):.2f} "
                f"({min(ratios):.2f}-{max(ratios):.2f}; the median's {coverage:.0%} interval "
                f"{low:.2f}-{high:.2f})"
            )
        print(line)
        if as_json:
            summary: dict[str, object] = {
                "games": concurrency,
                "target": label,
                "median_us_per_move": statistics.median(figures),
                "runs_us_per_move": figures,
            }
            if ratios:
                summary["median_over_relay"] = statistics.median(ratios)
                summary["runs_over_relay"] = ratios
                summary["median_interval_over_relay"] = [low, high, coverage]
            print(json.dumps(summary))


def measure(
    target: ServerProcess, label: str, concurrency: int, args: argparse.Namespace
) -> dict[str, float]:
    """One level against `target` (the server or the relay): print its row, return it."""
    load = os.getloadavg()[0]  # at the run's start: other jobs on the machine
    stats, window = trio.run(
        run_level,
        target.port,
        concurrency,
        args.seconds,
        target.pid,
        args.verify,
        args.think_ms / 1000,
    )
    server_cpu = window.server_cpu / args.seconds
    client_cpu = window.client_cpu / args.seconds
    rate = stats.moves / args.seconds
    p50 = percentile(stats.latencies, 0.50) * 1000
    p99 = percentile(stats.latencies, 0.99) * 1000
    worst = max(stats.latencies, default=float("nan")) * 1000
    per_move = window.server_cpu / max(1, stats.moves) * 1e6
    in_flight = statistics.mean(stats.in_flight) if stats.in_flight else float("nan")
    print(
        f"{label:>6} {concurrency:>6} {rate:>9.0f} {p50:>8.2f} {p99:>8.2f} {worst:>8.2f} "
        f"{server_cpu:>10.2f} {per_move:>11.0f} {client_cpu:>10.2f} {stats.games:>10} "
        f"{in_flight:>9.1f} {load:>5.1f}"
    )
    row = {
        "games": concurrency,
        "moves_per_s": rate,
        "p50_ms": p50,
        "p99_ms": p99,
        "max_ms": worst,
        "server_cpu": server_cpu,
        "server_cpu_us_per_move": per_move,
        "client_cpu": client_cpu,
        "games_done": stats.games,
        "in_flight": in_flight,
        "load": load,
    }
    if args.json:
        print(json.dumps({"target": label, **row}))
    return row


if __name__ == "__main__":
    main()
