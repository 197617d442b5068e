"""A distributed worker's per-match set-up (issue 21: ≤ 100 ms after its first match).

Two measurements in one run, on a private PostgreSQL (and Redis) from the Debian packages
(the distributed tests' starters, tests/distributed/servers.py):

1. In this process, match after match of one league, alternating between the two ways a
   worker can play a match: on a fresh table per match (`fleet.match.play_match` without a
   table: server start, launchers, image checks, admin login every match, as workers did
   before) and on the kept table (`fleet.match.TableHost`, what `piranhas-league worker`
   does). Printed: each way's wall time per match (mean ± 95 % CI) and the kept table's
   set-up per match (from the match's start until it can play; the first one opens the
   table).
2. A real `piranhas-league worker` process fed through Redis: the set-up of every match it
   played, from its own stderr lines (`match N: attempt 1 ended: done (set-up X ms)`: from
   the message to the first game, the run's start in the store included).

    python -m bench.worker_setup [--teams 6] [--games 2]

The bots are the seeded example bots (deploy/bots/seeded_bot.py, no delay). The load average
before and after is printed.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import redis
import trio

from bench.league_distributed import league_file, start_worker, wait_ready
from fleet import coordinator
from fleet.match import FleetStore, TableHost, play_match, worker_config
from fleet.runs import MatchRun
from league.config import LeagueConfig, load_league
from league.run import admin_session, default_mode, open_table
from league.schedule import Match
from tests.distributed.servers import PostgresServer, RedisServer

WAYS = ("fresh", "kept")
SETUP = re.compile(r"match (\d+): attempt \d+ ended: \w+ \(set-up ([\d.]+) ms\)")


def load() -> str:
    """The load average, as `uptime` shows it."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def mean_ci(values: list[float]) -> str:
    """`mean ± half-width of the 95 % confidence interval` (normal approximation)."""
    if len(values) < 2:
        return f"{values[0]:.1f}" if values else "-"
    half = 1.96 * statistics.stdev(values) / len(values) ** 0.5
    return f"{statistics.fmean(values):.1f} ± {half:.1f}"


def in_process(folder: Path, teams: int, games: int, postgres: PostgresServer) -> None:
    """Measurement 1: every match played twice, on a fresh table and on the kept table (each
    way in a store of its own, the order alternating): seeded bots play the same games both
    times, so the difference per match is what the fresh table costs."""
    folder.mkdir(parents=True)
    config = load_league(league_file(folder, teams, games, name="inprocess"))
    stores = {way: postgres.create_database(f"bench_{uuid.uuid4().hex[:10]}") for way in WAYS}
    schedules = [coordinator.initialize(config, dsn) for dsn in stores.values()]
    matches = schedules[0]
    dbs = {way: FleetStore(dsn) for way, dsn in stores.items()}
    host = TableHost(config, "kept", folder / "kept-logs")
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    fresh_ms: list[float] = []
    try:
        for index, match in enumerate(matches):
            for way in WAYS if index % 2 == 0 else WAYS[::-1]:
                db = dbs[way]
                run = db.call_sync(db.runs.start, match.id, way)
                assert run is not None
                began = time.perf_counter()
                if way == "kept":
                    host.play_match(match, run, db, since=began)
                else:
                    fresh_ms.append(trio.run(fresh_table, config, match, run, db, folder))
                times[way].append((time.perf_counter() - began) * 1000)
    finally:
        host.close()
        for db in dbs.values():
            db.close()
    print(f"in this process, {len(matches)} matches of {games} games, each played both ways:")
    labels = ("fresh table per match (before)", "kept table (TableHost)")
    for way, label in zip(WAYS, labels, strict=True):
        print(f"  {label + ':':32} {mean_ci(times[way])} ms per match")
    saved = [fresh - kept for fresh, kept in zip(times["fresh"], times["kept"], strict=True)]
    print(f"  the fresh table costs {mean_ci(saved)} ms per match more (paired)")
    first, *later = host.setup_ms
    print(
        f"  set-up per match, fresh table (open + close, as `play_match` did per match): "
        f"median {statistics.median(fresh_ms):.1f} ms, max {max(fresh_ms):.1f} ms"
    )
    print(
        f"  set-up per match, kept table: first match {first:.1f} ms (opens it), then median "
        f"{statistics.median(later):.1f} ms, max {max(later):.1f} ms; tables opened: "
        f"{host.opened}"
    )


async def fresh_table(
    config: LeagueConfig, match: Match, run: MatchRun, db: FleetStore, folder: Path
) -> float:
    """The match on a table of its own, as a worker played every match before TableHost
    (`fleet.match._play`); the ms its table took to open and to close."""
    began = time.perf_counter()
    async with (
        open_table(
            worker_config(config, run.worker), mode=default_mode(config), log_dir=folder / "fresh"
        ) as table,
        admin_session(table.server) as admin,
    ):
        opened = time.perf_counter()
        await play_match(config, match, run, db, folder / "fresh", table=(table, admin))
        closing = time.perf_counter()
    return (opened - began + time.perf_counter() - closing) * 1000


def worker_process(
    folder: Path, teams: int, games: int, postgres: PostgresServer, redis_server: RedisServer
) -> None:
    """Measurement 2: a real worker process through Redis."""
    folder.mkdir(parents=True)
    league = league_file(folder, teams, games, name="worker")
    config = load_league(league)
    dsn = postgres.create_database(f"bench_{uuid.uuid4().hex[:10]}")
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    coordinator.initialize(config, dsn)
    process = start_worker(league, dsn, redis_server.url, "w1", folder)
    try:
        wait_ready(folder, ["w1"])
        coordinator.enqueue(config, dsn, redis_server.url)
        coordinator.wait_until_final(config, dsn, interval=0.05)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(60)
    setups = [float(ms) for _, ms in SETUP.findall((folder / "w1.stderr").read_text())]
    if len(setups) < 2:
        raise SystemExit(f"the worker reported {len(setups)} set-ups (see {folder}/w1.stderr)")
    first, *later = setups
    print(
        f"piranhas-league worker (Redis + PostgreSQL), {len(setups)} matches: set-up first "
        f"{first:.1f} ms, then median {statistics.median(later):.1f} ms, "
        f"mean {mean_ci(later)} ms, max {max(later):.1f} ms (goal: ≤ 100 ms after the first)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--teams", type=int, default=6, help="teams (matches: n(n-1)/2)")
    parser.add_argument("--games", type=int, default=2, help="games per match")
    args = parser.parse_args()
    print(f"load average before: {load()}  ({os.cpu_count()} CPUs)")
    redis_server, postgres = RedisServer(), PostgresServer()
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        redis_server.start()
        postgres.start()
        try:
            in_process(folder / "inprocess", args.teams, args.games, postgres)
            worker_process(folder / "worker", args.teams, args.games, postgres, redis_server)
        finally:
            postgres.close()
            redis_server.close()
    print(f"load average after: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
