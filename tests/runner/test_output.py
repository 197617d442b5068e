"""The runner's counting and live output: pairs, the figures block, the terminal display."""

from __future__ import annotations

import io

from engine import GameResult, PlayerEntry, Team
from runner.display import Display, LiveDisplay, display_for
from runner.scores import GameSummary, Scoreboard, player1_points


def game(number: int, winner: int | None) -> GameSummary:
    """Game `number` with player `winner` (0 = player1) winning, None for a draw; sides
    alternate as in a run."""
    one = (number - 1) % 2
    names = ("p1", "p2") if one == 0 else ("p2", "p1")
    entries = [PlayerEntry(Team.ONE, names[0]), PlayerEntry(Team.TWO, names[1])]
    if winner is None:
        return GameSummary(
            number,
            one,
            f"r{number}",
            GameResult(list(zip(entries, [(1, 5), (1, 5)], strict=True)), None, True, ""),
            10,
        )
    team = Team.ONE if (winner == 0) == (one == 0) else Team.TWO
    points = [(2, 9), (0, 3)] if team is Team.ONE else [(0, 3), (2, 9)]
    result = GameResult(list(zip(entries, points, strict=True)), team, True, "")
    return GameSummary(number, one, f"r{number}", result, 10)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_player1_points_follow_the_sides() -> None:
    assert [player1_points(game(n, 0)) for n in (1, 2)] == [1.0, 1.0]
    assert [player1_points(game(n, 1)) for n in (1, 2)] == [0.0, 0.0]
    assert player1_points(game(3, None)) == 0.5


def test_pentanomial_counts_finished_pairs_only() -> None:
    match = Scoreboard(("p1", "p2"), 8, paired=True, out=io.StringIO())
    # Pair 1: WW; pair 2: W + D = 1.5; pair 3: L + W = 1; pair 4: only game 7 (L) so far.
    for summary in (game(1, 0), game(2, 0), game(3, 0), game(4, None), game(5, 1), game(6, 0)):
        match.record(summary)
    match.record(game(7, 1))
    assert match.trinomial() == (2, 1, 4)
    assert match.pentanomial() == (0, 0, 1, 1, 1)
    assert Scoreboard(("p1", "p2"), 2, out=io.StringIO()).pentanomial() is None  # unpaired


def test_figures_block_every_n_games_but_not_after_the_last() -> None:
    out = io.StringIO()
    match = Scoreboard(("p1", "p2"), 4, paired=True, out=out, report_every=2)
    for summary in (game(1, 0), game(2, None), game(3, 1), game(4, 1)):
        match.record(summary)
    text = out.getvalue()
    assert text.count("Results of p1 vs p2") == 1
    assert "Results of p1 vs p2 (2 of 4 games):" in text
    assert "Wins: 1, Losses: 0, Draws: 1, Points: 1.5 (75.00 %)" in text
    assert "Ptnml(0-2): [0, 0, 0, 1, 0]" in text
    # The block comes after game 2's line and before game 3's.
    assert text.index("game 2/4") < text.index("Results of") < text.index("game 3/4")


def test_terminal_gets_a_progress_bar_other_streams_plain_lines() -> None:
    assert type(display_for(io.StringIO(), 3)) is Display
    terminal = Terminal()
    display = display_for(terminal, 3)
    assert isinstance(display, LiveDisplay)
    match = Scoreboard(("p1", "p2"), 3, out=terminal)
    with display:
        match.display = display
        match.record(game(1, 0))
        match.record(game(2, None))
        assert display.bar.tasks[0].completed == 2
        summary = display.bar.tasks[0].fields["summary"]
        assert summary.startswith("+1 =1 -0  Elo 190.8 (95 % interval unbounded)  LOS 92.1%"), (
            summary
        )
    text = terminal.getvalue()
    assert "game 1/3: p1 (ONE) vs p2 (TWO) 2:0, winner p1" in text
    assert "game 2/3: p2 (ONE) vs p1 (TWO) 1:1, draw" in text
