"""piranhas-match throughput: games per minute for the same two bots at `--concurrency 1` and
`--concurrency K` in one run, where the CPU time the run left idle went, and the runner's own
CPU per game.

    python -m bench.match [--k 8] [--games1 2] [--games-k 16] [--bot COMMAND]
                          [--checkout DIR] [--repeat N]

The default bot is the socha 4.3.9 random bot of the tests (tests/bots/random_bot.py; socha
idles in a 0.1 s poll, so games at once overlap well). Each setting is one real
`python -m cli.match` run on its in-process server with `--ndjson`; the figures come from
its events and from sampling the CPU of its process tree (`/proc`, every 0.25 s around the
ramp and the tail, every 1 s between them):

- games/min: finished games over the run's wall time (interpreter start to exit);
- share: the CPU the run used (runner, its server, the bots) over what the CPUs offered in
  its wall time; the games a minute the CPUs allow at the run's CPU per game times this
  share is its games/min. The wall time is cut into the ramp (interpreter start until all
  K slots have launched their first bots), the steady state (all K slots playing: it ends
  when the first slot finds no game left), the tail (the last games ending one by one) and
  the exit (last game to the process's exit); each part's share and the core-seconds it
  left are printed beside the whole run's, and how much of what it left the CPUs idled,
  the kernel's interrupt work took (/proc/stat's irq and softirq: with tick accounting a tick
  that lands in the loopback's softirq is charged to no process, so some of the run's own
  network work is counted here; on an otherwise idle machine nearly all of it is the run's),
  the hypervisor took (steal), this bench's own sampling took (printed apart:
  the measuring is not the runner's cost) and other jobs took: on a shared machine the share
  shows the other jobs (on an idle one: the host's kernel threads and agents, 0.5-1 %);
- timeouts: games lost on time (the runner's fault if the bots are fast: a starved machine);
- overhead per game: the phases the runner owns in each game's slot (prepare and observe the
  room, launch the processes, reap them afterwards), mean and max: the slot plays nothing
  then. The bots' own start-up and exit (interpreter, imports) are shown apart, as they are
  the bot's cost, not the runner's.

At K = 1 the share shows the bots' idling: a socha bot waits in its 0.1 s poll, so one game
at a time leaves most of the CPUs idle.

The checkouts' modules are compiled before the runs (see `compile_checkout`). The load
average before and after is printed with the figures: on a shared machine they are
only comparable with the load they were measured under.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import select
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from bisect import bisect_left
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SOCHA_BOT = shlex.join([sys.executable, str(REPO / "tests" / "bots" / "random_bot.py")])
RUNNER_PHASES = ("prepare", "launch", "cleanup")
BOT_PHASES = ("startup", "exit")
PARTS = ("ramp", "steady", "tail", "exit")
# (time, runner's own CPU, its tree's CPU, machine idle, interrupts, steal, this bench's own
# CPU), seconds.
Sample = tuple[float, float, float, float, float, float, float]
# Seconds between samples. A sample reads the runner's threads' child lists and every bot's
# stat: about 1.7 ms of CPU with 18 threads and 16 bots, so every 0.1 s the bench took 1 % of
# two CPUs from the run it measures (seen as "other jobs"), every 0.25 s 0.4 %. The samples
# only cut the run into parts (the whole run's CPU comes from getrusage after the exit), and
# in the steady state the CPU grows evenly: so the bench samples every SAMPLE_EVERY around
# the ramp and the tail, where the parts' bounds fall, and every SAMPLE_STEADY between
# them (0.1 % of the run). What it takes is printed apart.
SAMPLE_EVERY = 0.25
SAMPLE_STEADY = 1.0
TICK = os.sysconf("SC_CLK_TCK")


def wait_for_exit(process: subprocess.Popen[bytes], seconds: float) -> bool:
    """Wait up to `seconds` for `process` to end; True if it has. Returns at its exit, not at
    the end of the wait: the run's wall time ends when the runner does, and a sleep between
    samples counted up to SAMPLE_EVERY of this bench's own polling as the run's idle exit
    (0.125 s on average: 0.35 % of a 35-s run's share)."""
    try:
        descriptor = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # no pidfd (not Linux >= 5.3): Popen's own polling
        try:
            process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        select.select([descriptor], [], [], seconds)  # readable once the process has ended
    finally:
        os.close(descriptor)
    return process.poll() is not None


def run(bot: str, games: int, concurrency: int, seed: int, checkout: Path = REPO) -> dict[str, Any]:
    """One runner run; its figures."""
    with tempfile.TemporaryDirectory(prefix="bench-match-") as directory:
        stream = Path(directory) / "events.jsonl"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(checkout), env.get("PYTHONPATH")]))
        argv = [
            sys.executable,
            *("-m", "cli.match", "--player1", bot, "--player2", bot),
            *("--games", str(games), "--concurrency", str(concurrency), "--force-concurrency"),
            *("--seed", str(seed), "--ndjson", str(stream), "--no-reproducers"),
        ]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.time()
        # (time, the runner's own CPU, the CPU of its whole tree, the machine's idle,
        # interrupt and stolen CPU): the runner's process (server, clients, display) and,
        # reaped or live, its bots and their reaper; the times of all CPUs (/proc/stat) say
        # whether what the run did not use was left idle, went to interrupts or the
        # hypervisor, or was taken by other jobs.
        bench = os.getpid()  # its own CPU: the sampling's
        samples: list[Sample] = [(started, 0.0, 0.0, *machine_times(), own_cpu_seconds(bench))]
        progress = Progress(stream, games, concurrency)
        with tempfile.TemporaryFile() as output:
            process = subprocess.Popen(argv, cwd=directory, env=env, stdout=output, stderr=output)
            while process.poll() is None:
                sample = tree_cpu_seconds(process.pid)
                if sample is not None:
                    samples.append(
                        (time.time(), *sample[:2], *machine_times(), own_cpu_seconds(bench))
                    )
                    progress.saw_children(sample[2])
                if wait_for_exit(process, progress.interval()):
                    break
            ended = time.time()
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if process.returncode != 0:
                output.seek(0)
                raise SystemExit(
                    f"the run failed ({process.returncode}):\n{output.read().decode()}"
                )
        total = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        own = max(sample[1] for sample in samples)
        samples.append((ended, own, total, *machine_times(), own_cpu_seconds(bench)))
        events = [json.loads(line) for line in stream.read_text().splitlines()]
    ends = [event for event in events if event["event"] == "game_end"]
    final = events[-1]
    runner_ms = [sum(end["phases_ms"][phase] for phase in RUNNER_PHASES) for end in ends]
    bot_ms = [sum(end["phases_ms"][phase] for phase in BOT_PHASES) for end in ends]
    game_ms = [end["phases_ms"]["game"] for end in ends]
    cpus = len(os.sched_getaffinity(0))
    wall = ended - started
    slots = game_slots(ends)
    parts = split_run(slots, concurrency, started, ended, samples, cpus)
    return {
        "label": "this checkout" if checkout == REPO else str(checkout),
        "cpu_per_game_s": total / len(ends),
        "runner_cpu_per_game_ms": own / len(ends) * 1000,
        # Games a minute the CPUs allow at this CPU per game, and how much of it the run got.
        "allowed_per_min": cpus * 60 / (total / len(ends)),
        "utilisation": total / (cpus * wall),
        "parts": parts,
        # The time line, for --json: (launched, ended) per game and the CPU samples, in
        # seconds from the run's start.
        "slots": [(launched - started, end - started) for launched, end in slots],
        "samples": [(at - started, *rest) for at, *rest in samples],
        "concurrency": concurrency,
        "games": len(ends),
        "wall_s": wall,
        "games_per_min": len(ends) / wall * 60,
        "timeouts": sum(bot["timeouts"] for bot in final["times"]["bots"]),
        "irregular": sum(not end["regular"] for end in ends),
        "overhead_mean_ms": statistics.fmean(runner_ms),
        "overhead_max_ms": max(runner_ms),
        "bot_startup_exit_mean_ms": statistics.fmean(bot_ms),
        "game_mean_s": statistics.fmean(game_ms) / 1000,
    }


