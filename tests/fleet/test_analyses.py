"""Analysis jobs on both backends: one job per recorded game and setting, a new delivery fences
off the older attempt so the annotated record is written once, done jobs are never started
again. SQLite always; PostgreSQL with `-m distributed`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from analysis import Settings
from fleet.analyses import Analyses, AnalysisStatus, settings_key
from fleet.runs import Runs
from fleet.stores import open_store
from league.config import parse_league
from league.schedule import build_schedule
from league.store import GameOutcome, LeagueStore

WIN = GameOutcome((2, 0), (7, 4), "a", True, "A hat den größeren zusammenhängenden Schwarm")
SETTINGS = Settings(nodes=2000)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.distributed)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "league.sqlite")
    dsn: str = request.getfixturevalue("postgres_dsn")
    return dsn


@pytest.fixture
def stores(database: str) -> Iterator[tuple[LeagueStore, Analyses]]:
    teams = "".join(f'[[teams]]\nid = "{t}"\ncommand = "bot"\n' for t in "ab")
    league = parse_league(f'name = "Jobs"\ngames_per_match = 4\nseed = 4\n{teams}')
    store, _ = open_store(database)
    matches = build_schedule(league)
    store.initialize(league, matches)
    runs = Runs(store.backend)
    runs.initialize(matches)
    run = runs.start(1, "w1")
    assert run is not None
    store.record(1, 1, run.claims[0].attempt, replace(WIN, record="<game>one</game>"))
    store.record(1, 2, run.claims[1].attempt, replace(WIN, record="<game>two</game>"))
    store.record(1, 3, run.claims[2].attempt, WIN)  # no record: nothing to analyse
    # game 4 is not recorded yet: nothing to analyse either
    analyses = Analyses(store.backend)
    analyses.initialize()
    yield store, analyses
    store.close()


def test_one_job_per_recorded_game_and_setting(stores: tuple[LeagueStore, Analyses]) -> None:
    _, analyses = stores
    keys = analyses.request(SETTINGS)
    assert [(key.match_id, key.number) for key in keys] == [(1, 1), (1, 2)]
    assert analyses.request(SETTINGS) == keys  # asked again: the same jobs, none added
    assert set(analyses.statuses(SETTINGS).values()) == {AnalysisStatus.NEW}
    assert analyses.statuses(Settings(nodes=4000)) == {}  # another setting: other jobs
    assert settings_key(Settings(nodes=None, depth=3)) == "nodes=- depth=3"
    analyses.mark_queued_all(keys[:1])
    assert list(analyses.statuses(SETTINGS).values()) == [
        AnalysisStatus.QUEUED,
        AnalysisStatus.NEW,
    ]


def test_a_new_delivery_fences_off_the_older_attempt(stores: tuple[LeagueStore, Analyses]) -> None:
    _, analyses = stores
    key = analyses.request(SETTINGS)[0]
    first = analyses.start(key, "w1")
    assert first is not None and (first.attempt, first.record) == (1, "<game>one</game>")
    # The worker is presumed dead; the message comes again.
    second = analyses.start(key, "w2")
    assert second is not None and second.attempt == 2
    assert not analyses.finish(first, "late")  # the old attempt writes nothing
    assert analyses.progress(SETTINGS).running == 1
    assert analyses.finish(second, "annotated")
    assert not analyses.finish(second, "again")  # written once
    assert analyses.start(key, "w3") is None  # done: a duplicate message does nothing
    assert analyses.attempts(key) == 2
    assert analyses.results(SETTINGS) == [(key, "annotated", None)]
    progress = analyses.progress(SETTINGS)
    assert (progress.total, progress.done, progress.final) == (2, 1, False)


def test_failed_and_given_back_jobs(stores: tuple[LeagueStore, Analyses]) -> None:
    _, analyses = stores
    one, two = analyses.request(SETTINGS)
    job = analyses.start(one, "w1")
    assert job is not None and analyses.requeue(job)
    assert analyses.statuses(SETTINGS)[one] is AnalysisStatus.QUEUED
    job = analyses.start(one, "w1")
    assert job is not None and analyses.fail(job, "not a readable game record")
    assert analyses.start(one, "w2") is None  # failed is final
    analyses.fail_for_good(two, "dead-lettered")
    assert analyses.progress(SETTINGS).final
    assert [error for _, _, error in analyses.results(SETTINGS)] == [
        "not a readable game record",
        "dead-lettered",
    ]
    with pytest.raises(KeyError):
        analyses.start(replace(one, number=3), "w1")  # never requested
