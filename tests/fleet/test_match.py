"""Playing a match on this machine (`fleet.match`, through `play_local` on SQLite): games
recorded with their records, a crashing bot's game is a result (a loss), not a failure; how each
kind of team is started."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fleet.coordinator import play_local
from fleet.match import MatchEnd, launcher_for, needs_containers
from fleet.runs import RunStatus
from fleet.stores import open_store
from league.config import load_league, parse_league
from league.records import read_record, verify
from runner.game import Server
from runner.options import MatchError
from runner.players import ProcessLauncher

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


def test_each_kind_of_team_gets_its_launcher(tmp_path: Path) -> None:
    config = parse_league(
        'name = "Kinds"\n'
        '[[teams]]\nid = "proc"\ncommand = ["bot", "--fast"]\n'
        '[[teams]]\nid = "img"\nimage = "haie:v3"\n'
        '[limits]\ncpus = 2.0\nmemory = "1g"\npids = 99\n',
        base=tmp_path,
    )
    assert needs_containers(config)
    server = Server("127.0.0.1", 1, "pw", "test", 10.0, unix_socket=tmp_path / "server.sock")
    process = launcher_for(config, "proc", server, 7)
    assert isinstance(process, ProcessLauncher) and process.argv == ["bot", "--fast"]
    from sandbox import ContainerLauncher

    container = launcher_for(config, "img", server, 7)
    assert isinstance(container, ContainerLauncher)
    assert (container.image, container.match_id) == ("haie:v3", "7")
    assert (container.limits.cpus, container.limits.memory_mib, container.limits.pids) == (
        2,
        1024,
        99,
    )
    with pytest.raises(MatchError, match="Unix socket"):
        launcher_for(config, "img", Server("127.0.0.1", 1, "pw", "test", 10.0), 7)
