"""Attack benchmark: do hostile clients decide games? (loopback only, bounded, stops by itself)

For each scenario the script starts `python -m server` afresh (its own port on 127.0.0.1,
logs at info level thrown away), runs the attack from this process, and meanwhile a probe
process plays 10 prepared games one after another between two instant bots (first legal
move, answered at once). It prints per scenario:

- irregular: probe games that did not end regularly (a timeout, a lost connection, or not
  finished within --probe-seconds) — the target is 0 of 10 under every attack;
- probe s: wall time of the 10 games;
- RSS peak: the server's peak resident memory (VmHWM) — the target is under 300 MB;
- CPU: the server's CPU seconds per wall second during the scenario (1.0 = one core).

Scenarios (`--attacks`, comma-separated; "none" is the baseline):
  prepare    30 connections, each sending in a loop a <prepare> of 9,000 <slot/> (63 KB)
             unauthenticated, and reading the answers as fast as they come
  auth       60 connections pipelining wrong <authenticate>s
  slowread   3 connections sending that <prepare> in a loop and reading 4 KiB every 5 s
  slowloris  100 connections sending one byte every 3 s of a packet that never ends
  join       30 connections that connect, <join>, and leave, in a loop
  garbage    30 connections sending random bytes, reconnecting when closed
Attackers reconnect whenever the server closes them.

Run:  .venv/bin/python bench/attack.py [--attacks none,prepare,...] [--server-root DIR]
(`--server-root` runs the server from another checkout, for before/after figures.)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.serverprocess import cpu_seconds, free_port, wait_until_listening  # noqa: E402
from client import ConnectionClosed, ServerRefused, open_session  # noqa: E402
from engine import GameState, Move  # noqa: E402
from protocol.events import JoinPrepared, SlotDescriptor  # noqa: E402

PASSWORD = "bench"
PREPARE_FLOOD = (
    b'<prepare gameType="swc_2026_piranhas">' + b"<slot/>" * 9000 + b"</prepare>"
)  # 63 KB, as in the issue
WRONG_AUTH = b'<authenticate password="wrong"/>' * 100

Attack = Callable[[trio.SocketStream], Awaitable[None]]


# ---------------------------------------------------------------- probe (its own process)


async def instant_bot(port: int, reservation: str) -> tuple[bool, str]:
    """Play one game answering at once; (regular end, reason)."""

    async def first_legal(state: GameState) -> Move:
        return state.legal_moves()[0]

    async with open_session("127.0.0.1", port) as client:
        await client.send(JoinPrepared(reservation))
        try:
            result = await client.play(first_legal)
        except ConnectionClosed:
            result = None
    return (False, "no result") if result is None else (result.regular, result.reason)


async def probe(port: int, games: int, seconds: float) -> dict[str, object]:
    """`games` prepared games one after another; how many ended irregularly."""
    started = time.monotonic()
    irregular: list[str] = []
    finished = 0
    slots = (SlotDescriptor("a", True, True), SlotDescriptor("b", True, True))
    with trio.move_on_after(seconds):
        async with open_session("127.0.0.1", port, password=PASSWORD) as admin:
            for _ in range(games):
                try:
                    prepared = await admin.prepare(slots, timeout=seconds)
                except (ConnectionClosed, ServerRefused) as error:
                    raise SystemExit(f"prepare failed: {error}") from None
                outcomes: list[tuple[bool, str]] = []

                async def play(code: str, outcomes: list[tuple[bool, str]] = outcomes) -> None:
                    outcomes.append(await instant_bot(port, code))

                async with trio.open_nursery() as nursery:
                    for code in prepared.reservations:
                        nursery.start_soon(play, code)
                finished += 1
                if not all(regular for regular, _ in outcomes):
                    irregular.append(next(reason for regular, reason in outcomes if not regular))
    irregular += ["not finished in time"] * (games - finished)
    return {
        "games": games,
        "irregular": len(irregular),
        "reasons": irregular,
        "seconds": round(time.monotonic() - started, 2),
    }


# ---------------------------------------------------------------- attacks
# Raw byte streams by design: the attackers send what no client session would (malformed,
# endless or unrequested bytes) and read as carelessly as an attacker does.


async def drain(stream: trio.SocketStream, chunk: int = 1 << 20, pause: float = 0.0) -> None:
    while await stream.receive_some(chunk):
        if pause:
            await trio.sleep(pause)


async def repeat_send(stream: trio.SocketStream, data: bytes) -> None:
    while True:
        await stream.send_all(data)


def flood(data: bytes, read_chunk: int = 1 << 20, read_pause: float = 0.0) -> Attack:
    """Send `data` in a loop while reading the answers (`read_chunk` every `read_pause` s)."""

    async def session(stream: trio.SocketStream) -> None:
        await stream.send_all(b"<protocol>")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(repeat_send, stream, data)
            await drain(stream, read_chunk, read_pause)
            nursery.cancel_scope.cancel()

    return session


async def slowloris(stream: trio.SocketStream) -> None:
    for byte in b'<protocol><join gameType="' + b"x" * 100000:
        await stream.send_all(bytes([byte]))
        await trio.sleep(3)


async def join_and_leave(stream: trio.SocketStream) -> None:
    await stream.send_all(b"<protocol><join/>")
    await stream.receive_some(65536)  # <joined>
    await trio.sleep(0.05)


async def garbage(stream: trio.SocketStream) -> None:
    noise = random.Random(os.getpid())
    async with trio.open_nursery() as nursery:
        nursery.start_soon(drain, stream)
        while True:
            await stream.send_all(bytes(noise.getrandbits(8) for _ in range(4096)))


def attack_scenario(name: str) -> tuple[int, Attack | None]:
    """How many connections and what each does."""
    if name == "none":
        return 0, None
    if name == "prepare":
        return 30, flood(PREPARE_FLOOD)
    if name == "auth":
        return 60, flood(WRONG_AUTH)
    if name == "slowread":
        return 3, flood(PREPARE_FLOOD, read_chunk=4096, read_pause=5.0)
    if name == "slowloris":
        return 100, slowloris
    if name == "join":
        return 30, join_and_leave
    if name == "garbage":
        return 30, garbage
    raise SystemExit(f"unknown attack {name!r}")


async def attacker(port: int, session: Attack) -> None:
    """One hostile connection, reconnecting whenever the server ends it."""
    while True:
        try:
            stream = await trio.open_tcp_stream("127.0.0.1", port)
        except OSError:
            await trio.sleep(0.1)
            continue
        try:
            await session(stream)
        except* (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass  # closed by the server: come again
        await trio.aclose_forcefully(stream)
        await trio.sleep(0.01)


# ---------------------------------------------------------------- the server process


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def run_scenario(name: str, args: argparse.Namespace) -> dict[str, object]:
    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix="bench-attack-"))
    env = dict(os.environ, PYTHONPATH=str(args.server_root))
    command = [sys.executable, "-m", "server", "--port", str(port), "--password", PASSWORD]
    server = subprocess.Popen(
        command, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_until_listening(port, server)
        connections, session = attack_scenario(name)
        cpu_before, wall_before = cpu_seconds(server.pid), time.monotonic()
        async with trio.open_nursery() as nursery:
            if session is not None:
                for _ in range(connections):
                    nursery.start_soon(attacker, port, session)
                await trio.sleep(args.warmup)  # the attack is in full swing first
            probe_process = await trio.run_process(
                [
                    sys.executable,
                    __file__,
                    "--probe",
                    str(port),
                    "--probe-seconds",
                    str(args.probe_seconds),
                ],
                capture_stdout=True,
                check=True,
            )
            cpu = (cpu_seconds(server.pid) - cpu_before) / (time.monotonic() - wall_before)
            rss = peak_rss_mb(server.pid)
            nursery.cancel_scope.cancel()
        result: dict[str, object] = json.loads(probe_process.stdout)
        result.update(attack=name, connections=connections, rss_mb=round(rss), cpu=round(cpu, 2))
        return result
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attacks", default="none,prepare,auth,slowread,slowloris,join,garbage")
    parser.add_argument("--server-root", type=Path, default=REPO, help="checkout to run")
    parser.add_argument("--warmup", type=float, default=3.0, help="attack seconds before probe")
    parser.add_argument("--probe-seconds", type=float, default=120.0, help="probe time limit")
    parser.add_argument("--probe", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print JSON lines too")
    args = parser.parse_args()
    if args.probe is not None:
        print(json.dumps(trio.run(probe, args.probe, 10, args.probe_seconds)))
        return
    print(f"server: {args.server_root}")
    print(f"{'attack':<10} {'conns':>5} {'irregular':>9} {'probe s':>8} {'RSS peak':>9} {'CPU':>5}")
    for name in args.attacks.split(","):
        result = trio.run(run_scenario, name, args)
        print(
            f"{name:<10} {result['connections']:>5} {result['irregular']:>6}/10 "
            f"{result['seconds']:>8} {result['rss_mb']:>6} MB {result['cpu']:>5}",
            flush=True,
        )
        if args.json or result["irregular"]:
            print("  " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
