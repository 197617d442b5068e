"""The results store: attempts as fencing tokens, idempotence, concurrent writers, crashes.

The tests that take the `store` or `open_backend` fixture run on both backends: SQLite always,
PostgreSQL (fleet's backend, a real server from tests/conftest.py) with `-m distributed`."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine import GameResult, PlayerEntry, Team
from league.config import LeagueConfig
from league.schedule import build_schedule
from league.store import (
    Backend,
    GameOutcome,
    LeagueStore,
    RecordConflictError,
    RecordStatus,
    ScheduleMismatchError,
    SQLiteBackend,
    StaleAttemptError,
)

MakeLeague = Callable[..., LeagueConfig]
WIN_ONE = GameOutcome((2, 0), (7, 4), "a", True, "A hat den größeren zusammenhängenden Schwarm")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def league(make_league: MakeLeague) -> LeagueConfig:
    return make_league(["a", "b", "c"], "games_per_match = 2\nseed = 9")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.distributed)])
def open_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Backend]:
    """New connections to one database: an SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        path = tmp_path / "league.sqlite"
        return lambda: SQLiteBackend(path)
    from league.postgres import PostgresBackend

    dsn: str = request.getfixturevalue("postgres_dsn")
    return lambda: PostgresBackend(dsn)


@pytest.fixture
def store(
    open_backend: Callable[[], Backend], league: LeagueConfig, clock: FakeClock
) -> Iterator[LeagueStore]:
    store = LeagueStore(open_backend(), clock=clock)
    store.initialize(league, build_schedule(league))
    yield store
    store.close()


def test_initialize_creates_the_schedule_once(
    tmp_path: Path, store: LeagueStore, league: LeagueConfig, make_league: MakeLeague
) -> None:
    assert store.progress().pending == 6
    store.initialize(league, build_schedule(league))  # the same league again: nothing changes
    assert store.progress().total == 6
    other = make_league(["a", "b", "c"], "games_per_match = 2\nseed = 10")
    with pytest.raises(ScheduleMismatchError):
        store.initialize(other, build_schedule(other))


def test_claims_follow_the_schedule_and_never_hand_out_a_running_game(store: LeagueStore) -> None:
    claims = [store.claim_next("w1") for _ in range(6)]
    assert [(c.match_id, c.number, c.attempt) for c in claims if c] == [
        (m, g, 1) for m in (1, 2, 3) for g in (1, 2)
    ]
    assert store.claim_next("w2") is None
    assert store.progress().running == 6


def test_recording_is_idempotent_and_first_write_wins(store: LeagueStore) -> None:
    claim = store.claim_next("w")
    assert claim is not None
    assert (
        store.record(claim.match_id, claim.number, claim.attempt, WIN_ONE) is RecordStatus.RECORDED
    )
    # A retry of the same write (e.g. the acknowledgement was lost) changes nothing.
    assert (
        store.record(claim.match_id, claim.number, claim.attempt, WIN_ONE) is RecordStatus.DUPLICATE
    )
    other = GameOutcome((0, 2), (1, 9), "b", True, "B")
    with pytest.raises(RecordConflictError):
        store.record(claim.match_id, claim.number, claim.attempt, other)
    [finished] = store.finished_games()
    assert finished.outcome == WIN_ONE
    assert finished.attempt == 1
    # A finished game is never handed out again.
    next_claim = store.claim_next("w")
    assert next_claim is not None and (next_claim.match_id, next_claim.number) == (1, 2)


