"""Distributed league benchmark: matches per hour with 1, 2 and 4 workers on this host, and what
the queue and the shared store cost per match.

A round robin of seeded example bots (deploy/bots/seeded_bot.py, no delay: games as fast as the
server and the bots go), played
- on one machine without a queue (`fleet.coordinator.play_local`, SQLite) — the baseline;
- by W worker processes (`piranhas-league worker`) on a private Redis and PostgreSQL started here
  (Debian packages `redis-server`, `postgresql`), for each W.

Printed (the best of `--repeat` runs): wall time and matches per hour for each; the
coordinator's cost to queue one match; the overhead per match of one worker against the baseline
(queue, PostgreSQL, heartbeats).

Run:  .venv/bin/python -m bench.league_distributed [--teams 6] [--games 2] [--workers 1 2 4]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import redis

from fleet import coordinator
from fleet.runs import RunStatus
from fleet.stores import open_store
from league.config import LeagueConfig, load_league
from league.schedule import build_schedule
from tests.distributed.servers import PostgresServer, RedisServer

REPO = Path(__file__).resolve().parent.parent
BOT = REPO / "deploy" / "bots" / "seeded_bot.py"


def league_file(folder: Path, teams: int, games: int) -> Path:
    lines = ['name = "Bench"', f"games_per_match = {games}", "seed = 3", ""]
    for index in range(teams):
        command = f'["{sys.executable}", "{BOT}", "--seed", "{index + 1}"]'
        lines += ["[[teams]]", f'id = "t{index + 1}"', f"command = {command}", ""]
    path = folder / "league.toml"
    path.write_text("\n".join(lines))
    return path


def baseline(config: LeagueConfig, folder: Path) -> float:
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    coordinator.play_local(config, str(folder / "local.sqlite"), folder / "local-logs")
    return time.perf_counter() - started


def start_worker(
    league: Path, dsn: str, url: str, name: str, folder: Path
) -> subprocess.Popen[bytes]:
    log = (folder / f"{name}.stderr").open("wb")
    argv = [sys.executable, "-m", "cli.league", "worker", str(league), "--database", dsn]
    argv += ["--redis", url, "--name", name, "--log-dir", str(folder / f"{name}-logs")]
    return subprocess.Popen(argv, cwd=REPO, stdout=log, stderr=log, start_new_session=True)


def wait_ready(folder: Path, names: list[str]) -> None:
    deadline = time.monotonic() + 60
    while not all("ready" in (folder / f"{n}.stderr").read_text() for n in names):
        if time.monotonic() > deadline:
            raise SystemExit("workers did not start")
        time.sleep(0.05)


def distributed(
    config: LeagueConfig,
    league: Path,
    workers: int,
    postgres: PostgresServer,
    redis_server: RedisServer,
    folder: Path,
) -> tuple[float, float]:
    """Seconds from queueing to the last match done, and the seconds queueing took."""
    folder.mkdir(parents=True, exist_ok=True)
    dsn = postgres.create_database(f"bench_{uuid.uuid4().hex[:10]}")
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    coordinator.initialize(config, dsn)
    names = [f"w{workers}-{i}" for i in range(workers)]
    processes = [start_worker(league, dsn, redis_server.url, n, folder) for n in names]
    try:
        wait_ready(folder, names)
        started = time.perf_counter()
        coordinator.enqueue(config, dsn, redis_server.url)
        queued = time.perf_counter() - started
        states = coordinator.wait_until_final(config, dsn, interval=0.05)
        elapsed = time.perf_counter() - started
    finally:
        for process in processes:
            os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            process.wait(60)
    assert all(state.status is RunStatus.DONE for state in states), states
    store, _ = open_store(dsn)
    assert store.progress().finished == store.progress().total
    store.close()
    return elapsed, queued


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--teams", type=int, default=6)
    parser.add_argument("--games", type=int, default=2)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--repeat", type=int, default=2, help="runs of each; the best counts")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        league = league_file(folder, args.teams, args.games)
        config = load_league(league)
        matches = len(build_schedule(config))
        print(
            f"{matches} matches of {args.games} games ({args.teams} teams, seeded bots, no "
            f"delay), {os.cpu_count()} CPUs"
        )
        local = min(baseline(config, folder / f"local{i}") for i in range(args.repeat))
        rate = 3600 * matches / local
        print(f"one machine, no queue (SQLite): {local:7.1f} s  {rate:8.0f} matches/h")
        redis_server, postgres = RedisServer(), PostgresServer()
        redis_server.start()
        postgres.start()
        try:
            one_worker = None
            for workers in args.workers:
                elapsed, queued = min(
                    distributed(config, league, workers, postgres, redis_server, folder / f"{i}")
                    for i in range(args.repeat)
                )
                if workers == 1:
                    one_worker = elapsed
                print(
                    f"{workers} worker{'s' if workers > 1 else ' '} (Redis + PostgreSQL):    "
                    f"{elapsed:7.1f} s  {3600 * matches / elapsed:8.0f} matches/h  "
                    f"(queueing {1000 * queued / matches:.1f} ms per match)"
                )
            if one_worker is not None:
                print(
                    f"overhead of the queue and the shared store: "
                    f"{1000 * (one_worker - local) / matches:.0f} ms per match "
                    f"(1 worker against one machine)"
                )
        finally:
            postgres.close()
            redis_server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
