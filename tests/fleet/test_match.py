"""Playing a match on this machine (`fleet.match`, through `play_local` on SQLite): games
recorded with their records, a crashing bot's game is a result (a loss), not a failure; the
same games and records as the one-machine league (`league.run`), whose unit it plays on."""

from __future__ import annotations

import logging
import sys
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest
import structlog
import trio

from fleet.coordinator import initialize, play_local
from fleet.match import FleetStore, MatchEnd, TableHost, worker_config
from fleet.runs import RunStatus
from fleet.stores import open_store
from launching import MatchError
from league.config import load_league, parse_league
from league.records import read_record, verify
from league.run import AsyncStore, container_label, default_mode, run_league
from league.schedule import Match, build_schedule
from league.store import LeagueStore, StoredGame
from server.exits import find_exception
from server.logs import configure_logging
from tests.helpers.logs import restored_logging

ROOT = Path(__file__).resolve().parents[2]
FAST_BOT = ROOT / "tests" / "bots" / "fast_bot.py"


def test_a_crashing_bot_loses_its_games_and_the_match_is_done(tmp_path: Path) -> None:
    league = tmp_path / "league.toml"
    league.write_text(
        'name = "Crash"\ngames_per_match = 2\nseed = 1\n'
        f'[[teams]]\nid = "steady"\ncommand = ["{sys.executable}", "{FAST_BOT}", "--seed", "1"]\n'
        f'[[teams]]\nid = "crashy"\ncommand = ["{sys.executable}", "{FAST_BOT}", '
        '"--crash-after", "2"]\n'
    )
    config = load_league(league)
    database = str(tmp_path / "league.sqlite")
    assert play_local(config, database, tmp_path / "logs") == {1: MatchEnd.DONE}
    store, runs = open_store(database)
    try:
        games = store.finished_games()
        assert [g.outcome.winner for g in games] == ["steady", "steady"]
        assert all("crashy" in g.outcome.reason for g in games)
        [state] = runs.states()
        assert (state.status, state.attempt) == (RunStatus.DONE, 1)
        for game in games:  # the record replays to the recorded result
            assert game.outcome.record is not None
            assert verify(read_record(game.outcome.record.encode())) == []
    finally:
        store.close()


def test_a_league_file_with_container_teams_is_played_in_docker_mode(tmp_path: Path) -> None:
    commands = 'name = "Kinds"\n' + "".join(
        f'[[teams]]\nid = "{team}"\ncommand = ["bot"]\n' for team in ("a", "b")
    )
    assert default_mode(parse_league(commands, base=tmp_path)) == "process"
    mixed = commands + '[[teams]]\nid = "img"\nimage = "haie:v3"\n'
    assert default_mode(parse_league(mixed, base=tmp_path)) == "docker"


def test_workers_on_one_host_never_sweep_each_other_s_containers(tmp_path: Path) -> None:
    """Opening a docker table removes the containers of its label: each worker has its own,
    stable across restarts under the same name."""
    config = parse_league(
        'name = "L"\n'
        + "".join(f'[[teams]]\nid = "{team}"\nimage = "bot:{team}"\n' for team in ("a", "b")),
        base=tmp_path,
    )
    labels = [container_label(worker_config(config, name)) for name in ("h-1", "h-2", "h-1")]
    assert labels[0] != labels[1] and labels[0] == labels[2]
    assert container_label(config) not in labels
    assert worker_config(config, "h-1").teams == config.teams


def _league_text(database: Path) -> str:
    return (
        f'name = "Same"\ngames_per_match = 2\nseed = 5\ndatabase = "{database}"\n'
        f'[[teams]]\nid = "one"\ncommand = ["{sys.executable}", "{FAST_BOT}", "--seed", "1"]\n'
        f'[[teams]]\nid = "two"\ncommand = ["{sys.executable}", "{FAST_BOT}", "--seed", "2"]\n'
        f'[[teams]]\nid = "three"\ncommand = ["{sys.executable}", "{FAST_BOT}", "--seed", "3"]\n'
    )


def _without_date(game: StoredGame) -> tuple[object, ...]:
    assert game.outcome.record is not None
    record = read_record(game.outcome.record.encode())
    # Dates and the bots' move times differ between two runs; everything else must not.
    moves = tuple(move.move for move in record.moves)
    return (
        game.game,
        replace(game.outcome, record=None),
        replace(record, date="", moves=()),
        moves,
    )


