"""`piranhas-league run`: a whole league played on the match runner's core, in process mode.

The league is played through the real command (`cli.league.main`), then checked from the
outside: the standings against a computation of our own from the stored games, every stored
record against the engine (`league.records.verify`), the server-measured move times in the
records, and a tampered record through `piranhas-league verify`.
"""

from __future__ import annotations

import importlib.util
import io
import json
import sqlite3
import sys
from collections import defaultdict
from functools import partial
from pathlib import Path

import pytest
import trio

from cli.league import main
from engine import ViolationKind
from league.config import load_league
from league.records import read_record, verify
from league.run import (
    AsyncStore,
    LeagueRunError,
    admin_session,
    open_table,
    play_and_record,
    play_by_id,
)
from league.schedule import build_schedule
from league.standings import compute_standings
from league.store import LeagueStore, RecordStatus, StaleAttemptError
from tests.helpers.process import TEST_BOTS

FAST_BOT = [sys.executable, str(TEST_BOTS / "fast_bot.py")]
SOCHA_BOT = [sys.executable, str(TEST_BOTS / "random_bot.py")]
HAS_BUILTIN_BOTS = importlib.util.find_spec("cli.bot") is not None


def league_file(
    directory: Path, teams: dict[str, list[str] | str], extra: str = "", *, games: int = 2
) -> Path:
    """A league file in `directory` with `teams` (id -> command) and small timeouts."""
    lines = [
        'name = "Testliga"',
        f"games_per_match = {games}",
        "seed = 7",
        "concurrency = 2",
        extra,
        "[timeouts]",
        "soft = 2.0",
        "hard = 5.0",
        "startup = 20.0",
        "game = 120.0",
    ]
    for team_id, command in teams.items():
        lines += ["[[teams]]", f'id = "{team_id}"', f"command = {json.dumps(command)}"]
    path = directory / "liga.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def mixed_teams() -> dict[str, list[str] | str]:
    """Two built-in bots (fast test bots where piranhas-bot is missing), a socha bot and a
    seeded fast bot."""
    teams: dict[str, list[str] | str] = {}
    if HAS_BUILTIN_BOTS:
        teams["greedy"] = "builtin:greedy"
        teams["random"] = "builtin:random"
    else:
        teams["fast-a"] = FAST_BOT
        teams["fast-b"] = [*FAST_BOT, "--seed", "5"]
    teams["socha"] = SOCHA_BOT
    teams["fast-c"] = [*FAST_BOT, "--seed", "9"]
    return teams


def our_table(store: LeagueStore, team_ids: list[str]) -> dict[str, tuple[int, int, int]]:
    """(match points, Siegpunkte, games won) per team, computed from the stored games."""
    games_won: dict[tuple[int, str], int] = defaultdict(int)
    siegpunkte: dict[str, int] = defaultdict(int)
    won: dict[str, int] = defaultdict(int)
    teams_of_match: dict[int, set[str]] = defaultdict(set)
    for finished in store.finished_games():
        game, outcome = finished.game, finished.outcome
        teams_of_match[game.match_id] |= {game.team_one, game.team_two}
        siegpunkte[game.team_one] += outcome.siegpunkte[0]
        siegpunkte[game.team_two] += outcome.siegpunkte[1]
        if outcome.winner is not None:
            games_won[(game.match_id, outcome.winner)] += 1
            won[outcome.winner] += 1
    points: dict[str, int] = defaultdict(int)
    for match_id, (a, b) in ((m, sorted(t)) for m, t in teams_of_match.items()):
        wins_a, wins_b = games_won[(match_id, a)], games_won[(match_id, b)]
        points[a] += 2 if wins_a > wins_b else 1 if wins_a == wins_b else 0
        points[b] += 2 if wins_b > wins_a else 1 if wins_a == wins_b else 0
    return {team: (points[team], siegpunkte[team], won[team]) for team in team_ids}


