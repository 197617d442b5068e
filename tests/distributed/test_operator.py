"""What an operator meets when something is wrong (issue 18), on a real Redis and PostgreSQL:
wrong passwords, ports and databases end every command at once with one line on stderr; a
worker whose league file differs is refused; leagues share one Redis without seeing each
other's matches; a queue lost with Redis's data is rebuilt by `distribute`; a killed worker's
match goes before the matches still waiting; queueing costs the same few store transactions
for any number of matches; Dramatiq's logging still works after the first match, and the
worker's lines stay in worker.log while its table is open."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from fleet import coordinator, preflight
from fleet.queue import declare_match_actor, make_broker
from fleet.runs import RunStatus
from fleet.stores import open_store
from league.config import load_league
from league.store import LeagueStore

from .conftest import StartWorker, league_text
from .servers import SECURE_USER, PostgresServer, RedisServer, free_port

pytestmark = [pytest.mark.distributed, pytest.mark.timeout(240)]

# A refused login or an unreachable server ends a command within this (before: 120-240 s).
FAIL_FAST_S = 15.0


def command(
    argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 60.0
) -> tuple[int, str, float]:
    """`piranhas-league ARGV` with `env` added: exit status, its output (stdout, then
    stderr), seconds it took."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "cli.league", *argv],
        cwd=cwd,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


@pytest.fixture
def league_file(tmp_path: Path) -> Path:
    path = tmp_path / "league.toml"
    path.write_text(league_text(delay=0.02))
    return path


@pytest.fixture
def secure_database(postgres_server: PostgresServer) -> str:
    """A database owned by the password role, and its URL with the password."""
    name = f"secure_{os.urandom(6).hex()}"
    postgres_server.create_database(name, owner=SECURE_USER)
    return postgres_server.secure_dsn(name)


def test_wrong_passwords_ports_and_databases_end_every_command_at_once(
    league_file: Path,
    tmp_path: Path,
    redis_server: RedisServer,
    postgres_server: PostgresServer,
    secure_database: str,
) -> None:
    good = {"PIRANHAS_DATABASE": secure_database, "PIRANHAS_REDIS_URL": redis_server.secure_url}
    wrong_redis = redis_server.secure_url.replace("%40ss", "%40sx")
    wrong_database = secure_database.replace("%40ss", "%40sx")
    cases = [
        ({"PIRANHAS_REDIS_URL": wrong_redis}, ("worker", "distribute"), "refused the login"),
        (
            {"PIRANHAS_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"},
            ("worker", "distribute"),
            "cannot reach Redis",
        ),
        (
            {"PIRANHAS_DATABASE": wrong_database},
            ("worker", "distribute", "status"),
            "refused the login: FATAL: password authentication failed",
        ),
        (
            {"PIRANHAS_DATABASE": secure_database.rsplit("/", 1)[0] + "/no_such_league"},
            ("worker", "distribute", "status"),
            'database "no_such_league" does not exist',
        ),
        (
            {"PIRANHAS_DATABASE": f"postgresql://{SECURE_USER}@127.0.0.1:{free_port()}/league"},
            ("worker", "distribute", "status"),
            "is unreachable: Connection refused",
        ),
    ]
    for env, commands, says in cases:
        for name in commands:
            argv = [name, str(league_file), "--log-dir", str(tmp_path / "logs")]
            if name != "worker":
                argv = argv[:2]
            status, err, took = command(argv, {**good, **env}, tmp_path)
            assert status == 2, (name, env, err)
            assert says in err, (name, err)
            assert "ready" not in err and "Traceback" not in err and "%40s" not in err
            assert took < FAIL_FAST_S, (name, env, took)
    # The same settings with the right passwords work (from the environment only).
    status, err, _ = command(["distribute", str(league_file), "--no-wait"], good, tmp_path)
    assert status == 0, err


