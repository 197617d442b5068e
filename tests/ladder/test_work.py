"""The ladder's workers without Docker (`--no-docker`: bots as processes in check's jail), on
the real store (SQLite) with tests/bots/fast_bot.py as the uploads: checking a version,
playing a match (replays, per-team logs, sides swapped, exactly one result), a crash charged
to the crasher, a superseded attempt that records nothing, the worker pool with its
scheduler."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
import trio

from engine import GameResult, PlayerEntry, Team
from ladder.store import GameResultRow, LadderStore, RecordStatus, StaleAttemptError
from ladder.work import (
    NO_DOCKER_NOTE,
    LadderDb,
    WorkSettings,
    card_path,
    check_version,
    game_log_path,
    replay_path,
)
from ladder.work_match import play_match, scored_row
from ladder.work_pool import MAX_MATCH_ATTEMPTS, run_workers, work_once
from league.asyncstore import StoreThread
from tests.ladder.helpers import (
    CRASH_AT_START,
    CRASH_IN_GAME,
    Ladder,
    open_ladder,
    shell_bot,
    store_factory,
    zip_bytes,
)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def ladder(tmp_path: Path) -> Iterator[Ladder]:
    opened = open_ladder(tmp_path)
    yield opened
    opened.store.close()


def db_of(ladder: Ladder) -> LadderDb:
    return StoreThread(store_factory(ladder))


@pytest.mark.slow
async def test_a_good_upload_passes_its_check_and_gets_a_card(ladder: Ladder) -> None:
    team = ladder.store.create_team("Checked")
    version = ladder.upload(team, shell_bot())
    db = db_of(ladder)
    try:
        claim = await db.call(db.store.claim_check, "w1")
        assert claim is not None and claim.version_id == version
        card = await check_version(db, ladder.data_dir, version, docker=False, claim=claim)
    finally:
        db.close()
    assert card.ready, card.plain()
    written = json.loads(card_path(ladder.data_dir, version).read_text())
    keys = {item["key"]: item["status"] for item in written["items"]}
    assert keys["test.random"] == "PASS"
    assert "test.match" not in keys  # the contest's test is the 2 games against random
    assert written["notes"][0] == NO_DOCKER_NOTE
    stored = ladder.store.version(version)
    assert stored is not None and stored.state == "passed"
    assert stored.card_summary is not None and stored.card_summary.startswith("ready")


async def test_a_zip_slip_upload_fails_without_running(ladder: Ladder) -> None:
    team = ladder.store.create_team("Sneaky")
    data = zip_bytes({"start.sh": "#!/bin/sh\nexit 0\n", "../../escaped.txt": "x"})
    version = ladder.upload(team, data)
    db = db_of(ladder)
    try:
        card = await check_version(db, ladder.data_dir, version, docker=False)
    finally:
        db.close()
    assert not card.ready
    assert not (ladder.data_dir.parent / "escaped.txt").exists()
    failed = {item.key for item in card.failed()}
    assert any(key.startswith("upload.") for key in failed), failed
    stored = ladder.store.version(version)
    assert stored is not None and stored.state == "failed"
    assert "upload." in (stored.card_summary or "")


async def test_a_match_is_played_with_sides_swapped_and_recorded_once(ladder: Ladder) -> None:
    a = ladder.active("Alpha", shell_bot())
    b = ladder.active("Beta", shell_bot())
    match_id = ladder.store.create_match(a, b)
    db = db_of(ladder)
    try:
        claim = await db.call(db.store.claim_match, "w1")
        assert claim is not None
        report = await play_match(db, ladder.data_dir, claim, docker=False)
    finally:
        db.close()
    assert report.status is RecordStatus.RECORDED
    match = ladder.store.match(match_id)
    assert match is not None and match.status == "finished"
    assert [row.first_version for row in match.results] == [a, b]
    for row in match.results:
        assert {row.points_a, row.points_b} <= {0, 1, 2}
        assert row.replay == replay_path(ladder.data_dir, match_id, row.number).name
        replay = gzip.decompress(replay_path(ladder.data_dir, match_id, row.number).read_bytes())
        assert b'class="result"' in replay
        # The server's move times of each side (the team page's profile): the first mover
        # made as many moves as the other or one more.
        first, second = (
            (row.move_ms_a, row.move_ms_b)
            if row.first_version == a
            else (row.move_ms_b, row.move_ms_a)
        )
        assert second and len(first) - len(second) in (0, 1), row
    assert [t.number for t in ladder.store.move_times(a)] == [2, 1]
    for version in (a, b):
        team = ladder.store.version(version)
        assert team is not None
        for game in (1, 2):
            log = game_log_path(ladder.data_dir, team.team_id, match_id, game)
            assert log.is_file()
    # Nothing but the replays under their public names (the staged copies were renamed).
    assert sorted(p.name for p in (ladder.data_dir / "replays").iterdir()) == [
        f"{match_id}-1.xml.gz",
        f"{match_id}-2.xml.gz",
    ]


async def crash_match(ladder: Ladder, start: str) -> list[GameResultRow]:
    good = ladder.active("Steady", shell_bot())
    crasher = ladder.active("Crashy", shell_bot(start))
    match_id = ladder.store.create_match(good, crasher)
    db = db_of(ladder)
    try:
        claim = await db.call(db.store.claim_match, "w1")
        assert claim is not None
        report = await play_match(db, ladder.data_dir, claim, docker=False)
    finally:
        db.close()
    assert report.status is RecordStatus.RECORDED
    match = ladder.store.match(match_id)
    assert match is not None and match.status == "finished"
    return list(match.results)


async def test_a_bot_crashing_in_its_games_loses_them_and_the_result_stands(
    ladder: Ladder,
) -> None:
    for row in await crash_match(ladder, CRASH_IN_GAME):
        assert (row.points_a, row.points_b) == (2, 0), row
        assert row.reason_a.startswith("won") and not row.reason_b.startswith("won"), row


@pytest.mark.slow
async def test_a_bot_ending_before_it_joins_forfeits_its_games(ladder: Ladder) -> None:
    # The match core's MatchError for a player that exited before the game ended: charged
    # to that bot (3 s of grace per game, hence slow).
    for row in await crash_match(ladder, CRASH_AT_START):
        assert (row.points_a, row.points_b) == (2, 0), row
        assert row.reason_b.startswith("CRASH: "), row
        assert row.replay is None


async def test_a_superseded_attempt_stops_and_records_nothing(ladder: Ladder) -> None:
    a = ladder.active("One", shell_bot())
    b = ladder.active("Two", shell_bot())
    match_id = ladder.store.create_match(a, b)
    first = ladder.store.claim_match("dead-worker", lease_seconds=10)
    assert first is not None
    ladder.clock[0] += 11  # the first worker missed its lease: the match is handed out again
    second = ladder.store.claim_match("live-worker", lease_seconds=10)
    assert second is not None and second.attempt == first.attempt + 1
    db = db_of(ladder)
    settings = WorkSettings(ladder.data_dir, heartbeat_every=0.2)
    try:
        with trio.fail_after(30), pytest.raises(StaleAttemptError):
            await play_match(db, ladder.data_dir, first, docker=False, settings=settings)
    finally:
        db.close()
    match = ladder.store.match(match_id)
    assert match is not None and match.status == "running" and not match.results
    assert not (ladder.data_dir / "replays").exists() or not any(
        (ladder.data_dir / "replays").iterdir()
    )


def test_a_scored_game_charges_the_irregular_loser() -> None:
    class Seat:
        def __init__(self, version_id: int, name: str) -> None:
            self.version_id = version_id
            self.name = name

    seats = (Seat(10, "A v1"), Seat(20, "B v1"))
    players = [PlayerEntry(Team.ONE, "B v1"), PlayerEntry(Team.TWO, "A v1")]
    reason = "B v1 hat das Spiel verlassen: connection closed"
    result = GameResult([(players[0], (0, 0)), (players[1], (2, 9))], Team.TWO, False, reason)
    row = scored_row(2, seats, 1, result, crashed=[1])  # type: ignore[arg-type]
    assert row.first_version == 20
    assert (row.points_a, row.points_b) == (2, 0)
    assert row.reason_b.startswith("CRASH: ") and row.reason_a.startswith("won")


async def test_a_missing_upload_is_given_back_then_given_up_not_charged(
    ladder: Ladder,
) -> None:
    a = ladder.active("Here", shell_bot())
    b = ladder.active("Gone", shell_bot())
    (ladder.data_dir / "uploads" / str(ladder.team_of(b)) / f"{b}.zip").unlink()
    match_id = ladder.store.create_match(a, b)
    db = db_of(ladder)
    settings = WorkSettings(ladder.data_dir, docker=False, worker="w1")
    try:
        done = [await work_once(db, settings) for _ in range(MAX_MATCH_ATTEMPTS)]
        assert await work_once(db, settings) is None  # nothing is claimed again
    finally:
        db.close()
    assert done == [f"match {match_id} given back"] * (MAX_MATCH_ATTEMPTS - 1) + [
        f"match {match_id} given up"
    ]
    match = ladder.store.match(match_id)
    assert match is not None and match.status == "cancelled" and not match.results
    assert not ladder.store.ratings()  # nobody was charged
    assert "match given up" in [entry.action for entry in ladder.store.audit_log()]


@pytest.mark.slow
async def test_the_pool_schedules_and_plays(ladder: Ladder) -> None:
    versions = []
    for name in ("North", "South"):
        team = ladder.store.create_team(name)
        versions.append(ladder.upload(team, shell_bot()))
    for version in versions:
        ladder.store.set_check_result(version, True, "ok")
        stored = ladder.store.version(version)
        assert stored is not None
        ladder.store.activate(stored.team_id, version)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: run_workers(
                    store_factory(ladder),
                    ladder.data_dir,
                    workers=1,
                    docker=False,
                    schedule_interval=0.2,
                    settings=WorkSettings(ladder.data_dir, poll_interval=0.1),
                )
            )
            while not [m for m in ladder.store.matches() if m.status == "finished"]:
                await trio.sleep(0.2)
            nursery.cancel_scope.cancel()
    finished = [m for m in ladder.store.matches() if m.status == "finished"]
    assert {finished[0].version_a, finished[0].version_b} == set(versions)
    assert (ladder.data_dir / "uploads").stat().st_mode & 0o777 == 0o700  # the team's alone
    assert ladder.store.ratings().keys() >= set(versions)


@pytest.mark.slow
async def test_two_workers_play_in_processes_of_their_own_and_give_back_on_stop(
    ladder: Ladder,
) -> None:
    for name in ("East", "West", "South"):
        ladder.active(name, shell_bot())
    factory = partial(LadderStore.open, ladder.database)  # picklable: the children open it
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: run_workers(
                    factory, ladder.data_dir, workers=2, docker=False, schedule_interval=0.2
                )
            )
            while len([m for m in ladder.store.matches() if m.status == "finished"]) < 3:
                await trio.sleep(0.3)
            nursery.cancel_scope.cancel()
    workers = {
        worker
        for match in ladder.store.matches()
        for _, worker, _ in ladder.store.attempts("match", match.id)
    }
    assert len({name.rsplit(":", 1)[1] for name in workers}) == 2  # both played
    # Stopped: what was running went back (abandoned), nothing is left running.
    assert not [m for m in ladder.store.matches() if m.status == "running"]