@pytest.mark.socha
def test_a_four_team_league_is_played_to_the_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("socha")
    path = league_file(tmp_path, mixed_teams())

    assert main(["run", str(path), "--standings-every", "4", "--concurrency", "4"]) == 0

    out = capsys.readouterr().out
    config = load_league(path)
    matches = build_schedule(config)
    assert len(matches) == 6
    # One line per finished game, the standings every 4 games and at the end.
    assert sum(line.startswith("match ") for line in out.splitlines()) == 12
    assert out.count("Ø Schwarm") == 4
    store = LeagueStore.sqlite(config.database)
    try:
        progress = store.progress()
        assert (progress.finished, progress.pending, progress.running) == (12, 0, 0)
        finished = store.finished_games()
        standings = compute_standings(config, matches, finished)
        ours = our_table(store, [team.id for team in config.teams])
    finally:
        store.close()
    assert standings.matches_complete == 6
    assert {
        row.team_id: (row.match_points, row.siegpunkte, row.games_won) for row in standings.rows
    } == ours
    # Every game's record: the stored one verifies, has the server's time for every move,
    # names the teams in their seats, and the file next to the store is the same document.
    records_dir = tmp_path / "league.records"
    for game in finished:
        assert game.outcome.record is not None
        record = read_record(game.outcome.record.encode())
        assert verify(record) == []
        assert (record.match, record.number, record.seed) == (
            game.game.match_id,
            game.game.number,
            game.game.board_seed,
        )
        assert [p.team_id for p in record.players] == [game.game.team_one, game.game.team_two]
        assert record.moves and all(move.ms is not None for move in record.moves)
        file = records_dir / f"match{game.game.match_id:03d}-game{game.game.number}.xml"
        assert file.read_text(encoding="utf-8") == game.outcome.record

    # A tampered record: the recorded Siegpunkte no longer fit the moves.
    tampered = tmp_path / "tampered.xml"
    text = finished[0].outcome.record
    assert text is not None
    first_score = text.index("<siegpunkte>") + len("<siegpunkte>")
    wrong = "1" if text[first_score] != "1" else "0"
    tampered.write_text(text[:first_score] + wrong + text[first_score + 1 :], encoding="utf-8")
    capsys.readouterr()
    assert main(["verify", str(records_dir / "match001-game1.xml"), str(tampered)]) == 1
    report = capsys.readouterr().out
    assert f"{tampered}: match 1 game 1: Siegpunkte of ONE: recorded '{wrong}'" in report
    assert "1 of 2 records verified" in report

    # Nothing left to play: the same command again plays no game and changes nothing.
    before = sqlite3.connect(config.database).execute("SELECT * FROM results").fetchall()
    assert main(["run", str(path)]) == 0
    assert "12/12 games played" in capsys.readouterr().out
    after = sqlite3.connect(config.database).execute("SELECT * FROM results").fetchall()
    assert after == before


def test_docker_mode_without_a_docker_daemon_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Docker client that finds no daemon (the variable sandbox.docker_cli honours).
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    path = league_file(tmp_path, {"a": FAST_BOT, "b": FAST_BOT})
    path.write_text(
        path.read_text(encoding="utf-8") + '[[teams]]\nid = "c"\nimage = "bot:1"\n',
        encoding="utf-8",
    )
    assert main(["run", str(path)]) == 1  # an image team: docker mode by default
    assert "docker mode: no Docker daemon answers" in capsys.readouterr().err
    store = LeagueStore.sqlite(tmp_path / "league.sqlite")
    try:
        assert store.progress().running == 0  # nothing was claimed
    finally:
        store.close()


def test_an_image_team_cannot_run_in_process_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = league_file(tmp_path, {"a": FAST_BOT, "b": FAST_BOT})
    path.write_text(
        path.read_text(encoding="utf-8") + '[[teams]]\nid = "c"\nimage = "bot:1"\n',
        encoding="utf-8",
    )
    assert main(["run", str(path), "--mode", "process"]) == 2
    assert "team c: process mode needs a `command`" in capsys.readouterr().err


class Terminal(io.StringIO):
    """A captured stdout that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_run_shows_a_progress_bar_and_a_rich_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = league_file(tmp_path, {"a": FAST_BOT, "b": [*FAST_BOT, "--seed", "3"]})
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    assert main(["run", str(path)]) == 0
    out = terminal.getvalue()
    assert "match 1 game 1: a - b" in out and "match 1 game 2: b - a" in out
    assert "2/2" in out  # the bar's count
    assert "━" in out  # the bar
    assert "┃" in out or "│" in out  # rich's table, not the plain columns


async def test_a_stale_attempt_plays_but_cannot_record_and_the_newer_one_records(
    tmp_path: Path,
) -> None:
    """The unit a distributed worker calls: `play_and_record` under an attempt whose lease ran
    out and was handed to another worker is rejected by the store; the newer attempt's is not."""
    path = league_file(tmp_path, {"a": FAST_BOT, "b": [*FAST_BOT, "--seed", "3"]})
    config = load_league(path)
    now = [1_000_000.0]
    store = AsyncStore(partial(LeagueStore.sqlite, config.database, clock=lambda: now[0]))
    try:
        await store.call(store.store.initialize, config, build_schedule(config))
        old = await store.call(store.store.claim_next, "worker-1", lease_seconds=60)
        now[0] += 120  # worker-1 missed its lease
        new = await store.call(store.store.claim_next, "worker-2", lease_seconds=600)
        assert old is not None and new is not None and new.game == old.game
        assert new.attempt == old.attempt + 1
        with trio.fail_after(60):
            async with (
                open_table(config, mode="process", log_dir=tmp_path / "logs") as table,
                admin_session(table.server) as admin,
            ):
                with pytest.raises(StaleAttemptError):
                    await play_and_record(table, admin, store, old)
                assert await store.call(store.store.finished_games) == []
                with pytest.raises(LeagueRunError, match="match 1 game 9 is not in the"):
                    await play_by_id(table, admin, store, 1, 9, new.attempt, "worker-2")
                # By id, as a distributed worker gets it from a dispatcher's message.
                report = await play_by_id(
                    table, admin, store, new.match_id, new.number, new.attempt, "worker-2"
                )
        assert report.status is RecordStatus.RECORDED
        (finished,) = await store.call(store.store.finished_games)
        assert finished.attempt == new.attempt
        assert finished.outcome == report.outcome
    finally:
        store.close()