def test_a_worker_records_what_the_one_machine_league_records(tmp_path: Path) -> None:
    """The same league file and seeds: `piranhas-league run` and the distributed match code
    (here without a queue) record the same games, outcomes and records (dates aside)."""
    local_file, fleet_file = tmp_path / "local.toml", tmp_path / "fleet.toml"
    local_file.write_text(_league_text(tmp_path / "local.sqlite"))
    fleet_file.write_text(_league_text(tmp_path / "fleet.sqlite"))
    local = load_league(local_file)
    store = AsyncStore(partial(LeagueStore.sqlite, local.database))

    async def run_local() -> int:
        await store.call(store.store.initialize, local, build_schedule(local))
        with trio.fail_after(120):
            return await run_league(local, store, mode="process", log_dir=tmp_path / "local")

    try:
        assert trio.run(run_local) == 6
        local_games = store.call_sync(store.store.finished_games)
    finally:
        store.close()
    fleet = load_league(fleet_file)
    ends = play_local(fleet, str(fleet.database), tmp_path / "fleet")
    assert ends == {match: MatchEnd.DONE for match in (1, 2, 3)}
    fleet_store, _ = open_store(str(fleet.database))
    try:
        fleet_games = fleet_store.finished_games()
    finally:
        fleet_store.close()
    assert len(fleet_games) == 6
    assert [_without_date(g) for g in fleet_games] == [_without_date(g) for g in local_games]


def test_a_worker_keeps_its_table_across_matches_and_opens_a_fresh_one_after_a_failure(
    tmp_path: Path,
) -> None:
    """TableHost: the second match of a worker plays on the first one's table; a match that
    fails (a bot that cannot start) closes it, and the next match opens a new one."""
    bot = f'["{sys.executable}", "{FAST_BOT}", "--seed", "1"]'
    config = parse_league(
        'name = "Keep"\ngames_per_match = 2\nseed = 1\n'
        + "".join(f'[[teams]]\nid = "{team}"\ncommand = {bot}\n' for team in ("a", "b", "c"))
        + '[[teams]]\nid = "gone"\ncommand = ["/nonexistent/bot"]\n',
        base=tmp_path,
    )
    database = str(tmp_path / "keep.sqlite")
    matches = initialize(config, database)
    good = [m for m in matches if "gone" not in (m.home, m.away)]
    bad = next(m for m in matches if "gone" in (m.home, m.away))
    db = FleetStore(database)
    host = TableHost(config, "w1", tmp_path / "logs")
    try:

        def play(match: Match) -> MatchEnd:
            run = db.call_sync(db.runs.start, match.id, "w1")
            assert run is not None
            return host.play_match(match, run, db)

        assert [play(match) for match in good[:2]] == [MatchEnd.DONE, MatchEnd.DONE]
        assert host.opened == 1
        with pytest.raises(BaseException) as failed:
            play(bad)
        assert "nonexistent" in str(find_exception(failed.value, MatchError))
        assert play(good[2]) is MatchEnd.DONE
        assert host.opened == 2
        assert len(db.call_sync(db.store.finished_games)) == 6
    finally:
        host.close()
        db.close()


def test_a_workers_lines_go_to_its_log_while_its_table_is_open(tmp_path: Path) -> None:
    """The worker's process keeps its logging while TableHost keeps a table (a game server
    in this process) open between matches: its own and Dramatiq's lines in worker.log, the
    game server's in server.log (before, the open table's server.log took them all)."""
    bot = f'["{sys.executable}", "{FAST_BOT}", "--seed", "1"]'
    config = parse_league(
        'name = "Logs"\ngames_per_match = 2\nseed = 1\n'
        + "".join(f'[[teams]]\nid = "{team}"\ncommand = {bot}\n' for team in ("a", "b")),
        base=tmp_path,
    )
    database = str(tmp_path / "logs.sqlite")
    [match] = initialize(config, database)
    with restored_logging(), (tmp_path / "worker.log").open("a", encoding="utf-8") as file:
        configure_logging("console", "info", stream=file, cache=False)  # as fleet.worker does
        db = FleetStore(database)
        host = TableHost(config, "w1", tmp_path / "logs")
        try:
            run = db.call_sync(db.runs.start, match.id, "w1")
            assert run is not None
            assert host.play_match(match, run, db) is MatchEnd.DONE
            # The table is open (kept for the next match): the worker's thread logs.
            structlog.get_logger("fleet.worker").info("nothing to do", match=match.id)
            logging.getLogger("dramatiq.worker.Worker").info("Shutting down...")
        finally:
            host.close()
            db.close()
    worker = (tmp_path / "worker.log").read_text(encoding="utf-8")
    served = (tmp_path / "logs" / "server.log").read_text(encoding="utf-8")
    assert "nothing to do" in worker and "dramatiq.worker.Worker: Shutting down..." in worker
    assert "nothing to do" not in served and "Shutting down" not in served
    assert "listening" in served and "server stopped" in served
    assert "listening" not in worker
