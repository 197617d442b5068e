"""`bench.league --overhead` gives piranhas-match the league's boards: both tools then play
every game on the same start board, with the same side to move first."""

from __future__ import annotations

import sys
from pathlib import Path

from bench.league import league_boards, seeded_bot_command, write_league
from league.config import load_league
from league.schedule import build_schedule
from runner.options import parse_options
from runner.schedule import game_spec


def test_piranhas_match_plays_the_league_s_boards_game_by_game(tmp_path: Path) -> None:
    games = 6  # a league plays whole pairs
    league = write_league(tmp_path, 2, games, 2, "greedy", seed=5)
    boards = league_boards(league, tmp_path / "boards.txt")
    (match,) = build_schedule(load_league(league))
    players = ["--player1", sys.executable, "--player2", sys.executable]
    options = parse_options([*players, "--games", str(games), "--boards", str(boards)], threads=2)
    specs = [game_spec(options, index) for index in range(games)]
    assert [spec.seed for spec in specs] == [game.board_seed for game in match.games]
    # player1 (the league's home team) moves first in the odd-numbered games of both tools.
    home_first = [game.team_one == match.home for game in match.games]
    assert [spec.one == 0 for spec in specs] == home_first
    assert len(set(boards.read_text().split())) == games // 2


def test_the_bots_tie_breaks_are_seeded_for_the_same_games() -> None:
    command = seeded_bot_command("greedy")
    if command[0].startswith("builtin:"):
        assert command == ["builtin:greedy", "--seed", "1"]
