"""Attack benchmark: do hostile clients decide games? (loopback only, bounded, stops by itself)

For each scenario the script starts `python -m cli.server` afresh (its own port on 127.0.0.1, its
own temporary directory, removed afterwards), runs the attack from this process, and meanwhile
a probe process plays 10 prepared games one after another between two instant bots (first
legal move, answered at once). It prints per scenario:

- irregular: probe games that did not end regularly (a timeout, a lost connection, or not
  finished within --probe-seconds) — the target is 0 of 10 under every attack;
- p99 ms: the probe's move latency, 99th percentile (from sending a move to the memento that
  shows it) — the target is under 100 ms;
- probe s: wall time of the 10 games;
- RSS peak: the server's peak resident memory (VmHWM) — the target is under 300 MB; web RSS:
  the viewer's process (web scenarios);
- CPU: the server's CPU seconds per wall second during the scenario (1.0 = one core);
- integrity: what the attack was after — for the descriptor and disk scenarios what became
  of the records (results file, replay directory, the server's log); for the web and input
  scenarios (bench.attack_web, listed there) what the attackers got and whether the data
  and the admin's session are intact.

Scenarios (`--attacks`, comma-separated; "none" is the baseline):
  prepare    30 connections, each sending in a loop a <prepare> of 9,000 <slot/> (63 KB)
             unauthenticated, and reading the answers as fast as they come
  auth       60 connections pipelining wrong <authenticate>s
  slowread   3 connections sending that <prepare> in a loop and reading 4 KiB every 5 s
  slowloris  100 connections sending one byte every 3 s of a packet that never ends
  join       30 connections that connect, <join>, and leave, in a loop
  garbage    30 connections sending random bytes, reconnecting when closed
  descriptors256
             the server under RLIMIT_NOFILE 256 (soft = hard; its connection cap becomes
             256 - 64 reserved = 192); the probe connects first, then idle connections
             (`<protocol>` said, nothing else) are held up to the cap and 50 past it, a
             refused one coming again after 0.2 s, while the 10 games are played. Checked:
             every game's line in `--results`, a newcomer refused while the cap is reached
             and let in once the attacker lets go, the refusals the log counts (its "over"
             line comes 10 s after the last refusal, so the scenario waits that long)
  descriptors
             the same with the inherited limits (the server raises its soft limit to the
             hard one; the cap is maxConnections, 1,000)
  diskfull   `--results` and `--replay-dir` (`--saveReplay`) on a 256 KiB tmpfs (needs
             root: mount/umount) with --disk-room KiB free; once the first replay is saved
             another writer takes all but 8 KiB. Checked: every line of the results file
             parses and it ends with a whole line, every game is either in it or in the
             log's "RESULT NOT RECORDED" lines (with the record), every replay under a final
             name is complete, no temporary file is left
  replays, wsfragments, loginbody, loginbrute, sessions, gzipbomb, slowbody, symlink,
  leaguegames, leagueteams
             the web viewer's and the inputs' attacks of issue 17 (bench/attack_web.py)
Attackers connect from 127.0.0.2 (the probe from 127.0.0.1) and reconnect whenever the
server closes them.

Run:  .venv/bin/python -m bench.attack [--attacks none,prepare,...] [--server-root DIR]
(`--server-root` runs the server from another checkout, for before/after figures; the last
three scenarios need its `--log-format json`.)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from bench.attackclient import Client, probe_command
from bench.serverprocess import (
    PASSWORD,
    REPO,
    ServerProcess,
    cpu_seconds,
    percentile,
    stop_server,
)
from bench.serverprocess import start_server as start_server_process
from protocol import GAME_TYPE
from protocol.events import (
    Authenticate,
    JoinPrepared,
    MovePacket,
    Prepare,
    SlotDescriptor,
)
from protocol.messages import (
    ErrorPacket,
    Left,
    Memento,
    MoveRequest,
    Prepared,
    ResultMessage,
)
from protocol.replay import read_replay
from server.limits import EPISODE_QUIET_SECONDS

PREPARE_FLOOD = (
    b'<prepare gameType="swc_2026_piranhas">' + b"<slot/>" * 9000 + b"</prepare>"
)  # 63 KB, as in the issue
WRONG_AUTH = b'<authenticate password="wrong"/>' * 100
# Attackers connect from another loopback address than the probe: the server locks an address
# out of admin login after failed logins, which would otherwise lock the probe's admin out too.
# (Loopback is still exempt from the per-address connection cap.)
ATTACKER = "127.0.0.2"

Attack = Callable[[trio.SocketStream], Awaitable[None]]


# ---------------------------------------------------------------- probe (its own process)


async def instant_bot(
    client: Client, reservation: str, latencies: list[float] | None = None
) -> tuple[bool, str]:
    """Play one game answering at once; (regular end, reason). `latencies` gets each move's
    latency in ms: from sending it to the memento that shows it applied."""
    await client.send(JoinPrepared(reservation))
    state = None
    outcome = (False, "no result")
    sent_at: float | None = None
    while True:
        message = await client.receive()
        if message is None or isinstance(message, Left):
            break
        if isinstance(message, Memento):
            state = message.state
            if sent_at is not None and latencies is not None:
                latencies.append((time.monotonic() - sent_at) * 1000)
            sent_at = None
        elif isinstance(message, MoveRequest):
            assert state is not None
            sent_at = time.monotonic()
            await client.send(MovePacket(message.room_id, state.legal_moves()[0]))
        elif isinstance(message, ResultMessage):
            outcome = (message.result.regular, message.result.reason)
    await client.stream.aclose()
    return outcome


async def probe(port: int, games: int, seconds: float, hold: bool = False) -> dict[str, object]:
    """`games` prepared games one after another; how many ended irregularly, and the rooms.
    With `hold`, every connection is opened first, "ready" is printed, and the games start
    at a line on stdin (the attacker takes every other connection in between)."""
    started = time.monotonic()
    irregular: list[str] = []
    rooms: list[str] = []
    latencies: list[float] = []
    finished = 0
    with trio.move_on_after(seconds):
        admin = await Client.connect(port)
        await admin.send(Authenticate(PASSWORD))
        held: list[Client] = []
        if hold:
            for _ in range(2 * games):
                held.append(await Client.connect(port))
                await held[-1].open_early()
            print("ready", flush=True)
            await trio.to_thread.run_sync(sys.stdin.readline)
            started = time.monotonic()
        for _ in range(games):
            slots = (SlotDescriptor("a", True, True), SlotDescriptor("b", True, True))
            await admin.send(Prepare(GAME_TYPE, False, slots))
            while True:
                message = await admin.receive()
                if isinstance(message, Prepared):
                    break
                if message is None or isinstance(message, ErrorPacket):
                    raise SystemExit(f"prepare failed: {message}")
            rooms.append(message.room_id)
            outcomes: list[tuple[bool, str]] = []

            async def play(code: str, outcomes: list[tuple[bool, str]] = outcomes) -> None:
                client = held.pop() if held else await Client.connect(port)
                outcomes.append(await instant_bot(client, code, latencies))

            async with trio.open_nursery() as nursery:
                for code in message.reservations:
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
        "rooms": rooms,
        "moves": len(latencies),
        "p99_ms": round(percentile(latencies, 0.99), 1),
        "max_ms": round(max(latencies, default=float("nan")), 1),
    }


# ---------------------------------------------------------------- attacks


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
            stream = await trio.open_tcp_stream("127.0.0.1", port, local_address=ATTACKER)
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


def start_server(
    args: argparse.Namespace,
    workdir: Path,
    extra: Sequence[str] = (),
    *,
    log: Path | None = None,
    descriptors: int | None = None,
) -> tuple[ServerProcess, int]:
    """`python -m cli.server` of `--server-root` on a fresh loopback port, listening; its log (JSON
    lines) goes to `log` or is thrown away. `descriptors`: RLIMIT_NOFILE soft = hard."""
    server = start_server_process(
        extra, cwd=workdir, root=args.server_root, log=log, descriptors=descriptors
    )
    return server, server.port


async def run_scenario(name: str, args: argparse.Namespace) -> dict[str, object]:
    from bench.attack_web import WEB_SCENARIOS, run_web_scenario  # it imports this module

    if name in WEB_SCENARIOS:
        return await run_web_scenario(name, args)
    if name in DESCRIPTOR_LIMITS:
        return await run_descriptor_scenario(name, args)
    if name == "diskfull":
        return await run_disk_full_scenario(args)
    workdir = Path(tempfile.mkdtemp(prefix="bench-attack-"))
    server, port = start_server(args, workdir)
    try:
        connections, session = attack_scenario(name)
        cpu_before, wall_before = cpu_seconds(server.pid), time.monotonic()
        async with trio.open_nursery() as nursery:
            if session is not None:
                for _ in range(connections):
                    nursery.start_soon(attacker, port, session)
                await trio.sleep(args.warmup)  # the attack is in full swing first
            probe_process = await trio.run_process(
                probe_command(args, port), capture_stdout=True, check=True
            )
            cpu = (cpu_seconds(server.pid) - cpu_before) / (time.monotonic() - wall_before)
            rss = peak_rss_mb(server.pid)
            nursery.cancel_scope.cancel()
        result: dict[str, object] = json.loads(probe_process.stdout)
        result.update(attack=name, connections=connections, rss_mb=round(rss), cpu=round(cpu, 2))
        return result
    finally:
        stop_server(server)
        shutil.rmtree(workdir, ignore_errors=True)


# ---------------------------------------------------------------- descriptor exhaustion

# Hard (= soft) RLIMIT_NOFILE of the server per scenario; None: as inherited (the server
# raises its soft limit to the hard one, and its connection cap is maxConnections).
DESCRIPTOR_LIMITS: dict[str, int | None] = {"descriptors": None, "descriptors256": 256}
EXCESS_CONNECTIONS = 50  # the attacker holds this many more than the server's cap
HOLDER_RETRY_SECONDS = 0.2  # a refused holder comes again after this long


@dataclass
class Holders:
    """What the connection holders saw."""

    open: int = 0  # connections open now (admitted or about to be refused)
    refused: int = 0  # "Too many connections" answers


async def hold_connection(port: int, tally: Holders) -> None:
    """One idle connection (it said `<protocol>`, so no deadline closes it), opened again
    whenever the server refuses or closes it."""
    while True:
        try:
            stream = await trio.open_tcp_stream("127.0.0.1", port, local_address=ATTACKER)
        except OSError:
            await trio.sleep(HOLDER_RETRY_SECONDS)
            continue
        tally.open += 1
        try:
            await stream.send_all(b"<protocol>")
            while data := await stream.receive_some(65536):
                tally.refused += b"Too many connections" in data
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        finally:
            tally.open -= 1
            await trio.aclose_forcefully(stream)
        await trio.sleep(HOLDER_RETRY_SECONDS)


async def try_join(port: int, seconds: float = 5.0) -> str:
    """A newcomer's `<join>`: "joined", "refused" (too many connections) or what else."""
    answer = b""
    with trio.move_on_after(seconds):
        try:
            stream = await trio.open_tcp_stream("127.0.0.1", port)
        except OSError as error:
            return f"connect failed: {error.strerror}"
        try:
            await stream.send_all(b"<protocol><join/>")
            while data := await stream.receive_some(65536):
                answer += data
                if b"<joined" in answer:
                    return "joined"
        except (trio.BrokenResourceError, OSError):
            pass
        finally:
            await trio.aclose_forcefully(stream)
    if b"Too many connections" in answer:
        return "refused"
    return "no answer" if not answer else "unexpected answer"


