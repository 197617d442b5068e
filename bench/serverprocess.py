"""The one way the benchmarks start `python -m cli.server` in a process of its own: a free
loopback port, the server listening on it, stopped gracefully at the end; plus what they all
measure on it (its CPU time, percentiles of the figures).

    with start_server(["--log-level", "warning"], cwd=workdir) as server:
        ...  # clients connect to 127.0.0.1:server.port; cpu_seconds(server.pid)
"""

from __future__ import annotations

import contextlib
import math
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PASSWORD = "bench"  # the administrator password of every benchmark's server
STOP_SECONDS = 30  # a graceful stop (and cProfile writing its file) takes at most this long
# The CPUs this process may use when it starts: the first pinned server moves this process off
# its CPU, and every later server (the relay, an old checkout) must be pinned to that CPU too,
# not left to share the clients' CPUs.
_CPUS = sorted(os.sched_getaffinity(0))


@dataclass(frozen=True)
class ServerProcess:
    """A running `python -m cli.server` and where it listens; as a context manager, stopped when
    the block ends (also on an error)."""

    process: subprocess.Popen[bytes]
    port: int
    web_port: int | None  # the viewer's HTTP port, with `web=True`
    command: list[str]  # as started (for the benchmark's report)
    pinned: bool  # the server runs alone on one CPU, this process on the others

    @property
    def pid(self) -> int:
        return self.process.pid

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        stop_server(self)


def start_server(
    options: Sequence[str] = (),
    *,
    cwd: Path,
    root: Path = REPO,
    log: Path | None = None,
    profile: Path | None = None,
    cpu: int | None = None,
    descriptors: int | None = None,
    web: bool = False,
    module: str = "cli.server",
) -> ServerProcess:
    """`python -m cli.server --port P --password bench OPTIONS` from the checkout `root`, started
    in `cwd` and listening when this returns (`module`: another server to start the same way,
    e.g. `bench.relay`).

    Its stderr (the log) goes to `log` or is thrown away. `profile`: run it under cProfile into
    that file. `cpu`: pin it to that CPU and this process to the others (when there are
    several). `descriptors`: its RLIMIT_NOFILE, soft = hard. `web`: also serve the viewer on a
    free port (`web_port`)."""
    port = free_port()
    web_port = free_port() if web else None
    profiler = ["-m", "cProfile", "-o", str(profile.resolve())] if profile else []
    command = [sys.executable, *profiler, "-m", module, "--port", str(port)]
    command += ["--password", PASSWORD, *(["--web-port", str(web_port)] if web_port else [])]
    command += options
    cpus = _CPUS
    alone = {cpu} if cpu is not None and len(cpus) > 1 else None
    pinned = alone is not None

    def in_child() -> None:  # after fork, before exec: limits hold from the server's first line
        if alone is not None:
            os.sched_setaffinity(0, alone)
        if descriptors is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (descriptors, descriptors))

    with contextlib.ExitStack() as files:
        stderr = files.enter_context(log.open("wb")) if log else subprocess.DEVNULL
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=dict(os.environ, PYTHONPATH=str(root)),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            preexec_fn=in_child if pinned or descriptors is not None else None,
        )
    server = ServerProcess(process, port, web_port, command, pinned)
    try:
        if alone is not None:
            os.sched_setaffinity(0, set(cpus) - alone)
        wait_until_listening(port, process)
        if web_port is not None:
            wait_until_listening(web_port, process)
    except BaseException:
        stop_server(server)
        raise
    return server


def stop_server(server: ServerProcess) -> None:
    """SIGTERM (the server shuts down gracefully, a profile is written), SIGKILL if that takes
    longer than STOP_SECONDS."""
    process = server.process
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def free_port() -> int:
    """A loopback port free right now (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_until_listening(
    port: int, process: subprocess.Popen[bytes], seconds: float = 30.0
) -> None:
    """Block until something accepts on 127.0.0.1:`port`; exit if `process` ended first or
    nothing listens within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited with status {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("server did not start listening")


def cpu_times(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc)."""
    return sum(cpu_times(pid))


def median_interval(samples: list[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """A distribution-free interval for the median of the runs' population: the order
    statistics (k-th smallest, k-th largest) with the smallest k whose coverage, from the
    binomial distribution of how many runs fall below the median, is at least `confidence`;
    returned with that coverage. Runs on a shared machine are not normal (a slow minute makes a
    long tail), so no t-interval. Too few runs for `confidence`: the range, with its coverage.

    >>> median_interval([2.0, 1.0, 3.0, 5.0, 4.0, 6.0, 8.0, 7.0, 10.0, 9.0])
    (2.0, 9.0, 0.978515625)
    >>> median_interval([1.0, 2.0, 3.0])
    (1.0, 3.0, 0.75)
    """
    ordered = sorted(samples)
    n = len(ordered)
    if n == 0:
        return math.nan, math.nan, 0.0
    # P(fewer than k runs below the median) = sum of C(n, i) / 2^n for i < k.
    below = [math.comb(n, i) / 2**n for i in range(n + 1)]
    k, tail = 1, below[0]  # k = 1: the range, coverage 1 - 2 * P(none below)
    while k < n // 2 and 1 - 2 * (tail + below[k]) >= confidence:
        tail += below[k]
        k += 1
    return ordered[k - 1], ordered[n - k], 1 - 2 * tail


def percentile(samples: list[float], fraction: float) -> float:
    """The `fraction` percentile of `samples` (nearest rank; nan without samples)."""
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]