def test_an_expired_attempt_is_fenced_off(store: LeagueStore, clock: FakeClock) -> None:
    old = store.claim_next("slow", lease_seconds=60)
    assert old is not None
    clock.now += 30
    store.heartbeat(old, lease_seconds=60)  # alive: the lease now ends 90 s after the claim
    clock.now += 50
    assert store.claim_next("other", lease_seconds=60) is not None  # the next game, not this one
    clock.now += 11  # the slow worker missed its heartbeat
    new = store.claim_next("fresh", lease_seconds=60)
    assert new is not None
    assert (new.match_id, new.number, new.attempt) == (old.match_id, old.number, 2)
    with pytest.raises(StaleAttemptError):
        store.heartbeat(old)
    with pytest.raises(StaleAttemptError):
        store.record(old.match_id, old.number, old.attempt, WIN_ONE)
    assert store.record(new.match_id, new.number, new.attempt, WIN_ONE) is RecordStatus.RECORDED
    # The late worker comes back after the game was finished by the newer attempt: rejected.
    late = GameOutcome((0, 2), (3, 3), "b", True, "late")
    with pytest.raises(StaleAttemptError):
        store.record(old.match_id, old.number, old.attempt, late)
    with pytest.raises(StaleAttemptError):
        store.heartbeat(new)  # finished: nothing left to heartbeat
    assert store.attempts(old.match_id, old.number) == [
        (1, "slow", "expired"),
        (2, "fresh", "finished"),
    ]
    assert [f.outcome for f in store.finished_games()] == [WIN_ONE]


def test_abandon_gives_the_game_back(store: LeagueStore) -> None:
    claim = store.claim_next("w")
    assert claim is not None
    assert store.abandon(claim)
    assert not store.abandon(claim)  # only once
    with pytest.raises(StaleAttemptError):
        store.record(claim.match_id, claim.number, claim.attempt, WIN_ONE)
    again = store.claim_next("w")
    assert again is not None and (again.number, again.attempt) == (claim.number, 2)
    assert store.attempts(1, 1) == [(1, "w", "abandoned"), (2, "w", "running")]


def test_unknown_games_are_rejected(store: LeagueStore) -> None:
    with pytest.raises(StaleAttemptError, match="not in the schedule"):
        store.record(99, 1, 1, WIN_ONE)


def test_reset_running_lets_the_same_command_continue(store: LeagueStore) -> None:
    first, second = store.claim_next("w"), store.claim_next("w")
    assert first and second
    store.record(first.match_id, first.number, first.attempt, WIN_ONE)
    assert store.reset_running() == 1
    assert store.progress() == type(store.progress())(pending=5, running=0, finished=1)
    again = store.claim_next("w")
    assert again is not None and (again.match_id, again.number, again.attempt) == (1, 2, 2)


def test_outcome_from_an_engine_result_maps_sides_to_teams(league: LeagueConfig) -> None:
    game = build_schedule(league)[0].games[1]  # the away team plays Team.ONE here
    result = GameResult(
        [(PlayerEntry(Team.ONE, "x"), (0, 5)), (PlayerEntry(Team.TWO, "y"), (2, 8))],
        Team.TWO,
        True,
        "y hat gewonnen",
    )
    outcome = GameOutcome.from_result(game, result, record="<game/>")
    assert outcome.siegpunkte == (0, 2)
    assert outcome.schwarm == (5, 8)
    assert outcome.winner == game.team_two
    assert outcome.record == "<game/>"


WORKER = textwrap.dedent(
    """
    import os, sys, time
    from league.config import parse_league
    from league.schedule import build_schedule
    from league.store import GameOutcome, LeagueStore
    path, name, text, pause_at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    config = parse_league(text)
    recorded = 0

    def before_commit(operation):
        if operation == "record" and recorded + 1 == pause_at:
            print("PAUSED", flush=True)
            time.sleep(60)  # killed here, inside the transaction

    store = LeagueStore.sqlite(path, before_commit=before_commit)
    store.initialize(config, build_schedule(config))
    while (claim := store.claim_next(name)) is not None:
        winner = claim.game.team_one
        outcome = GameOutcome((2, 0), (claim.number, 0), winner, True, name)
        store.record(claim.match_id, claim.number, claim.attempt, outcome)
        recorded += 1
        print(f"{claim.match_id} {claim.number} {claim.attempt}", flush=True)
    """
)


def _worker(path: Path, name: str, text: str, pause_at: int = 0) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(path), name, text, str(pause_at)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _check_consistent(path: Path) -> None:
    """The SQLite file is intact and its rows are consistent (`_check_rows`)."""
    connection = sqlite3.connect(path)
    try:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        connection.close()
    backend = SQLiteBackend(path)
    try:
        _check_rows(backend)
    finally:
        backend.close()