def test_a_worker_with_another_league_file_is_refused(
    tmp_path: Path, postgres_dsn: str, redis_url: str, start_worker: StartWorker
) -> None:
    league = tmp_path / "league.toml"
    league.write_text(league_text(delay=0.02))
    config = load_league(league)
    assert coordinator.enqueue(config, postgres_dsn, redis_url) == [1, 2, 3]
    other = tmp_path / "other.toml"
    other.write_text(league_text(delay=0.02).replace('"--seed", "2"', '"--seed", "9"'))
    argv = ["worker", str(other), "--database", postgres_dsn, "--redis", redis_url]
    status, err, took = command(argv, {}, tmp_path)
    assert status == 2 and took < FAIL_FAST_S
    assert "this league file is not the league in the store: the teams and their bots" in err
    store, runs = open_store(postgres_dsn)
    try:
        assert {s.status for s in runs.states()} == {RunStatus.QUEUED}  # nothing was played
    finally:
        store.close()


def test_two_leagues_on_one_redis_never_take_each_other_s_matches(
    tmp_path: Path,
    postgres_server: PostgresServer,
    redis_url: str,
    start_worker: StartWorker,
) -> None:
    leagues = {}
    for name in ("First", "Second"):
        path = tmp_path / f"{name}.toml"
        path.write_text(league_text(name=name, delay=0.02))
        database = postgres_server.create_database(f"{name.lower()}_{os.urandom(4).hex()}")
        leagues[name] = (path, database)
    first, second = leagues["First"], leagues["Second"]
    coordinator.initialize(load_league(second[0]), second[1])  # Second exists, nothing queued
    assert coordinator.enqueue(load_league(first[0]), first[1], redis_url) == [1, 2, 3]
    start_worker(second[0], second[1], redis_url, "second-1")  # idle: Second has no message
    time.sleep(3)
    store, runs = open_store(first[1])
    try:
        assert {(s.status, s.attempt) for s in runs.states()} == {(RunStatus.QUEUED, 0)}
        start_worker(first[0], first[1], redis_url, "first-1")
        deadline = time.monotonic() + 90
        while not all(s.status is RunStatus.DONE for s in runs.states()):
            assert time.monotonic() < deadline, runs.states()
            time.sleep(0.2)
        assert {s.worker for s in runs.states()} == {"first-1"}
    finally:
        store.close()


def test_after_redis_lost_its_data_distribute_sends_the_queued_matches_again(
    tmp_path: Path, postgres_dsn: str, redis_url: str, start_worker: StartWorker
) -> None:
    league = tmp_path / "league.toml"
    league.write_text(league_text(delay=0.02))
    config = load_league(league)
    assert coordinator.enqueue(config, postgres_dsn, redis_url) == [1, 2, 3]
    assert coordinator.enqueue(config, postgres_dsn, redis_url) == []  # all in Redis
    client = redis.Redis.from_url(redis_url)
    client.flushall()  # what a restart without AOF, or a new Redis server, does
    client.close()
    # The documented recovery (docs/distributed.md): run distribute again.
    status, err, _ = command(
        ["distribute", str(league), "--database", postgres_dsn, "--redis", redis_url, "--no-wait"],
        {},
        tmp_path,
    )
    assert status == 0 and "3 matches sent to the queue" in err, err
    assert coordinator.enqueue(config, postgres_dsn, redis_url) == []
    start_worker(league, postgres_dsn, redis_url, "w1")
    final = coordinator.wait_until_final(config, postgres_dsn, interval=0.2, timeout=90)
    assert {s.status for s in final} == {RunStatus.DONE}
    assert {s.attempt for s in final} == {1}  # each played once


def test_a_killed_worker_s_match_goes_before_the_matches_still_waiting(
    tmp_path: Path, postgres_dsn: str, redis_url: str, start_worker: StartWorker
) -> None:
    league = tmp_path / "league.toml"
    league.write_text(league_text(teams=5, delay=0.05))  # 10 matches
    config = load_league(league)
    coordinator.enqueue(config, postgres_dsn, redis_url)
    victim = start_worker(league, postgres_dsn, redis_url, "victim")
    store, runs = open_store(postgres_dsn)
    try:
        deadline = time.monotonic() + 30
        while not (running := [s for s in runs.states() if s.status is RunStatus.RUNNING]):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        killed = running[0].match_id
        victim.kill_group()
        start_worker(league, postgres_dsn, redis_url, "busy")
        deadline = time.monotonic() + 60
        while (state := {s.match_id: s for s in runs.states()}[killed]).attempt < 2:
            assert time.monotonic() < deadline, runs.states()
            time.sleep(0.05)
        waiting = [s.match_id for s in runs.states() if s.status is RunStatus.QUEUED]
        # The re-delivery came within a heartbeat and a match, not after the queue: most
        # matches still wait (at the back of the queue it would have been the last).
        assert len(waiting) >= 6, (state, runs.states())
    finally:
        store.close()


