"""League throughput: matches per hour of `piranhas-league run` with built-in bots in process
mode, and the per-game overhead the league adds on top of the match runner (the same number of
games between the same two bots through `piranhas-match` and through a two-team league).

    python -m bench.league [--teams 4] [--games 6] [--concurrency 2] [--bot greedy]

Built-in bots are `builtin:NAME` (piranhas-bot); where this installation lacks it, the fast
test bot (tests/bots/fast_bot.py) stands in and the output says so. Prints the command lines,
the wall times and the load average before and after.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
FAST_BOT = [sys.executable, str(REPO / "tests" / "bots" / "fast_bot.py")]


def bot_command(bot: str) -> list[str]:
    """The team command of the benchmark's bot."""
    if importlib.util.find_spec("cli.bot") is not None:
        return [f"builtin:{bot}"]
    return FAST_BOT


def write_league(directory: Path, teams: int, games: int, concurrency: int, bot: str) -> Path:
    """A league of `teams` copies of the bot."""
    lines = [
        'name = "Bench"',
        f"games_per_match = {games}",
        f"concurrency = {concurrency}",
        "seed = 1",
    ]
    for index in range(teams):
        command = bot_command(bot)
        lines += ["[[teams]]", f'id = "t{index}"', f"command = {json.dumps(command)}"]
    path = directory / "bench.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def timed(command: list[str], cwd: Path) -> float:
    """Run `command`, fail loudly on a non-zero status; the wall time in seconds."""
    print(f"$ {shlex.join(command)}", flush=True)
    began = time.perf_counter()
    finished = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - began
    if finished.returncode != 0:
        sys.exit(f"failed ({finished.returncode}):\n{finished.stdout}\n{finished.stderr}")
    return elapsed


def load() -> str:
    """The load average, as `uptime` shows it."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> int:
    """Run both measurements and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teams", type=int, default=4)
    parser.add_argument("--games", type=int, default=6, help="games per match (even)")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--bot", default="greedy", help="the built-in bot every team plays")
    args = parser.parse_args()
    command = bot_command(args.bot)
    if command == FAST_BOT:
        print("note: piranhas-bot (cli.bot) is missing: the fast test bot plays instead")
    print(f"load average before: {load()}  ({os.cpu_count()} CPUs)")
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)

        league = write_league(directory, args.teams, args.games, args.concurrency, args.bot)
        matches = args.teams * (args.teams - 1) // 2
        seconds = timed([str(BIN / "piranhas-league"), "run", str(league)], directory)
        games = matches * args.games
        print(
            f"league: {args.teams} teams, {matches} matches of {args.games} games, "
            f"concurrency {args.concurrency}: {seconds:.1f} s, "
            f"{matches * 3600 / seconds:.0f} matches/h, {games * 3600 / seconds:.0f} games/h"
        )

        # The same games between two bots: once through piranhas-match, once as a league.
        overhead_games = 2 * args.games
        pair = directory / "pair"
        pair.mkdir()
        two = write_league(pair, 2, overhead_games, args.concurrency, args.bot)
        player = shlex.join(command)
        match_seconds = timed(
            [
                str(BIN / "piranhas-match"),
                "--player1",
                player,
                "--player2",
                player,
                "--games",
                str(overhead_games),
                "--seed",
                "1",
                "--concurrency",
                str(args.concurrency),
                "--force-concurrency",
                "--log-dir",
                str(pair / "match-logs"),
            ],
            pair,
        )
        league_seconds = timed([str(BIN / "piranhas-league"), "run", str(two)], pair)
        per_game = (league_seconds - match_seconds) / overhead_games
        print(
            f"{overhead_games} games, concurrency {args.concurrency}: piranhas-match "
            f"{match_seconds:.2f} s, piranhas-league {league_seconds:.2f} s; the league adds "
            f"{per_game * 1000:+.0f} ms per game (wall time / games, start-up included)"
        )
    print(f"load average after: {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
