"""Freezing a season: the active versions' uploads become the teams of a league file that
`piranhas-league` reads, plays and ranks by the SC rules."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ladder.season import freeze
from ladder.store import LadderError, LadderStore
from ladder.work import upload_path
from league.config import BotKind, load_league
from tests.helpers.ladder import FakeClock, teams_with_versions
from tests.helpers.process import REPO, environment

FAST_BOT = REPO / "tests" / "bots" / "fast_bot.py"


def write_upload(data: Path, store: LadderStore, version_id: int, files: dict[str, str]) -> None:
    version = store.version(version_id)
    assert version is not None
    path = upload_path(data, version.team_id, version.id)
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o100755 if name.endswith(".sh") else 0o100644) << 16
            info.create_system = 3
            archive.writestr(info, text)


def start_sh(command: str) -> str:
    return f'#!/bin/sh\ncd "$(dirname "$0")"\nexec {command} "$@"\n'


@pytest.fixture
def store(tmp_path: Path) -> LadderStore:
    return LadderStore.open(str(tmp_path / "ladder.sqlite"), clock=FakeClock())


def test_the_active_versions_become_the_teams_of_a_league_file(
    tmp_path: Path, store: LadderStore
) -> None:
    data = tmp_path / "data"
    (t1, v1), (t2, v2), (t3, v3) = teams_with_versions(store, 3)
    write_upload(data, store, v1, {"start.sh": start_sh("./bot"), "bot": "binary"})
    write_upload(data, store, v2, {"client.jar": "PK"})
    write_upload(data, store, v3, {"inner/main.py": "print()", "inner/lib.py": ""})
    store.set_suspended(t3, True, by="admin")  # not active: not in the season
    league = freeze(store, tmp_path / "season.toml", "Season 1", data_dir=data, by="ada", seed=4)
    config = load_league(league)
    assert (config.name, config.games_per_match, config.seed) == ("Season 1", 6, 4)
    assert [(t.id, t.name, t.bot.kind) for t in config.teams] == [
        (f"t{t1}", "T1", BotKind.FOLDER),
        (f"t{t2}", "T2", BotKind.FOLDER),
    ]
    first, second = (team.bot.folder for team in config.teams)
    assert first is not None and second is not None
    assert (first / "start.sh").read_text() == start_sh("./bot")  # the upload's own
    assert (first / "bot").read_text() == "binary"
    written = (second / "start.sh").read_text()
    assert 'exec java -jar client.jar "$@"' in written
    assert (second / "start.sh").stat().st_mode & 0o111
    assert config.database == tmp_path / "season" / "league.sqlite"
    assert first == tmp_path / "season" / "bots" / f"t{t1}-v{v1}"
    entry = store.audit_log()[0]
    assert (entry.actor, entry.action) == ("ada", "season.freeze")
    assert f"version {v1}" in entry.detail and f"version {v3}" not in entry.detail
    with pytest.raises(LadderError, match="never overwritten"):
        freeze(store, tmp_path / "season.toml", "Season 1", data_dir=data)


def test_a_python_main_in_a_folder_gets_a_start_sh(tmp_path: Path, store: LadderStore) -> None:
    data = tmp_path / "data"
    (_, v1), (_, v2) = teams_with_versions(store, 2)
    write_upload(data, store, v1, {"bot/main.py": "print('hi')"})
    write_upload(data, store, v2, {"start.sh": start_sh("true")})
    config = load_league(freeze(store, tmp_path / "s.toml", "S", data_dir=data))
    folder = config.teams[0].bot.folder
    assert folder is not None
    text = (folder / "start.sh").read_text()
    assert 'cd "$(dirname "$0")/bot"' in text and 'exec python3 main.py "$@"' in text


def test_a_broken_or_missing_upload_stops_the_freeze_and_leaves_nothing(
    tmp_path: Path, store: LadderStore
) -> None:
    data = tmp_path / "data"
    (_, v1), (_, v2) = teams_with_versions(store, 2)
    write_upload(data, store, v1, {"start.sh": start_sh("true")})
    with pytest.raises(LadderError, match="missing"):
        freeze(store, tmp_path / "s.toml", "S", data_dir=data)
    write_upload(data, store, v2, {"../../escape.sh": "x", "start.sh": start_sh("true")})
    with pytest.raises(LadderError, match="cannot be frozen"):
        freeze(store, tmp_path / "s.toml", "S", data_dir=data)
    assert (
        sorted(p.name for p in tmp_path.iterdir()) == ["data", "ladder.sqlite"]
        or not (tmp_path / "s").exists()
    )
    assert not list(tmp_path.glob(".s-*")) and not (tmp_path / "escape.sh").exists()
    assert all(e.action != "season.freeze" for e in store.audit_log())


def test_a_season_needs_two_active_teams(tmp_path: Path, store: LadderStore) -> None:
    teams_with_versions(store, 1)
    with pytest.raises(LadderError, match="two teams"):
        freeze(store, tmp_path / "s.toml", "S", data_dir=tmp_path)


@pytest.mark.slow  # real games: about 6 s on 2 cores
def test_piranhas_league_plays_the_frozen_season_and_ranks_it(
    tmp_path: Path, store: LadderStore
) -> None:
    data = tmp_path / "data"
    (t1, v1), (t2, v2) = teams_with_versions(store, 2)
    bot = start_sh(f"{sys.executable} {FAST_BOT}")
    write_upload(data, store, v1, {"start.sh": bot})
    write_upload(data, store, v2, {"start.sh": bot})
    league = freeze(
        store, tmp_path / "season.toml", "S", data_dir=data, docker=False, games_per_match=2
    )
    command = [sys.executable, "-m", "cli.league"]
    env = environment()
    run = subprocess.run(
        [*command, "run", str(league), "--mode", "process"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    table = tmp_path / "standings.json"
    standings = subprocess.run(
        [*command, "standings", str(league), "--json", str(table)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert standings.returncode == 0, standings.stdout + standings.stderr
    document = json.loads(table.read_text())
    assert document["progress"]["games_recorded"] == document["progress"]["games_total"] == 2
    rows = document["standings"]
    assert sorted(row["team"] for row in rows) == [f"t{t1}", f"t{t2}"]
    assert [row["rank"] for row in rows] == [1, 2]
    assert all(row["games"] == 2 for row in rows)
    # The SC's match points: 2 for a won match, 1 each for a draw.
    assert sorted(row["match_points"] for row in rows) in ([0, 2], [1, 1])


def test_the_season_command_freezes_into_the_data_directory_and_prints_ratings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.ladder import main

    data = tmp_path / "data"
    data.mkdir()
    store = LadderStore.open(str(data / "ladder.sqlite"))
    (_, v1), (_, v2) = teams_with_versions(store, 2)
    for version in (v1, v2):
        write_upload(data, store, version, {"start.sh": start_sh("true")})
    store.close()
    assert main(["season", "freeze", "Herbst 2026", "--data", str(data), "--games", "2"]) == 0
    league = data / "seasons" / "herbst-2026.toml"
    assert f"piranhas-league run {league}" in capsys.readouterr().out
    config = load_league(league)
    assert (config.name, config.games_per_match, len(config.teams)) == ("Herbst 2026", 2, 2)
    assert main(["season", "ratings", "--data", str(data), "--recompute"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[:2] for line in lines] == [["1", "T1"], ["2", "T2"]]
    assert "1500 ± 246\t0 games" in lines[0]
    # The data directory is found from the season's path (the admin page's call).
    store = LadderStore.open(str(data / "ladder.sqlite"))
    try:
        again = freeze(store, data / "seasons" / "winter.toml", "Winter")
        assert load_league(again).teams[0].bot.folder == data / "seasons" / "winter" / "bots" / (
            f"t1-v{v1}"
        )
    finally:
        store.close()
