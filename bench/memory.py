"""Server memory: RSS per idle connection and per running game, over loopback.

The server (`python -m cli.server`, its own process, RLIMIT_NOFILE raised to the hard limit,
connection and room caps raised for the bench only: `--max-connections`, `--max-rooms`, and
`--no-timeout` so slow players never time out) is measured from /proc/PID/status (VmRSS):

1. a fresh server, its baseline after one short warm-up game, then `--idle` connections open
   that said `<protocol>` and nothing else (an idle client, or a bot that has not joined yet):
   per idle connection = (RSS - baseline) / count;
2. another fresh server, its baseline likewise, then `--games` games running at once (`<join>`
   rooms, both players connected, every game mid-play: each player answers its moveRequest
   after a random think time, so all games stay open): per game = (RSS - baseline) / games,
   the two connections of its players included.

Run:  .venv/bin/python -m bench.memory [--idle 10000] [--games 1000] [--think 2.0]
"""

from __future__ import annotations

import argparse
import random
import resource
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import trio

from bench.server import PacketSplitter, decode_memento
from bench.serverprocess import ServerProcess, start_server
from engine import GameState
from protocol import ClientConnection
from protocol.events import Join, MovePacket

MB = 1024 * 1024


def rss_bytes(pid: int) -> int:
    """Resident set size of a process (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


async def settled_rss(pid: int, seconds: float = 2.0) -> int:
    """RSS once it stopped growing (the server has handled what was sent)."""
    last = rss_bytes(pid)
    while True:
        await trio.sleep(seconds)
        now = rss_bytes(pid)
        if abs(now - last) < MB // 4:
            return now
        last = now


@dataclass
class Players:
    """What the game players share: each game's state (tracked by applying the moves its two
    players send, so mementos need not be parsed), moves made, games started and over."""

    think: float
    states: dict[str, GameState] = field(default_factory=dict)
    moves: int = 0
    started: int = 0
    finished: int = 0
    errors: list[str] = field(default_factory=list)


async def player(port: int, players: Players, rng: random.Random, stop: trio.Event) -> None:
    """Join a game and play it until its end or `stop`: the first legal move after a random
    think time around `players.think`."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    connection = ClientConnection()
    await stream.send_all(connection.send(Join()))
    splitter = PacketSplitter()
    async with stream:
        while not stop.is_set():
            with trio.move_on_after(1) as waiting:
                data = await stream.receive_some(65536)
            if waiting.cancelled_caught:
                continue
            if not data:
                return
            for packet in splitter.feed(bytes(data)):
                head = packet[:200]
                if packet.startswith(b"<left") or packet == b"</protocol>":
                    players.finished += 1
                    return
                room = head.split(b'"', 2)[1].decode() if b'"' in head else ""
                if b'class="memento"' in head:
                    if room not in players.states:
                        players.states[room] = decode_memento(packet).state
                        players.started += 1
                elif b'class="moveRequest"' in head:
                    think = rng.uniform(0.5, 1.5) * players.think
                    with trio.move_on_after(think):
                        await stop.wait()
                    if stop.is_set():
                        return
                    state = players.states[room]
                    move = state.legal_moves()[0]
                    players.states[room] = state.apply(move)
                    await stream.send_all(connection.send(MovePacket(room, move)))
                    players.moves += 1
                elif packet.startswith(b"<errorpacket") or b'class="error"' in head:
                    players.errors.append(packet[:200].decode(errors="replace"))
                    return


async def warm_up(server: ServerProcess) -> int:
    """One game to its tenth move (what is imported lazily is loaded); the settled RSS."""
    warm = Players(think=0.01)
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        for seed in range(2):
            nursery.start_soon(player, server.port, warm, random.Random(seed), stop)
        while warm.moves < 10:
            await trio.sleep(0.05)
        stop.set()
    return await settled_rss(server.pid)


async def measure_idle(server: ServerProcess, idle: int) -> None:
    baseline = await warm_up(server)
    streams = []
    for index in range(idle):
        stream = await trio.open_tcp_stream("127.0.0.1", server.port)
        await stream.send_all(b"<protocol>")
        streams.append(stream)
        if index % 500 == 499:
            await trio.sleep(0)  # let the server accept
    with_idle = await settled_rss(server.pid)
    per_idle = (with_idle - baseline) / max(1, idle)
    print(
        f"{idle} idle connections: server RSS {with_idle / MB:.1f} MB "
        f"(baseline {baseline / MB:.1f} MB), {per_idle / 1024:.1f} KiB per idle connection"
    )
    for stream in streams:
        await stream.aclose()


async def measure_games(server: ServerProcess, games: int, think: float) -> None:
    baseline = await warm_up(server)
    players = Players(think=think)
    stop = trio.Event()
    started_at = time.monotonic()
    async with trio.open_nursery() as nursery:
        for index in range(2 * games):
            nursery.start_soon(player, server.port, players, random.Random(index), stop)
            if index % 200 == 199:
                await trio.sleep(0)
        while len(players.states) < games and time.monotonic() - started_at < 120:
            await trio.sleep(0.5)
        await trio.sleep(3 * think)  # a few moves into every game
        running = await settled_rss(server.pid)
        stop.set()
    per_game = (running - baseline) / max(1, games)
    print(
        f"{games} running games ({len(players.states)} started, {players.finished // 2} "
        f"over, {players.moves} moves made): server RSS {running / MB:.1f} MB "
        f"(baseline {baseline / MB:.1f} MB), {per_game / 1024:.1f} KiB per running game"
    )
    if players.errors:
        print(f"errors: {players.errors[:3]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--idle", type=int, default=10_000, help="idle connections")
    parser.add_argument("--games", type=int, default=1_000, help="concurrent games")
    parser.add_argument("--think", type=float, default=2.0, help="mean seconds per move")
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # this process holds them too
    needed = max(args.idle, 2 * args.games) + 200
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise SystemExit(f"RLIMIT_NOFILE hard limit {hard} < {needed} descriptors needed")
    options = [
        "--log-level",
        "warning",
        "--max-connections",
        str(needed),
        "--max-rooms",
        str(args.games + 100),
        "--no-timeout",
    ]
    descriptors = hard if hard != resource.RLIM_INFINITY else needed + 1000
    print(f"server: -m cli.server {' '.join(options)}  (RLIMIT_NOFILE {descriptors})")
    print("each measure on a fresh server process:")
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        workdir = Path(tmp)
        with start_server(options, cwd=workdir, descriptors=descriptors) as server:
            trio.run(measure_idle, server, args.idle)
        with start_server(options, cwd=workdir, descriptors=descriptors) as server:
            trio.run(measure_games, server, args.games, args.think)


if __name__ == "__main__":
    main()
