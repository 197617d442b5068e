"""Viewer benchmark: does watching slow the server? 100 WebSocket viewers on one running game.

The server runs in its own process (`python -m cli.server --web-port ...`, pinned to one CPU when
there are several); the web viewer runs in a child process of it (web.process), moved to the
other CPUs (`--web-cpu others`, the default) or left on the server's (`--web-cpu server`).
In-process SC clients play `--games` prepared games at once, back to back:
one "watched" game whose bots think `--watched-think` seconds per move (like real bots: a game
lasts about half a minute), and the others with `--think` seconds per move, for load and
latency samples. The script measures two windows in one run: first without viewers, then with
`--viewers` WebSocket viewers (in a process of their own) on the watched game's page socket,
following it to the next game when one ends. For each window it prints:

- moves/s: moves the server accepted per second of wall time, all games;
- latency p50/p99: the server's per-move latency, from a client sending its move to the
  opponent receiving its moveRequest (both clients share this process's clock), all games;
- server CPU: CPU seconds the server process used per second of wall time; web CPU: the same
  for the web viewer's process;
- with viewers also the viewers' delay p50/p99: from the move leaving its client to a viewer
  receiving a snapshot that shows it (snapshots are rate-limited, latest state wins).

Run:  .venv/bin/python -m bench.viewer [--viewers 100] [--seconds 20] [--games 10]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import trio

from bench.serverprocess import PASSWORD, cpu_seconds, percentile, start_server
from client import ConnectionClosed, open_session
from engine import GameState, Move
from protocol import GAME_TYPE
from protocol.events import JoinPrepared, Prepare, SlotDescriptor
from web.sc import admin_request
from web.wsclient import WebSocketClosed, WsClient

TURN = re.compile(r'"turn":(\d+)')


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


async def viewer(web_port: int, watched: Watched, connected: list[int]) -> None:
    counted = False
    while True:
        room = watched.room
        if not room:
            await watched.changed.wait()
            continue
        ws = await WsClient.connect("127.0.0.1", web_port, f"/ws/game/{room}")
        if not counted:
            connected[0] += 1
            counted = True
        try:
            first = True
            while True:
                # Only the turn and the status: a browser parses the JSON once per snapshot too,
                # but here a hundred viewers share one process next to the measuring clients.
                text = await ws.receive_text()
                turn = TURN.search(text)
                if not first and turn:  # the first one shows a state of before the viewer came
                    watched.seen.append((room, int(turn.group(1)), time.perf_counter()))
                first = False
                if '"status":"over"' in text or '"missing"' in text:
                    break
        except WebSocketClosed:
            pass
        finally:
            await ws.aclose()
        while watched.room == room:
            await watched.changed.wait()


async def watch(web_port: int, viewers: int) -> None:
    """Viewer process: connect, say "ready", watch until stdin closes, print what was seen."""
    watched = Watched()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(scout, web_port, watched)
        connected = [0]
        for _ in range(viewers):
            nursery.start_soon(viewer, web_port, watched, connected)
        while connected[0] < viewers:
            await trio.sleep(0.05)
        print("ready", flush=True)
        await trio.to_thread.run_sync(sys.stdin.read)
        nursery.cancel_scope.cancel()
    for room, turn, when in watched.seen:
        print(f"{room} {turn} {when!r}")


def children(pid: int) -> list[int]:
    """The child processes of `pid` (the web viewer's process, when it has one)."""
    try:
        return [
            int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        ]
    except OSError:
        return []


def web_cpu_seconds(pid: int) -> float:
    """CPU seconds of the server's children (the web viewer runs in one)."""
    total = 0.0
    for child in children(pid):
        with contextlib.suppress(OSError):
            total += cpu_seconds(child)
    return total


async def measure(shared: Shared, pid: int, seconds: float) -> tuple[Window, float, float, float]:
    window = shared.window = Window(measuring=True)
    cpu_before, started = cpu_seconds(pid), time.perf_counter()
    web_before = web_cpu_seconds(pid)
    await trio.sleep(seconds)
    window.measuring = False
    elapsed = time.perf_counter() - started
    return (
        window,
        elapsed,
        (cpu_seconds(pid) - cpu_before) / elapsed,
        (web_cpu_seconds(pid) - web_before) / elapsed,
    )


async def run(
    port: int,
    web_port: int,
    pid: int,
    viewers: int,
    seconds: float,
    think: float,
    games: int,
    watched_think: float,
) -> None:
    shared = Shared()
    series = Series(shared, "watched")
    others = [Series(shared, f"game{index}") for index in range(games - 1)]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(play_series, port, series, watched_think)
        for other in others:
            nursery.start_soon(play_series, port, other, think)
        await trio.sleep(3.0)  # warm-up: every game started
        alone = await measure(shared, pid, seconds)
        process = await trio.lowlevel.open_process(
            [
                sys.executable,
                "-m",
                "bench.viewer",
                "--watch",
                str(web_port),
                "--viewers",
                str(viewers),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert process.stdin is not None and process.stdout is not None
        output = b""
        while b"ready\n" not in output:
            output += await process.stdout.receive_some()
        await trio.sleep(1.0)
        watched = await measure(shared, pid, seconds)
        measured_from = time.perf_counter() - watched[1]
        measured_to = time.perf_counter()
        await process.stdin.aclose()
        while chunk := await process.stdout.receive_some():
            output += chunk
        await process.wait()
        nursery.cancel_scope.cancel()
    for line in output.decode().splitlines()[1:]:
        room, turn, when = line.split()
        sent = series.all_sent.get((room, int(turn)))
        if sent is not None and measured_from <= float(when) <= measured_to:
            watched[0].snapshots += 1
            watched[0].viewer_delays.append(float(when) - sent)
    header = ("moves/s", "p50 ms", "p99 ms")
    print(
        f"{'':22} {header[0]:>8} {header[1]:>8} {header[2]:>8} {'CPU':>6} {'web CPU':>7}"
        f" {'view p50/p99':>19}"
    )
    for label, (window, elapsed, cpu, web_cpu) in (
        ("no viewers", alone),
        (f"{viewers} viewers", watched),
    ):
        view = (
            f"{percentile(window.viewer_delays, 0.5) * 1000:8.1f}ms"
            f"{percentile(window.viewer_delays, 0.99) * 1000:8.1f}ms"
            if window.viewer_delays
            else f"{'-':>9} {'-':>9}"
        )
        print(
            f"{label:22} {window.moves / elapsed:8.1f} "
            f"{percentile(window.latencies, 0.5) * 1000:8.3f} "
            f"{percentile(window.latencies, 0.99) * 1000:8.3f} {cpu:6.2f} {web_cpu:7.2f} {view}"
        )
    base_p99 = percentile(alone[0].latencies, 0.99)
    watched_p99 = percentile(watched[0].latencies, 0.99)
    base_rate = alone[0].moves / alone[1]
    watched_rate = watched[0].moves / watched[1]
    print(
        f"p99 latency {100 * (watched_p99 / base_p99 - 1):+.1f} %, "
        f"throughput {100 * (watched_rate / base_rate - 1):+.1f} % with {viewers} viewers "
        f"({watched[0].snapshots} snapshots delivered in {watched[1]:.1f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--viewers", type=int, default=100, help="WebSocket viewers")
    parser.add_argument("--seconds", type=float, default=20.0, help="measured window each")
    parser.add_argument("--games", type=int, default=10, help="games played at once")
    parser.add_argument(
        "--think", type=float, default=0.05, help="seconds per move in the unwatched games"
    )
    parser.add_argument(
        "--watched-think",
        type=float,
        default=0.5,
        help="seconds per move in the watched game (as real bots: it lasts about 30 s)",
    )
    parser.add_argument("--server-cpu", type=int, default=0, help="CPU to pin the server to")
    parser.add_argument(
        "--web-cpu",
        choices=("others", "server"),
        default="others",
        help="where the web viewer's process runs: on the CPUs other than the server's "
        "(default: the server's CPU is the game server's) or on the server's CPU",
    )
    parser.add_argument("--profile", metavar="FILE", help="run the server under cProfile")
    parser.add_argument("--watch", type=int, metavar="WEB_PORT", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.watch:
        # The players' clients measure the latency: they get the CPU first (the viewers stand
        # for browsers on other machines).
        os.nice(19)
        with contextlib.suppress(AttributeError, OSError):  # and never preempt them on a wakeup
            os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
        trio.run(watch, arguments.watch, arguments.viewers)
        return
    options = ["--log-level", "warning", "--reservation-ttl", "0"]
    profile = Path(arguments.profile) if arguments.profile else None
    with (
        tempfile.TemporaryDirectory() as cwd,
        start_server(
            options, cwd=Path(cwd), profile=profile, cpu=arguments.server_cpu, web=True
        ) as server,
    ):
        assert server.web_port is not None
        others = set(os.sched_getaffinity(0))
        if arguments.web_cpu == "others" and others != set(os.sched_getaffinity(server.pid)):
            for child in children(server.pid):  # the web viewer's process
                os.sched_setaffinity(child, others)
        trio.run(
            run,
            server.port,
            server.web_port,
            server.pid,
            arguments.viewers,
            arguments.seconds,
            arguments.think,
            arguments.games,
            arguments.watched_think,
        )


if __name__ == "__main__":
    main()
