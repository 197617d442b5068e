"""The piranhas-league command: schedule, standings (with exports) and verify."""

from __future__ import annotations

import io
import json
import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from cli.league import _print_standings, main
from engine import GameState, PlayerEntry, Team, game_result
from league.config import load_league
from league.records import MAX_RECORD_BYTES, read_record, record_game, write_record
from league.schedule import build_schedule
from league.standings import compute_standings
from league.store import GameOutcome, LeagueStore


@pytest.fixture
def league_file(tmp_path: Path, make_league_text: Callable[..., str]) -> Path:
    path = tmp_path / "league.toml"
    path.write_text(make_league_text(["a", "b", "c"], 'games_per_match = 2\ndatabase = "l.db"'))
    return path


def test_schedule_prints_rounds_and_boards(
    league_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schedule", str(league_file)]) == 0
    out = capsys.readouterr().out
    config = load_league(league_file)
    first = build_schedule(config)[0]
    assert out.splitlines()[0] == "Test League: round-robin, 3 matches of 2 games, seed 0"
    assert "Round 1" in out and "Round 3" in out
    assert f"match 1: Team {first.home.upper()} - Team {first.away.upper()}" in out
    assert str(first.games[0].board_seed) in out


def test_standings_without_games_and_exports(
    league_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["standings", str(league_file), "--json", str(tmp_path / "s.json")]
    args += ["--csv", str(tmp_path / "s.csv"), "--html", str(tmp_path / "s.html")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("Test League: 0/3 matches complete, 0/6 games recorded\n#")
    assert "Team A" in out
    assert not (tmp_path / "l.db").exists()  # a read-only command creates no database
    data = json.loads((tmp_path / "s.json").read_text())
    assert [row["match_points"] for row in data["standings"]] == [0, 0, 0]
    assert (tmp_path / "s.csv").read_text().startswith("rank,team,name,")
    assert "<table>" in (tmp_path / "s.html").read_text()


def test_standings_read_the_store(
    league_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = load_league(league_file)
    store = LeagueStore.sqlite(config.database)
    store.initialize(config, build_schedule(config))
    while (claim := store.claim_next("test")) is not None:
        # "c" wins every game it plays; the others draw.
        one, two = claim.game.team_one, claim.game.team_two
        if "c" in (one, two):
            points = (2, 0) if one == "c" else (0, 2)
            outcome = GameOutcome(points, (9, 4), "c", True, "")
        else:
            outcome = GameOutcome((1, 1), (5, 5), None, True, "")
        store.record(claim.match_id, claim.number, claim.attempt, outcome)
    store.close()
    assert main(["standings", str(league_file), "--json", str(tmp_path / "s.json")]) == 0
    assert "3/3 matches complete, 6/6 games recorded" in capsys.readouterr().out
    rows = json.loads((tmp_path / "s.json").read_text())["standings"]
    assert (rows[0]["team"], rows[0]["match_points"], rows[0]["siegpunkte"]) == ("c", 4, 8)


def test_rich_table_on_a_terminal(league_file: Path) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    config = load_league(league_file)
    out = Terminal()
    _print_standings(compute_standings(config, build_schedule(config), []), out)
    text = out.getvalue()
    assert "Team B" in text and "Ø Schwarm" in text
    assert "━" in text or "─" in text  # drawn as a table


def test_a_bad_league_file_exits_2_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make_league_text: Callable[..., str]
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(make_league_text(["a", "b"], "games_per_match = 3"))
    assert main(["standings", str(path)]) == 2
    assert f"{path}:2: games_per_match: must be even" in capsys.readouterr().err


def _record_file(tmp_path: Path, name: str, tamper: bool) -> Path:
    rng = random.Random(7)
    state = GameState.initial(99)
    moves = []
    while not state.is_over:
        moves.append(rng.choice(state.legal_moves()))
        state = state.apply(moves[-1])
    entries = [PlayerEntry(Team.ONE, "A"), PlayerEntry(Team.TWO, "B")]
    record = record_game(
        league="L", round=1, match=1, number=1, date="2026-11-30T12:00:00Z", seed=99,
        team_ids=["a", "b"], moves=moves, move_ms=[], result=game_result(state, entries),
    )  # fmt: skip
    data = write_record(record)
    if tamper:
        data = data.replace(b"<siegpunkte>2<", b"<siegpunkte>1<", 1)
        assert read_record(data) != record
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_verify_exit_status_and_listing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _record_file(tmp_path, "good.xml", tamper=False)
    bad = _record_file(tmp_path, "bad.xml", tamper=True)
    assert main(["verify", str(good)]) == 0
    assert "1 of 1 records verified" in capsys.readouterr().out
    assert main(["verify", str(good), str(bad), str(tmp_path / "missing.xml")]) == 1
    out = capsys.readouterr().out
    assert f"{bad}: match 1 game 1: Siegpunkte of" in out
    assert f"{tmp_path / 'missing.xml'}: cannot read" in out
    assert "1 of 3 records verified" in out


def test_run_of_a_missing_league_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "x.toml"
    assert main(["run", str(missing)]) == 2
    assert f"{missing}: cannot read" in capsys.readouterr().err


@pytest.mark.timeout(30)  # before the fix the FIFO hung
def test_verify_reads_regular_files_only_and_at_most_the_record_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A record that is a link to /dev/zero, a FIFO, a directory or a huge file is refused
    with a clear error, without hanging and without reading it whole (issue 17 item 13)."""
    zero = tmp_path / "zero.xml"
    zero.symlink_to("/dev/zero")
    fifo = tmp_path / "fifo.xml"
    os.mkfifo(fifo)
    huge = tmp_path / "huge.xml"
    with huge.open("wb") as file:
        file.truncate(MAX_RECORD_BYTES * 50)  # sparse: 200 MiB that cost no disk
    good = _record_file(tmp_path, "good.xml", tamper=False)
    paths = [zero, fifo, tmp_path, huge, good]
    assert main(["verify", *map(str, paths)]) == 1
    out = capsys.readouterr().out
    assert f"{zero}: cannot read: not a regular file (a character device)" in out
    assert f"{fifo}: cannot read: not a regular file (a FIFO)" in out
    assert f"{tmp_path}: cannot read: not a regular file (a directory)" in out
    assert f"{huge}: cannot read: larger than {MAX_RECORD_BYTES} bytes" in out
    assert "1 of 5 records verified" in out
