"""analysis.suite and `piranhas-match positions` (analysis.positions): a suite of positions
played as real games from those positions; a bot that plays the analysis's best move scores
100 %, a random bot low."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

import pytest

from analysis import Analyser, Game, Settings, positions
from analysis.suite import Suite, SuiteError, export, loads
from bots import Bot, RandomBot, SearchBot
from engine import GameState, Team

NODES = 1000
BEST_BOT = Path(__file__).with_name("best_bot.py")


def lost_by_random(seed: int, random_side: Team) -> Game:
    state = start = GameState.initial(seed)
    bots: dict[Team, Bot] = {
        random_side: RandomBot(2),
        random_side.opponent: SearchBot(1, max_nodes=1500),
    }
    moves = []
    while not state.is_over:
        move = bots[state.current_team].choose(state, 1e9)
        moves.append(move)
        state = state.apply(move)
    names = ("random", "search") if random_side is Team.ONE else ("search", "random")
    return Game(start, tuple(moves), names, f"board {seed}")


@cache
def mistakes_suite() -> Suite:
    """The ?/?? of random's lost games against search (random as TWO, then as ONE)."""
    games = [lost_by_random(4, Team.TWO), lost_by_random(5, Team.ONE)]
    with Analyser(Settings(nodes=NODES)) as analyser:
        analyses = [analyser.analyse(game) for game in games]
    assert all(a.winner is not None and a.game.names[a.winner.value] == "search" for a in analyses)
    suite = export(analyses, "random")
    assert suite is not None
    return suite


def test_export_takes_the_losers_mistakes_and_the_file_round_trips() -> None:
    suite = mistakes_suite()
    assert {p.side for p in suite.positions} == {Team.ONE, Team.TWO}
    assert all(p.player == "random" and p.mark in ("?", "??") for p in suite.positions)
    assert all(p.played not in p.best for p in suite.positions)
    again = loads(suite.dumps())
    assert again == suite
    assert export([], None) is None


def test_a_broken_suite_is_refused_with_the_position() -> None:
    suite = mistakes_suite()
    document = suite.dumps().replace('"turn": ', '"turn": -', 1)
    with pytest.raises(SuiteError, match="position 1"):
        loads(document)
    with pytest.raises(SuiteError, match="not a position suite"):
        loads('{"format": "something else"}')


def small_suite(tmp_path: Path) -> Path:
    """Two positions of the suite, one of each side to move (the bot joins either slot)."""
    suite = mistakes_suite()
    picked = tuple(next(p for p in suite.positions if p.side is side) for side in Team)
    path = tmp_path / "suite.json"
    path.write_text(Suite(suite.settings, picked).dumps(), encoding="utf-8")
    return path


def test_a_bot_playing_the_best_move_scores_everything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = small_suite(tmp_path)
    command = f"{sys.executable} {BEST_BOT} --nodes {NODES}"
    status = positions.main([str(path), "--player1", command, "--log-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "score 100 %" in out


def test_a_random_bot_scores_low_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = small_suite(tmp_path)
    status = positions.main(
        [str(path), "--player1", "builtin:random --seed 1", "--log-dir", str(tmp_path)]
    )
    out = capsys.readouterr().out
    assert status == 1, out
    assert "score 100 %" not in out


def test_match_analyze_analyses_the_games_player1_lost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli import match

    status = match.main(
        [
            "--player1",
            "builtin:random --seed 3",
            "--player2",
            "builtin:greedy --seed 4",
            "--games",
            "2",
            "--concurrency",
            "1",
            "--log-dir",
            str(tmp_path),
            "--analyze",
            "1000",
            "--no-timeout",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    reports = sorted(tmp_path.glob("analysis-game*.json"))
    assert len(reports) == 2, out  # random loses both
    assert "turning point" in out and "accuracy" in out