def _check_rows(backend: Backend) -> None:
    """Every finished game has exactly one result, from its newest attempt, and that attempt's
    row says finished; no result exists for an unfinished game."""
    with backend.transaction() as tx:
        rows = tx.query(
            "SELECT g.status, g.attempt, r.attempt, a.outcome FROM games g "
            "LEFT JOIN results r ON r.match_id = g.match_id AND r.game_number = g.game_number "
            "LEFT JOIN attempts a ON a.match_id = g.match_id AND a.game_number = g.game_number "
            "AND a.attempt = g.attempt"
        )
    for status, attempt, result_attempt, outcome in rows:
        if status == "finished":
            assert (result_attempt, outcome) == (attempt, "finished")
        else:
            assert result_attempt is None
            assert outcome in (None, "running", "abandoned")


def test_concurrent_writers_never_duplicate_or_tear(
    tmp_path: Path, make_league_text: Callable[..., str]
) -> None:
    path = tmp_path / "league.sqlite"
    text = make_league_text([f"t{i}" for i in range(6)], "games_per_match = 4")
    workers = [_worker(path, f"w{i}", text) for i in range(3)]
    lines: list[str] = []
    for worker in workers:
        out, err = worker.communicate(timeout=60)
        assert worker.returncode == 0, err
        lines += out.split()
    played = [tuple(lines[i : i + 3]) for i in range(0, len(lines), 3)]
    assert len(played) == 15 * 4  # every game played once across all workers …
    assert len({(m, g) for m, g, _ in played}) == 60  # … and never twice
    assert {a for _, _, a in played} == {"1"}
    _check_consistent(path)
    store = LeagueStore.sqlite(path)
    assert store.progress().finished == 60
    assert len(store.finished_games()) == 60
    store.close()


def test_a_process_killed_mid_transaction_leaves_a_consistent_store(
    tmp_path: Path, make_league_text: Callable[..., str], league: LeagueConfig
) -> None:
    path = tmp_path / "league.sqlite"
    text = make_league_text(["a", "b", "c"], "games_per_match = 2\nseed = 9")
    worker = _worker(path, "doomed", text, pause_at=3)
    assert worker.stdout is not None
    seen = [worker.stdout.readline().strip() for _ in range(3)]
    assert seen == ["1 1 1", "1 2 1", "PAUSED"]  # two games committed, the third mid-commit
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait(timeout=10)
    _check_consistent(path)
    store = LeagueStore.sqlite(path)
    store.initialize(league, build_schedule(league))
    assert [(f.game.match_id, f.game.number) for f in store.finished_games()] == [(1, 1), (1, 2)]
    assert store.progress().running == 1  # the killed attempt, its result rolled back
    assert store.reset_running() == 1
    claim = store.claim_next("again")
    assert claim is not None and (claim.match_id, claim.number, claim.attempt) == (2, 1, 2)
    assert store.record(2, 1, 2, WIN_ONE) is RecordStatus.RECORDED
    _check_consistent(path)
    store.close()


def test_racing_records_of_one_game_commit_exactly_once(
    tmp_path: Path, league: LeagueConfig, open_backend: Callable[[], Backend]
) -> None:
    import threading

    setup = LeagueStore(open_backend())
    setup.initialize(league, build_schedule(league))
    claims = []
    while (claim := setup.claim_next("w")) is not None:
        claims.append(claim)
    setup.close()
    barrier = threading.Barrier(4)
    statuses: list[RecordStatus] = []
    errors: list[Exception] = []
    lock = threading.Lock()

    def writer() -> None:
        store = LeagueStore(open_backend())  # one connection per thread
        try:
            for claim in claims:
                barrier.wait(timeout=10)
                status = store.record(claim.match_id, claim.number, claim.attempt, WIN_ONE)
                with lock:
                    statuses.append(status)
        except Exception as error:  # reported below, not lost in the thread
            errors.append(error)
        finally:
            store.close()

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == []
    assert statuses.count(RecordStatus.RECORDED) == len(claims) == 6
    assert statuses.count(RecordStatus.DUPLICATE) == 3 * len(claims)
    check = LeagueStore(open_backend())
    try:
        _check_rows(check.backend)
        assert [(g.game.match_id, g.game.number, g.attempt) for g in check.finished_games()] == [
            (c.match_id, c.number, c.attempt) for c in claims
        ]
    finally:
        check.close()
