"""A league's analysis through the league's own queue (analysis jobs, the second kind of work):
two workers analyse every recorded game, and the annotated records equal those of the
one-machine `piranhas-league analyze` byte for byte; every job runs once (attempt 1), a
duplicate delivery of a done job writes nothing, and the same command again sends nothing.
"""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path

import pytest

from analysis import Settings
from cli.analyze import analyze_league
from cli.league import main as league_main
from fleet import coordinator
from fleet.analyses import Analyses, AnalysisStatus, record_name
from fleet.queue import declare_analysis_actor, make_broker
from fleet.runs import RunStatus
from fleet.stores import open_store
from league.config import load_league

from .conftest import StartWorker, league_text

pytestmark = [pytest.mark.distributed, pytest.mark.timeout(600)]

NODES = 1000  # the least: the test is about the queue, not the search


def _local_analysis(records: dict[str, bytes], folder: Path) -> dict[str, bytes]:
    """The records annotated by the one-machine `piranhas-league analyze`."""
    folder.mkdir()
    for name, data in records.items():
        (folder / name).write_bytes(data)
    args = argparse.Namespace(nodes=NODES, depth=None, concurrency=1)
    assert analyze_league(folder, args, io.StringIO()) == 0
    return {path.name: path.read_bytes() for path in sorted(folder.glob("*.xml"))}


def test_a_league_s_games_analysed_by_workers_equal_the_local_analysis(
    tmp_path: Path,
    postgres_dsn: str,
    redis_url: str,
    start_worker: StartWorker,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    league = tmp_path / "league.toml"
    league.write_text(league_text(name="Analysed", teams=3))
    config = load_league(league)
    coordinator.enqueue(config, postgres_dsn, redis_url)
    workers = [start_worker(league, postgres_dsn, redis_url, f"w{n}") for n in (1, 2)]
    states = coordinator.wait_until_final(config, postgres_dsn, interval=0.2, timeout=120)
    assert {state.status for state in states} == {RunStatus.DONE}
    store, _ = open_store(postgres_dsn)
    try:
        raw = {
            record_name(game.game.match_id, game.game.number): str(game.outcome.record).encode()
            for game in store.finished_games()
        }
    finally:
        store.close()
    assert len(raw) == 6

    # The command an operator types (the URL comes from the environment, like distribute).
    monkeypatch.setenv("PIRANHAS_DATABASE", postgres_dsn)
    monkeypatch.setenv("PIRANHAS_REDIS_URL", redis_url)
    out = tmp_path / "annotated"
    argv = ["analyze", str(league), "--distributed", "--nodes", str(NODES), "--interval", "0.2"]
    assert league_main([*argv, "--records", str(out)]) == 0
    distributed = {path.name: path.read_bytes() for path in sorted(out.glob("*.xml"))}
    assert distributed == _local_analysis(raw, tmp_path / "local")
    assert all(b'<analysis version="1" nodes="1000"' in data for data in distributed.values())

    settings = Settings(nodes=NODES)
    store, _ = open_store(postgres_dsn)
    analyses = Analyses(store.backend)
    try:
        statuses = analyses.statuses(settings)
        assert set(statuses.values()) == {AnalysisStatus.DONE}
        assert {analyses.attempts(key) for key in statuses} == {1}  # each job once
        # The workers took the jobs from the league's queue, each job once.
        said = "".join(worker.output() for worker in workers)
        assert said.count(": attempt 1 done") == 6
        # A duplicate delivery of a done job (Dramatiq delivers at least once) does nothing.
        key = next(iter(statuses))
        broker = make_broker(redis_url)
        actor = declare_analysis_actor(
            broker, lambda *_: None, coordinator.queue_of(config, postgres_dsn)
        )
        actor.send(*key.as_args())
        broker.close()
        time.sleep(2.0)
        assert analyses.attempts(key) == 1
        assert (
            analyses.results(settings)[0][1] == distributed[record_name(key.match_id, 1)].decode()
        )
    finally:
        store.close()
    # Resumable: everything is done, so the same command sends nothing and writes the same.
    assert coordinator.enqueue_analyses(config, postgres_dsn, redis_url, settings) == []