def test_a_bot_that_crashes_loses_its_games_and_the_league_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = league_file(tmp_path, {"steady": FAST_BOT, "crashy": [*FAST_BOT, "--crash-after", "3"]})
    assert main(["run", str(path)]) == 0
    config = load_league(path)
    store = LeagueStore.sqlite(config.database)
    try:
        finished = store.finished_games()
    finally:
        store.close()
    assert len(finished) == 2
    for game in finished:
        assert game.outcome.winner == "steady"
        assert not game.outcome.regular
        assert game.outcome.record is not None
        record = read_record(game.outcome.record.encode())
        assert verify(record) == []
        (penalised,) = [player for player in record.players if player.penalty is not None]
        assert penalised.team_id == "crashy"
        assert penalised.penalty is not None and penalised.penalty.kind.value == "LEFT"


@pytest.mark.parametrize(
    "command", ["no-such-bot-program --fast", "./missing-bot.sh", "./bad-interpreter.sh"]
)
def test_a_bot_command_that_does_not_exist_is_a_league_file_error_and_nothing_is_written(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    """Before: a Trio ExceptionGroup traceback, exit 1, league.sqlite and league.logs/ left
    behind (issue 17 item 18). Now the league file's error form, exit 2, checked first."""
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "bad-interpreter.sh"
    script.write_text("#!/nonexistent/interpreter\n")
    script.chmod(0o755)
    path = league_file(tmp_path, {"steady": FAST_BOT, "ghost": command})
    before = sorted(tmp_path.iterdir())
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    line = path.read_text().splitlines().index(f"command = {json.dumps(command)}") + 1
    program = command.split()[0]
    assert f"{path}:{line}: teams[1].command: the program {program!r} " in err
    if "interpreter" in command:
        assert "'/nonexistent/interpreter' in its #! line" in err
    else:
        assert f"the program {program!r} not found" in err
    assert "Traceback" not in err and "ExceptionGroup" not in err
    assert sorted(tmp_path.iterdir()) == before  # no store, no logs, no records


def test_a_device_as_the_store_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = league_file(tmp_path, {"a": FAST_BOT, "b": FAST_BOT})
    assert main(["run", str(path), "--db", "/dev/null"]) == 2
    err = capsys.readouterr().err
    assert "/dev/null: the store must be a regular file" in err
    assert "Traceback" not in err


def test_records_of_games_lost_by_an_illegal_move_verify(tmp_path: Path) -> None:
    """The refused move is the record's last <move> (docs/game-records.md) and verify checks
    it is refused with the penalty's reason. Before: the recorder kept applied moves only,
    and verify "corrected" the results of such games (issue 17 item 17)."""
    path = league_file(
        tmp_path,
        {"steady": FAST_BOT, "sloppy": [*FAST_BOT, "--illegal-at-turn", "6", "--seed", "2"]},
        games=4,
    )
    assert main(["run", str(path)]) == 0
    config = load_league(path)
    store = LeagueStore.sqlite(config.database)
    try:
        finished = store.finished_games()
    finally:
        store.close()
    assert len(finished) == 4
    for game in finished:
        assert game.outcome.winner == "steady" and not game.outcome.regular
        assert game.outcome.record is not None
        record = read_record(game.outcome.record.encode())
        assert verify(record) == [], game.game
        (penalised,) = [player for player in record.players if player.penalty is not None]
        assert penalised.team_id == "sloppy"
        assert penalised.penalty is not None
        assert penalised.penalty.kind is ViolationKind.RULE_VIOLATION
        last = record.moves[-1].move
        assert f"bei '{last}'" in penalised.penalty.detail  # the refused move, recorded
        assert record.moves[-1].ms is None  # never applied: no move time
    records = sorted(Path(f"{config.database.with_suffix('')}.records").glob("*.xml"))
    assert len(records) == 4
    assert main(["verify", *map(str, records)]) == 0