def log_entries(log: Path) -> list[dict[str, Any]]:
    entries = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            entry = json.loads(line)
            if isinstance(entry, dict):
                entries.append(entry)
    return entries


def listening_entry(log: Path, *, wait_seconds: float = 10.0) -> dict[str, Any]:
    """The server's "listening" line. The port accepts as soon as it listens, which can be
    before the line is in the file: wait for it (bounded), then say what the log holds."""
    give_up = time.monotonic() + wait_seconds
    while True:
        for entry in log_entries(log):
            if entry.get("event") == "listening":
                return entry
        if time.monotonic() > give_up:
            raise RuntimeError(f"no 'listening' line in {log} after {wait_seconds} s")
        time.sleep(0.05)


def refusals_in_log(entries: list[dict[str, Any]]) -> dict[str, int]:
    """Refusal episodes and the refusals their "over" lines counted, per kind."""
    counts = {"cap episodes": 0, "cap refused": 0, "out of fds episodes": 0, "fds refused": 0}
    for entry in entries:
        event = str(entry.get("event", ""))
        kind = "cap" if event.startswith("connection limit reached") else None
        if event.startswith("out of descriptors"):
            kind = "fds"
        if kind is None:
            continue
        if event.endswith(": over"):
            counts[f"{kind} refused"] += int(entry.get("refused", 0))
        else:
            counts["cap episodes" if kind == "cap" else "out of fds episodes"] += 1
    return counts


