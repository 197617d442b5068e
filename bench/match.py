"""piranhas-match throughput: games per minute for the same two bots at `--concurrency 1` and
`--concurrency K` in one run, and the runner's own overhead per game.

    python -m bench.match [--k 8] [--games1 2] [--games-k 16] [--bot COMMAND]

The default bot is the socha 4.3.9 random bot of the tests (tests/bots/random_bot.py; socha
idles in a 0.1 s poll, so games at once overlap well). Each setting is one real
`python -m cli.match` run on its in-process server with `--ndjson`; the figures come from
its events:

- games/min: finished games over the run's wall time (interpreter start to exit);
- timeouts: games lost on time (the runner's fault if the bots are fast: a starved machine);
- overhead per game: the phases the runner owns in each game's slot (prepare and observe the
  room, launch the processes, reap them afterwards), mean and max; the bots' own start-up
  and exit (interpreter, imports) are shown apart, as they are the bot's cost, not the
  runner's.

The load average before and after is printed with the figures: on a shared machine they are
only comparable with the load they were measured under.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SOCHA_BOT = shlex.join([sys.executable, str(REPO / "tests" / "bots" / "random_bot.py")])
RUNNER_PHASES = ("prepare", "launch", "cleanup")
BOT_PHASES = ("startup", "exit")


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
        started = time.monotonic()
        with tempfile.TemporaryFile() as output:
            process = subprocess.Popen(argv, cwd=directory, env=env, stdout=output, stderr=output)
            own = 0.0  # the runner's own CPU (its process: server, clients, display), not its bots'
            while process.poll() is None:
                own = max(own, own_cpu_seconds(process.pid))
                time.sleep(0.05)
            wall = time.monotonic() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if process.returncode != 0:
                output.seek(0)
                raise SystemExit(
                    f"the run failed ({process.returncode}):\n{output.read().decode()}"
                )
        total = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        events = [json.loads(line) for line in stream.read_text().splitlines()]
    ends = [event for event in events if event["event"] == "game_end"]
    final = events[-1]
    runner_ms = [sum(end["phases_ms"][phase] for phase in RUNNER_PHASES) for end in ends]
    bot_ms = [sum(end["phases_ms"][phase] for phase in BOT_PHASES) for end in ends]
    game_ms = [end["phases_ms"]["game"] for end in ends]
    cpus = len(os.sched_getaffinity(0))
    return {
        "label": "this checkout" if checkout == REPO else str(checkout),
        "cpu_per_game_s": total / len(ends),
        "runner_cpu_per_game_ms": own / len(ends) * 1000,
        # Games a minute the CPUs allow at this CPU per game, and how much of it the run got.
        "allowed_per_min": cpus * 60 / (total / len(ends)),
        "utilisation": total / (cpus * wall),
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


def own_cpu_seconds(pid: int) -> float:
    """User + system CPU of the process itself, without its children (Linux /proc); 0 once
    it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=8, help="the higher concurrency (default 8)")
    parser.add_argument("--games1", type=int, default=2, help="games at concurrency 1")
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
    options = parser.parse_args()
    print(f"bot: {options.bot}")
    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()}")
    results = [
        run(options.bot, options.games1, 1, options.seed),
        run(options.bot, options.games_k, options.k, options.seed),
    ]
    for checkout in options.checkout:
        results.append(run(options.bot, options.games_k, options.k, options.seed, checkout))
        results.append(run(options.bot, options.games_k, options.k, options.seed))
    print(f"load average after: {os.getloadavg()}")
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
        share = result["games_per_min"] / result["allowed_per_min"]
        print(
            f"K={result['concurrency']} ({result['label']}): {result['cpu_per_game_s']:.2f} s "
            f"of CPU per game in "
            f"all (runner, its server, bots), of which the runner's own process "
            f"{result['runner_cpu_per_game_ms']:.0f} ms; the CPUs allow "
            f"{result['allowed_per_min']:.1f} games/min at that, the run got "
            f"{result['games_per_min']:.1f} ({100 * share:.0f} %: the CPU share the run used)"
        )
    speedup = results[1]["games_per_min"] / results[0]["games_per_min"]
    print(f"K={options.k} plays {speedup:.1f}x the games per minute of K=1")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
