"""A league table's set-up and tear-down, as a distributed worker pays them per match: the game
server in this process, the teams' launchers and the bot reaper (`league.run.open_table`) plus
one admin session, opened and closed `--rounds` times in one process (the first round also pays
the imports and the first server start). Between open and close the table stands idle for
`--match-seconds` (not counted), as during a match: what starts in the background (the
reaper's companion process) has started by then, as it has after a real match.

    python -m bench.table [--rounds 10] [--match-seconds 0.5]

Prints each round's open and close times in milliseconds, the median of the rounds after the
first, and the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

from league.config import parse_league
from league.run import admin_session, open_table

REPO = Path(__file__).resolve().parent.parent
FAST_BOT = [sys.executable, str(REPO / "tests" / "bots" / "fast_bot.py")]


def load() -> str:
    """The load average, as `uptime` shows it."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


async def rounds(directory: Path, count: int, match: float) -> list[tuple[float, float]]:
    """(open ms, close ms) of `count` tables one after the other."""
    command = "[" + ", ".join(f'"{part}"' for part in FAST_BOT) + "]"
    teams = "".join(f'[[teams]]\nid = "{team}"\ncommand = {command}\n' for team in ("a", "b"))
    config = parse_league(f'name = "Bench"\n{teams}', base=directory)
    times = []
    for _ in range(count):
        began = time.perf_counter()
        async with (
            open_table(config, mode="process", log_dir=directory / "logs") as table,
            admin_session(table.server),
        ):
            opened = time.perf_counter()
            await trio.sleep(match)
            closing = time.perf_counter()
        times.append(((opened - began) * 1000, (time.perf_counter() - closing) * 1000))
    return times


def main() -> int:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--match-seconds", type=float, default=0.5)
    args = parser.parse_args()
    print(f"load average before: {load()}  ({os.cpu_count()} CPUs)")
    with tempfile.TemporaryDirectory() as scratch:
        times = trio.run(rounds, Path(scratch), max(2, args.rounds), args.match_seconds)
    for number, (opened, closed) in enumerate(times, 1):
        print(f"round {number}: open {opened:.1f} ms, close {closed:.1f} ms")
    later = [opened + closed for opened, closed in times[1:]]
    print(f"after the first: median {statistics.median(later):.1f} ms per table (open + close)")
    print(f"load average after: {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