def results_integrity(results: Path) -> tuple[int, int, set[str], bool]:
    """(lines that parse, lines, their rooms, file ends with a newline)."""
    if not results.exists():
        return 0, 0, set(), True
    data = results.read_bytes()
    lines = data.splitlines()
    valid, rooms = 0, set()
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        valid += 1
        rooms.add(str(record.get("room")))
    return valid, len(lines), rooms, not data or data.endswith(b"\n")


async def run_probe_holding(
    args: argparse.Namespace, port: int, attack: Callable[[trio.Nursery], Awaitable[None]]
) -> dict[str, object]:
    """The probe opens its connections first; then `attack` runs (started in a nursery that
    is cancelled after the probe), then the probe plays its games."""
    with trio.fail_after(args.probe_seconds + 30):
        probe = await trio.lowlevel.open_process(
            probe_command(args, port, "--hold"), stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert probe.stdin is not None and probe.stdout is not None
        try:
            output = b""
            while b"ready\n" not in output:
                chunk = await probe.stdout.receive_some(65536)
                if not chunk:
                    raise SystemExit(f"probe ended before it was ready: {output!r}")
                output += chunk
            async with trio.open_nursery() as nursery:
                await attack(nursery)
                await probe.stdin.send_all(b"go\n")
                output = output.split(b"ready\n", 1)[1]
                while chunk := await probe.stdout.receive_some(65536):
                    output += chunk
                if await probe.wait() != 0:
                    raise SystemExit(f"probe failed: {output!r}")
                nursery.cancel_scope.cancel()
        finally:
            if probe.returncode is None:
                probe.kill()
                await probe.wait()
    result: dict[str, object] = json.loads(output)
    return result


async def run_descriptor_scenario(name: str, args: argparse.Namespace) -> dict[str, object]:
    """The attacker holds idle connections up to and past the server's connection cap while
    the probe (connected before) plays; then it lets go and newcomers must get in."""
    workdir = Path(tempfile.mkdtemp(prefix="bench-attack-"))
    results, log = workdir / "results.jsonl", workdir / "server.log"
    limit = DESCRIPTOR_LIMITS[name]
    extra = ["--results", str(results), "--log-format", "json"]
    server, port = start_server(args, workdir, extra, log=log, descriptors=limit)
    try:
        cap = int(listening_entry(log)["max_connections"])
        tally = Holders()
        states: dict[str, str] = {}
        cpu_before, wall_before = cpu_seconds(server.pid), time.monotonic()

        async def take_every_connection(nursery: trio.Nursery) -> None:
            for _ in range(cap + EXCESS_CONNECTIONS):
                nursery.start_soon(hold_connection, port, tally)
            await trio.sleep(args.warmup)
            states["newcomer during"] = await try_join(port)

        result = await run_probe_holding(args, port, take_every_connection)
        cpu = (cpu_seconds(server.pid) - cpu_before) / (time.monotonic() - wall_before)
        rss = peak_rss_mb(server.pid)
        # The attacker has let go: a newcomer gets in (the server may need a moment to
        # notice the closed connections).
        with trio.move_on_after(10):
            while (state := await try_join(port)) != "joined":
                await trio.sleep(0.2)
        states["newcomer after"] = state
        # An episode's "over" line (with its refusals) comes with the first admission after
        # EPISODE_QUIET_SECONDS without a refusal.
        await trio.sleep(EPISODE_QUIET_SECONDS + 0.5)
        await try_join(port)
        await trio.sleep(0.3)
    finally:
        stop_server(server)
    try:
        entries = log_entries(log)
        valid, lines, rooms, whole = results_integrity(results)
        probe_rooms = set(map(str, result["rooms"]))  # type: ignore[call-overload]
        lost = sum("RESULT NOT RECORDED" in str(entry.get("event")) for entry in entries)
        result.update(
            attack=name,
            connections=cap + EXCESS_CONNECTIONS,
            rss_mb=round(rss),
            cpu=round(cpu, 2),
            descriptor_limit=listening_entry(log)["descriptor_limit"],
            cap=cap,
            refused_answers=tally.refused,
            **states,
            **refusals_in_log(entries),
            results_valid=valid,
            results_lines=lines,
            probe_results_recorded=len(probe_rooms & rooms),
            results_file_ends_whole=whole,
            not_recorded_in_log=lost,
            errors_in_log=sum(entry.get("level") == "error" for entry in entries),
        )
        result["integrity"] = (
            f"results {len(probe_rooms & rooms)}/{len(probe_rooms)}, "
            f"newcomer {states['newcomer during']} at cap / {states['newcomer after']} after, "
            f"{result['cap refused']} refused (log)"
        )
        return result
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


# ---------------------------------------------------------------- disk full

DISK_BYTES = 256 * 1024  # the tmpfs
DISK_ROOM_LATER = 8 * 1024  # left free once the first replay is saved: two pages for lines


async def fill_disk_after_first_replay(disk: Path, replays: Path) -> None:
    """Another writer on the disk: once a replay is saved, take all but `DISK_ROOM_LATER`
    of what is left, so later replays and then result lines find the disk full."""
    # A replay's name is claimed by an empty file; it has its bytes once renamed into place.
    while not (replays.is_dir() and any(path.stat().st_size for path in replays.iterdir())):
        await trio.sleep(0.02)
    stats = os.statvfs(disk)
    with contextlib.suppress(OSError), (disk / "filler").open("ab") as filler:
        filler.write(b"\0" * max(0, stats.f_bavail * stats.f_frsize - DISK_ROOM_LATER))


def replay_integrity(directory: Path) -> tuple[int, int, int]:
    """(replays under a final name, of them complete, temporary files left)."""
    if not directory.is_dir():
        return 0, 0, 0
    finals = [path for path in directory.iterdir() if not path.name.startswith(".")]
    complete = 0
    for path in finals:
        with contextlib.suppress(Exception):
            read_replay(path.read_bytes())
            complete += 1
    leftovers = sum(path.name.startswith(".") for path in directory.iterdir())
    return len(finals), complete, leftovers


async def run_disk_full_scenario(args: argparse.Namespace) -> dict[str, object]:
    """Results file and replays on a tiny tmpfs that is nearly full: the probe's own games
    fill it up."""
    workdir = Path(tempfile.mkdtemp(prefix="bench-attack-"))
    disk, log = workdir / "disk", workdir / "server.log"
    results, replays = disk / "results.jsonl", disk / "replays"
    disk.mkdir()
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES},mode=0755", "tmpfs", str(disk)],
            check=True,
        )
        try:
            stats = os.statvfs(disk)
            filler = stats.f_bavail * stats.f_frsize - args.disk_room * 1024
            (disk / "filler").write_bytes(b"\0" * max(0, filler))
            extra = [
                "--results",
                str(results),
                "--replay-dir",
                str(replays),
                "--saveReplay",
                "--log-format",
                "json",
            ]
            server, port = start_server(args, workdir, extra, log=log)
            try:
                cpu_before, wall_before = cpu_seconds(server.pid), time.monotonic()
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(fill_disk_after_first_replay, disk, replays)
                    probe_process = await trio.run_process(
                        probe_command(args, port), capture_stdout=True, check=True
                    )
                    nursery.cancel_scope.cancel()
                cpu = (cpu_seconds(server.pid) - cpu_before) / (time.monotonic() - wall_before)
                rss = peak_rss_mb(server.pid)
            finally:
                stop_server(server)
            result: dict[str, object] = json.loads(probe_process.stdout)
            entries = log_entries(log)
            valid, lines, rooms, whole = results_integrity(results)
            lost = [entry for entry in entries if "RESULT NOT RECORDED" in str(entry.get("event"))]
            lost_rooms = {str(entry.get("record", {}).get("room")) for entry in lost}
            probe_rooms = set(map(str, result["rooms"]))  # type: ignore[call-overload]
            finals, complete, leftovers = replay_integrity(replays)
            replays_lost = sum(
                str(entry.get("event")).startswith("replay not saved") for entry in entries
            )
            full = sum("No space left" in str(entry.get("error", "")) for entry in entries)
            result.update(
                attack="diskfull",
                connections=0,
                rss_mb=round(rss),
                cpu=round(cpu, 2),
                results_valid=valid,
                results_lines=lines,
                results_file_ends_whole=whole,
                not_recorded_in_log=len(lost),
                probe_games_accounted=len(probe_rooms & (rooms | lost_rooms)),
                replays=finals,
                replays_complete=complete,
                replays_not_saved_in_log=replays_lost,
                temporary_files_left=leftovers,
                no_space_errors=full,
            )
            result["integrity"] = (
                f"results {valid}/{lines} lines valid{'' if whole else ' (torn end)'}, "
                f"{len(lost)} lost in log, {len(probe_rooms & (rooms | lost_rooms))}/"
                f"{len(probe_rooms)} games accounted; replays {complete}/{finals} complete, "
                f"{replays_lost} not saved (log), {leftovers} tmp"
            )
            return result
        finally:
            subprocess.run(["umount", str(disk)], check=False)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--attacks",
        default="none,prepare,auth,slowread,slowloris,join,garbage,"
        "descriptors256,descriptors,diskfull,"
        "replays,wsfragments,loginbody,loginbrute,sessions,gzipbomb,slowbody,symlink,"
        "leaguegames,leagueteams",
    )
    parser.add_argument("--server-root", type=Path, default=REPO, help="checkout to run")
    parser.add_argument("--warmup", type=float, default=3.0, help="attack seconds before probe")
    parser.add_argument("--probe-seconds", type=float, default=120.0, help="probe time limit")
    parser.add_argument("--probe", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument(
        "--disk-room", type=int, default=224, help="KiB free on the tmpfs at the start (diskfull)"
    )
    parser.add_argument("--hold", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print JSON lines too")
    args = parser.parse_args()
    if args.probe is not None:
        print(json.dumps(trio.run(probe, args.probe, 10, args.probe_seconds, args.hold)))
        return
    print(f"server: {args.server_root}  load average: {os.getloadavg()[0]:.1f}")
    print(
        f"{'attack':<14} {'conns':>5} {'irregular':>9} {'p99 ms':>7} {'probe s':>8} "
        f"{'RSS peak':>9} {'web RSS':>8} {'CPU':>5}  integrity"
    )
    for name in args.attacks.split(","):
        result = trio.run(run_scenario, name, args)
        web_rss = f"{result['web_rss_mb']:>5} MB" if "web_rss_mb" in result else f"{'-':>8}"
        print(
            f"{name:<14} {result['connections']:>5} {result['irregular']:>6}/10 "
            f"{result['p99_ms']:>7} {result['seconds']:>8} {result['rss_mb']:>6} MB "
            f"{web_rss} {result['cpu']:>5}  {result.get('integrity', '-')}",
            flush=True,
        )
        if args.json or result["irregular"]:
            details = {key: value for key, value in result.items() if key != "rooms"}
            print("  " + json.dumps(details), flush=True)


if __name__ == "__main__":
    main()
