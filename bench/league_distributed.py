"""Distributed league benchmark: matches per hour with 1, 2 and 4 workers on this host, and what
the queue and the shared store cost per match.

A round robin of seeded example bots (deploy/bots/seeded_bot.py, no delay: games as fast as the
server and the bots go), played
- on one machine without a queue (`fleet.coordinator.play_local`, SQLite) — the baseline;
- by W worker processes (`piranhas-league worker`) on a private Redis and PostgreSQL started here
  (Debian packages `redis-server`, `postgresql`), for each W.

Printed (the best of `--repeat` runs): wall time and matches per hour for each; the
coordinator's cost to queue one match; the overhead per match of one worker against the baseline
(queue, PostgreSQL, heartbeats). Then:

- queueing a big league (`--queue-teams`, default 20 and 50 teams: 190 and 1,225 matches) as
  `distribute` does it, per match, and re-running it with nothing to send (issue 18: 4.4 and 11.6
  ms per match before, quadratic, and 7.4 s for the re-run);
- the re-delivery of a killed worker's match while every other worker is busy (`--busy`
  workers, paced bots): seconds from the SIGKILL to the match running again, against the goal of
  the heartbeat timeout plus one match.

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
from fleet.queue import HEARTBEAT_TIMEOUT_MS
from fleet.runs import RunStatus
from fleet.stores import open_store
from league.config import LeagueConfig, load_league
from league.schedule import build_schedule
from tests.distributed.servers import PostgresServer, RedisServer

REPO = Path(__file__).resolve().parent.parent
BOT = REPO / "deploy" / "bots" / "seeded_bot.py"


def league_file(
    folder: Path, teams: int, games: int, delay: float = 0.0, name: str = "league"
) -> Path:
    lines = ['name = "Bench"', f"games_per_match = {games}", "seed = 3", ""]
    for index in range(teams):
        command = f'["{sys.executable}", "{BOT}", "--seed", "{index + 1}", "--delay", "{delay}"]'
        lines += ["[[teams]]", f'id = "t{index + 1}"', f"command = {command}", ""]
    path = folder / f"{name}.toml"
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


def queueing(
    folder: Path, teams: int, postgres: PostgresServer, redis_server: RedisServer
) -> tuple[int, float, float]:
    """Matches, seconds to queue them all (`distribute`'s enqueue, the store created first as
    `distribute` does), seconds to run it again with nothing to send."""
    config = load_league(league_file(folder, teams, 2, name=f"queue{teams}"))
    dsn = postgres.create_database(f"bench_{uuid.uuid4().hex[:10]}")
    started = time.perf_counter()
    sent = coordinator.enqueue(config, dsn, redis_server.url)
    first = time.perf_counter() - started
    started = time.perf_counter()
    assert coordinator.enqueue(config, dsn, redis_server.url) == []
    again = time.perf_counter() - started
    return len(sent), first, again


def redelivery(
    folder: Path, busy: int, postgres: PostgresServer, redis_server: RedisServer
) -> tuple[float, float]:
    """Seconds from SIGKILL of a worker mid-match to its match running again on another worker
    while `busy` other workers play, and the mean match duration seen in the run."""
    folder.mkdir(parents=True, exist_ok=True)
    league = league_file(folder, 8, 2, delay=0.05, name="paced")
    config = load_league(league)
    dsn = postgres.create_database(f"bench_{uuid.uuid4().hex[:10]}")
    coordinator.enqueue(config, dsn, redis_server.url)
    names = [f"busy-{i}" for i in range(busy)] + ["victim"]
    processes = dict(zip(names, (start_worker(league, dsn, redis_server.url, n, folder)
                                 for n in names), strict=True))  # fmt: skip
    store, runs = open_store(dsn)
    try:
        wait_ready(folder, names)
        while True:  # the victim mid-match, every other worker busy
            states = runs.states()
            victim = [s for s in states if s.status is RunStatus.RUNNING and s.worker == "victim"]
            playing = {s.worker for s in states if s.status is RunStatus.RUNNING}
            if victim and len(playing) == len(names):
                break
            time.sleep(0.02)
        match = victim[0].match_id
        time.sleep(1.0)
        os.killpg(processes["victim"].pid, signal.SIGKILL)
        killed = time.perf_counter()
        processes["victim"].wait()
        done_at: dict[int, float] = {}
        started_at: dict[int, float] = {}
        rerun = None
        while rerun is None or len(done_at) < 4:
            now = time.perf_counter()
            for state in runs.states():
                if state.status is RunStatus.RUNNING and state.match_id not in started_at:
                    started_at[state.match_id] = now
                if state.status is RunStatus.DONE and state.match_id in started_at:
                    done_at.setdefault(state.match_id, now)
                if state.match_id == match and state.attempt > 1 and rerun is None:
                    rerun = now - killed
            if now - killed > 600:
                raise SystemExit("the killed worker's match was not played again in 10 min")
            time.sleep(0.02)
        durations = [done_at[m] - started_at[m] for m in done_at]
        return rerun, sum(durations) / len(durations)
    finally:
        store.close()
        for process in processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes.values():
            process.wait(60)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--teams", type=int, default=6)
    parser.add_argument("--games", type=int, default=2)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--repeat", type=int, default=2, help="runs of each; the best counts")
    parser.add_argument("--queue-teams", type=int, nargs="*", default=[20, 50])
    parser.add_argument("--busy", type=int, default=2, help="busy workers at the re-delivery")
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
            for teams in args.queue_teams:
                sent, first, again = queueing(folder, teams, postgres, redis_server)
                print(
                    f"queueing {sent} matches: {first:6.2f} s ({1000 * first / sent:.2f} ms per "
                    f"match); again with nothing to send: {again:.2f} s"
                )
            if args.busy:
                rerun, match = redelivery(folder / "redelivery", args.busy, postgres, redis_server)
                goal = HEARTBEAT_TIMEOUT_MS / 1000 + match
                print(
                    f"killed worker's match running again after {rerun:.1f} s with {args.busy} "
                    f"other workers busy (goal: heartbeat {HEARTBEAT_TIMEOUT_MS / 1000:g} s + one "
                    f"match {match:.1f} s = {goal:.1f} s)"
                )
        finally:
            postgres.close()
            redis_server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
