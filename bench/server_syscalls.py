"""System calls and user/system CPU per move: the kernel's side of `bench.server`'s figure.

`bench.server` times a server's CPU per move, user and system time together; callgrind
(`bench.server_instructions`) sees only the user-space instructions. This plays a level of
`bench.server`'s games against the server (and the relay, and another checkout's server) and
reports, per move and per target, the user and the system CPU time (from /proc/PID/stat) and,
with `perf` (Linux tracepoints, counted in the kernel: the server is not slowed as under
strace), how many system calls the server made, in total and of each kind that it makes at
least once per hundred moves.

Run:  .venv/bin/python -m bench.server_syscalls [--games 100] [--seconds 5] [--relay]
          [--checkout OLD_CHECKOUT]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import trio

from bench.server import Stats, run_level
from bench.serverprocess import ServerProcess, cpu_times, start_server

# The calls a trio server makes on its per-move path, and some it should not.
SYSCALLS = (
    "recvmsg",
    "recvfrom",
    "read",
    "write",
    "sendto",
    "sendmsg",
    "epoll_ctl",
    "epoll_wait",
    "getsockopt",
    "setsockopt",
    "fcntl",
    "ioctl",
    "futex",
    "clock_gettime",
    "getpid",
    "close",
    "accept4",
    "openat",
    "newfstatat",
    "lseek",
    "mmap",
    "munmap",
    "brk",
)
# Reads counted again when they fail: with EAGAIN, a read that found nothing there.
FAILED = ("recvmsg", "recvfrom")
_COUNT = re.compile(r"^\s*([\d,.]+|<not counted>|<not supported>)\s+(\S+:\S+)", re.M)


def start_perf(pid: int, output: Path) -> subprocess.Popen[bytes] | None:
    """`perf stat` counting the process's system calls, or None without a usable perf."""
    perf = shutil.which("perf")
    if perf is None:
        return None
    events = ["raw_syscalls:sys_enter", *(f"syscalls:sys_enter_{name}" for name in SYSCALLS)]
    command = [perf, "stat", "-p", str(pid), "-o", str(output), "-e", ",".join(events)]
    for name in FAILED:  # the reads that found nothing there (EAGAIN) and the like
        command += ["-e", f"syscalls:sys_exit_{name}", "--filter", "ret < 0"]
    return subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stop_perf(perf: subprocess.Popen[bytes] | None, output: Path) -> dict[str, int]:
    """Stop `perf stat` and read its counts by system call name ("all" for the total)."""
    if perf is None:
        return {}
    perf.send_signal(signal.SIGINT)
    perf.wait(timeout=30)
    counts = {}
    for number, event in _COUNT.findall(output.read_text()):
        if not number[0].isdigit():
            continue
        if event == "raw_syscalls:sys_enter":
            name = "all"
        elif "sys_exit_" in event:
            name = event.rsplit("sys_exit_", 1)[-1] + " failed"
        else:
            name = event.rsplit("sys_enter_", 1)[-1]
        counts[name] = int(number.replace(",", "").replace(".", ""))
    return counts


async def measured(
    target: ServerProcess, games: int, seconds: float, perf_out: Path
) -> dict[str, float]:
    """One level against `target`; its CPU times and system calls per move, counted over
    the same stretch of the window as the moves."""
    ramp = 1.0
    result: dict[str, float] = {}

    async def count(stats: Stats) -> None:
        await trio.sleep(ramp)
        perf = start_perf(target.pid, perf_out)
        await trio.sleep(0.3 if perf is not None else 0.0)  # perf attaches
        user, system = cpu_times(target.pid)
        moves = stats.moves
        await trio.sleep(seconds - 0.5)
        user_end, system_end = cpu_times(target.pid)
        moves = max(1, stats.moves - moves)
        calls = stop_perf(perf, perf_out)
        result["moves"] = moves
        result["user_us"] = (user_end - user) / moves * 1e6
        result["system_us"] = (system_end - system) / moves * 1e6
        for name, number in calls.items():
            result[name] = number / moves

    await run_level(target.port, games, seconds, target.pid, ramp=ramp, watch=count)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=100, help="concurrent games")
    parser.add_argument("--seconds", type=float, default=5.0, help="measured window")
    parser.add_argument("--relay", action="store_true", help="also measure bench.relay")
    parser.add_argument(
        "--checkout",
        type=Path,
        action="append",
        default=[],
        help="also measure this checkout's server (named by its directory; repeatable)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per target, in turns")
    args = parser.parse_args()
    with contextlib.ExitStack() as servers:
        # Removed after the servers stopped (entered first, left last).
        workdir = Path(servers.enter_context(tempfile.TemporaryDirectory(prefix="bench-syscalls-")))
        targets: dict[str, ServerProcess] = {}
        targets["server"] = servers.enter_context(
            start_server(["--log-level", "info"], cwd=workdir, log=workdir / "server.log", cpu=0)
        )
        for checkout in args.checkout:
            label = checkout.resolve().name
            olddir = workdir / label
            olddir.mkdir()
            targets[label] = servers.enter_context(
                start_server(
                    ["--log-level", "info"],
                    cwd=olddir,
                    root=checkout.resolve(),
                    log=olddir / "server.log",
                    cpu=0,
                )
            )
        if args.relay:
            targets["relay"] = servers.enter_context(
                start_server(module="bench.relay", cwd=workdir, cpu=0)
            )
        for target in targets.values():
            trio.run(run_level, target.port, 2, 1.0, target.pid)  # warm-up
        rows: dict[str, list[dict[str, float]]] = {label: [] for label in targets}
        for turn in range(args.repeat):
            order = list(targets) if turn % 2 == 0 else list(reversed(targets))
            for label in order:
                load = os.getloadavg()[0]
                row = trio.run(
                    measured, targets[label], args.games, args.seconds, workdir / "perf.txt"
                )
                row["load"] = load
                rows[label].append(row)
                print(
                    f"{label:>15}: {row['moves']:.0f} moves, user {row['user_us']:.0f} µs/move, "
                    f"system {row['system_us']:.0f} µs/move, "
                    f"syscalls {row.get('all', float('nan')):.2f}/move (load {load:.1f})"
                )
        names = sorted(
            {name for runs in rows.values() for row in runs for name in row}
            - {"moves", "user_us", "system_us", "load", "all"}
        )
        print(f"{'per move':>16}" + "".join(f"{label:>15}" for label in targets))
        for name in ["user_us", "system_us", "all", *names]:
            values = []
            for label in targets:
                runs = rows[label]
                values.append(sum(row.get(name, 0.0) for row in runs) / len(runs))
            if name in SYSCALLS and max(values) < 0.01:
                continue
            print(f"{name:>16}" + "".join(f"{value:>15.2f}" for value in values))


if __name__ == "__main__":
    main()