def test_queueing_takes_the_same_store_transactions_for_any_number_of_matches(
    tmp_path: Path,
    postgres_server: PostgresServer,
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counts: list[int] = []
    opened = coordinator.open_store  # type: ignore[attr-defined]

    def counting(database: str) -> tuple[LeagueStore, object]:
        store, runs = opened(database)
        backend = store.backend
        original = backend.transaction

        def transaction() -> object:
            counts[-1] += 1
            return original()

        monkeypatch.setattr(backend, "transaction", transaction)
        return store, runs

    monkeypatch.setattr(coordinator, "open_store", counting)
    for teams in (4, 12):  # 6 and 66 matches
        league = tmp_path / f"league{teams}.toml"
        league.write_text(league_text(teams=teams))
        config = load_league(league)
        database = postgres_server.create_database(f"queue_{teams}_{os.urandom(4).hex()}")
        counts.append(0)
        assert len(coordinator.enqueue(config, database, redis_url)) == teams * (teams - 1) // 2
        counts.append(0)
        assert coordinator.enqueue(config, database, redis_url) == []  # nothing to send
    first_small, again_small, first_big, again_big = counts
    assert first_small == first_big and again_small == again_big, counts


def test_dramatiq_s_logging_works_after_the_first_match(
    tmp_path: Path, postgres_dsn: str, redis_url: str, start_worker: StartWorker
) -> None:
    league = tmp_path / "league.toml"
    league.write_text(league_text(delay=0.0))
    config = load_league(league)
    coordinator.enqueue(config, postgres_dsn, redis_url)
    worker = start_worker(league, postgres_dsn, redis_url, "w1")
    final = coordinator.wait_until_final(config, postgres_dsn, interval=0.2, timeout=90)
    assert {s.status for s in final} == {RunStatus.DONE}
    # The worker keeps its table (a game server in its process) open after the matches: a
    # message for a done match now makes it log a line of its own, which goes to worker.log,
    # not to the open table's server.log.
    store, _ = open_store(postgres_dsn)
    try:
        queue = preflight.check_fingerprint(config, store.backend)
    finally:
        store.close()
    assert queue is not None
    broker = make_broker(redis_url)
    try:
        declare_match_actor(broker, lambda match_id: None, queue).send(final[0].match_id)
    finally:
        broker.close()
    logs = tmp_path / "w1-logs"
    deadline = time.monotonic() + 30
    while "nothing to do" not in (logs / "worker.log").read_text():
        assert time.monotonic() < deadline, (logs / "worker.log").read_text()[-2000:]
        time.sleep(0.05)
    assert "nothing to do" not in (logs / "server.log").read_text()
    worker.process.send_signal(signal.SIGTERM)
    worker.process.wait(30)
    err = worker.output()
    assert "Logging error" not in err and "I/O operation on closed file" not in err
    log = (logs / "worker.log").read_text()
    # Dramatiq's own shutdown lines come after every match: the log still works then.
    assert "dramatiq.worker.Worker: Shutting down..." in log, log[-2000:]
    served = (logs / "server.log").read_text()
    assert "listening" in served and "dramatiq" not in served
    assert "listening" not in log


def test_a_database_created_without_a_locale_works(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    # What initdb makes in a container without LANG: SQL_ASCII, whose text psycopg would
    # return as bytes (b'new' is not a RunStatus; the stored schedule never matches again).
    name = f"ascii_{os.urandom(4).hex()}"
    postgres_server.execute(f"CREATE DATABASE \"{name}\" ENCODING 'SQL_ASCII' TEMPLATE template0")
    dsn = f"postgresql://postgres@{postgres_server.host}:{postgres_server.port}/{name}"
    league = tmp_path / "league.toml"
    league.write_text(league_text())
    config = load_league(league)
    coordinator.initialize(config, dsn)
    coordinator.initialize(config, dsn)  # compares the stored schedule and fingerprint
    store, runs = open_store(dsn)
    try:
        assert {s.status for s in runs.states()} == {RunStatus.NEW}
    finally:
        store.close()