def game_slots(ends: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """(bots launched, slot ended) of every game, in seconds since the epoch: a game's slot
    ends when its event is written and began the sum of its phases earlier; its bots start
    after its `prepare` and `launch`."""
    slots = []
    for end in ends:
        at = datetime.fromisoformat(end["time"]).timestamp()
        phases = end["phases_ms"]
        began = at - sum(phases.values()) / 1000
        slots.append((began + (phases["prepare"] + phases["launch"]) / 1000, at))
    return slots


def split_run(
    slots: list[tuple[float, float]],
    concurrency: int,
    started: float,
    ended: float,
    samples: list[Sample],
    cpus: int,
) -> dict[str, dict[str, float]]:
    """The run cut into ramp, steady state, tail and exit (see the module), each part's
    duration, CPU share and idle core-seconds.

    The steady state begins when the K-th slot has launched its bots and ends at the
    (N-K+1)-th game end: each of the first N-K ends hands its slot the next game, that one
    finds none left."""
    launched = sorted(slot[0] for slot in slots)
    finished = sorted(slot[1] for slot in slots)
    k = min(concurrency, len(slots))
    full = launched[k - 1]
    tail = max(full, finished[len(slots) - k])
    bounds = [started, full, tail, max(tail, finished[-1]), ended]
    parts = {}
    for name, start, stop in zip(PARTS, bounds, bounds[1:], strict=False):
        cpu = value_at(samples, 2, stop) - value_at(samples, 2, start)
        idle = value_at(samples, 3, stop) - value_at(samples, 3, start)
        interrupts = value_at(samples, 4, stop) - value_at(samples, 4, start)
        steal = value_at(samples, 5, stop) - value_at(samples, 5, start)
        bench = value_at(samples, 6, stop) - value_at(samples, 6, start)
        offered = cpus * (stop - start)
        parts[name] = {
            "seconds": stop - start,
            "share": cpu / offered if offered > 0 else float("nan"),
            "idle_core_s": offered - cpu,
            # What the run did not use: left idle, or taken by other jobs.
            "machine_idle": idle / offered if offered > 0 else float("nan"),
            "interrupts": interrupts / offered if offered > 0 else float("nan"),
            "steal": steal / offered if offered > 0 else float("nan"),
            "bench": bench / offered if offered > 0 else float("nan"),
        }
    return parts


def value_at(samples: list[Sample], column: int, at: float) -> float:
    """Column `column` of the samples at time `at`, interpolated between them."""
    times = [sample[0] for sample in samples]
    index = bisect_left(times, at)
    if index == 0:
        return samples[0][column]
    if index == len(samples):
        return samples[-1][column]
    before, after = samples[index - 1], samples[index]
    if after[0] <= before[0]:
        return after[column]
    fraction = (at - before[0]) / (after[0] - before[0])
    return before[column] + (after[column] - before[column]) * fraction


def machine_times() -> tuple[float, float, float]:
    """Seconds all CPUs of the machine have been idle (idle + iowait of /proc/stat), in
    interrupts (irq + softirq) and stolen by the hypervisor (steal)."""
    with open("/proc/stat") as file:
        fields = file.readline().split()
    return (
        (int(fields[4]) + int(fields[5])) / TICK,
        (int(fields[6]) + int(fields[7])) / TICK,
        int(fields[8]) / TICK,
    )


def _stat_times(pid: int) -> tuple[int, int] | None:
    """(utime + stime, cutime + cstime) of `pid` in clock ticks (Linux /proc); None once it
    is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


def own_cpu_seconds(pid: int) -> float:
    """User + system CPU of the process itself, without its children (Linux /proc); 0 once
    it is gone (bench.league's measure of its tool)."""
    times = _stat_times(pid)
    return 0.0 if times is None else times[0] / TICK


def tree_cpu_seconds(pid: int) -> tuple[float, float, int] | None:
    """(the process's own CPU, the CPU of it and all its children, reaped or alive, in
    seconds; how many children are alive); None once it is gone. A child reaped while we read
    would be counted twice or not at all: then the reading is repeated."""
    for _attempt in range(5):
        first = _stat_times(pid)
        if first is None:
            return None
        children: list[int] = []
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as file:
                    children += [int(child) for child in file.read().split()]
        except OSError:
            pass  # a thread that ended: a child of it is in the next sample
        alive = 0
        living = 0
        for child in children:
            times = _stat_times(child)
            if times is not None:
                alive += times[0] + times[1]
                living += 1
        second = _stat_times(pid)
        if second is None:
            return None
        if second[1] == first[1]:
            own, reaped = second
            return own / TICK, (own + reaped + alive) / TICK, living
    return None


class Progress:
    """Where a run is, for the sampling's pace: in the ramp until the runner has had 2K
    children alive at once (its bot reaper among them: all K slots' bots, or all but one), in
    the tail once N - K + 1 games have ended (the NDJSON stream's game_end lines, read as
    they come)."""

    def __init__(self, stream: Path, games: int, concurrency: int) -> None:
        self.stream = stream
        self.ramp_over = False
        self.children_at_full = 2 * min(concurrency, games)
        self.tail_after = games - min(concurrency, games) + 1
        self.ended = 0
        self._read = 0
        self._partial = b""

    def saw_children(self, alive: int) -> None:
        """A sample saw `alive` children of the runner."""
        self.ramp_over = self.ramp_over or alive >= self.children_at_full

    def interval(self) -> float:
        """Seconds to the next sample: SAMPLE_STEADY between the ramp and the tail,
        SAMPLE_EVERY around them."""
        if not self.ramp_over or self._games_ended() >= self.tail_after:
            return SAMPLE_EVERY
        return SAMPLE_STEADY

    def _games_ended(self) -> int:
        try:
            with self.stream.open("rb") as file:
                file.seek(self._read)
                chunk = file.read()
        except OSError:
            return self.ended  # not written yet
        self._read += len(chunk)
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        self.ended += sum(json.loads(line).get("event") == "game_end" for line in lines if line)
        return self.ended


def compile_checkout(checkout: Path) -> None:
    """Compile the checkout's modules before its runs, as a user's machine has them from the
    first run on (Python writes them then). Where nobody may write them (PYTHONDONTWRITEBYTECODE,
    set in this project's sandbox), every run compiled its start-up anew: 0.1 s more of the
    ramp, on one core while the other idled."""
    for package in sorted(checkout.iterdir()):
        if (package / "__init__.py").is_file():
            compileall.compile_dir(package, quiet=1)


def summary_lines(result: dict[str, Any]) -> list[str]:
    """Where the run's time and CPU went."""
    share = result["games_per_min"] / result["allowed_per_min"]
    lines = [
        f"K={result['concurrency']} ({result['label']}): {result['cpu_per_game_s']:.2f} s "
        f"of CPU per game in all (runner, its server, bots), of which the runner's own "
        f"process {result['runner_cpu_per_game_ms']:.0f} ms; the CPUs allow "
        f"{result['allowed_per_min']:.1f} games/min at that, the run got "
        f"{result['games_per_min']:.1f} ({100 * share:.1f} %: the CPU share the run used)"
    ]
    for name, part in result["parts"].items():
        taken = part["machine_idle"] + part["interrupts"] + part["steal"] + part["bench"]
        others = 1 - part["share"] - taken
        lines.append(
            f"    {name:<6} {part['seconds']:5.1f} s: the run {100 * part['share']:5.1f} %, "
            f"left {part['idle_core_s']:5.2f} core-s, of which the CPUs idled "
            f"{100 * part['machine_idle']:5.1f} %, interrupts took "
            f"{100 * part['interrupts']:4.1f} %, the hypervisor {100 * part['steal']:4.1f} %, "
            f"this bench's sampling {100 * part['bench']:4.1f} % and other jobs "
            f"{100 * others:5.1f} %"
        )
    return lines


def main() -> int:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=8, help="the higher concurrency (default 8)")
    parser.add_argument(
        "--games1", type=int, default=2, help="games at concurrency 1 (0: no such run)"
    )
    parser.add_argument("--games-k", type=int, default=16, help="games at concurrency K")
    parser.add_argument("--bot", default=SOCHA_BOT, help="bot command (both players)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--checkout",
        type=Path,
        action="append",
        default=[],
        help="also run piranhas-match of this checkout (e.g. a worktree of an older commit), "
        "alternating with this one's at concurrency K; repeatable",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds of the concurrency-K runs (default 1)"
    )
    parser.add_argument(
        "--json", type=Path, default=None, help="also write every run's figures and time line here"
    )
    options = parser.parse_args()
    print(f"bot: {options.bot}")
    for checkout in (REPO, *options.checkout):
        compile_checkout(checkout)
    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()}", flush=True)
    results = []
    if options.games1 > 0:
        results.append(run(options.bot, options.games1, 1, options.seed))
    for _round in range(options.repeat):
        for checkout in options.checkout:
            results.append(run(options.bot, options.games_k, options.k, options.seed, checkout))
        results.append(run(options.bot, options.games_k, options.k, options.seed))
        print(f"load average: {os.getloadavg()}", flush=True)
    print(f"load average after: {os.getloadavg()}")
    if options.json is not None:
        options.json.write_text(json.dumps(results, indent=1))
    header = (
        f"{'K':>3} {'games':>5} {'wall s':>7} {'games/min':>9} {'timeouts':>8} "
        f"{'overhead ms (mean/max)':>22} {'bot start+exit ms':>17} {'game s':>7}"
    )
    print(header)
    for result in results:
        overhead = f"{result['overhead_mean_ms']:.0f}/{result['overhead_max_ms']:.0f}"
        print(
            f"{result['concurrency']:>3} {result['games']:>5} {result['wall_s']:>7.1f} "
            f"{result['games_per_min']:>9.2f} {result['timeouts']:>8} {overhead:>22} "
            f"{result['bot_startup_exit_mean_ms']:>17.0f} {result['game_mean_s']:>7.2f}"
        )
    for result in results:
        print("\n".join(summary_lines(result)))
    if len(results) > 1 and options.repeat * (1 + len(options.checkout)) > 1:
        print("over the rounds (mean, min-max):")
        for label in dict.fromkeys(r["label"] for r in results if r["concurrency"] == options.k):
            mine = [r for r in results if r["label"] == label and r["concurrency"] == options.k]
            print(f"  {label}: " + "; ".join(spread(mine, key) for key in SPREAD_KEYS))
    if options.games1 > 0:
        k_runs = [
            r for r in results if r["concurrency"] == options.k and r["label"] == "this checkout"
        ]
        speedup = k_runs[0]["games_per_min"] / results[0]["games_per_min"]
        print(f"K={options.k} plays {speedup:.1f}x the games per minute of K=1")
    return 0


SPREAD_KEYS = ("utilisation", "steady", "games_per_min", "runner_cpu_per_game_ms")


def spread(results: list[dict[str, Any]], key: str) -> str:
    """`key`'s mean and range over repeated runs."""
    if key == "steady":
        values = [100 * r["parts"]["steady"]["share"] for r in results]
        name, unit = "steady share", " %"
    elif key == "utilisation":
        values = [100 * r["utilisation"] for r in results]
        name, unit = "whole-run share", " %"
    elif key == "games_per_min":
        values = [r[key] for r in results]
        name, unit = "games/min", ""
    else:
        values = [r[key] for r in results]
        name, unit = "runner CPU per game", " ms"
    return f"{name} {statistics.fmean(values):.1f}{unit} ({min(values):.1f}-{max(values):.1f})"


if __name__ == "__main__":
    raise SystemExit(main())
