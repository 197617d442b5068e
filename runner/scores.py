"""Counting and printing: per-player scores as the official TestClient aggregates them, one
line per game, the final table."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TextIO

from engine import GameResult, Team
from runner.display import Display
from runner.report import elo_text, figures_block, sprt_conclusion
from runner.stats import Estimate, Pentanomial, Sprt, SprtStatus, Trinomial, estimate
from runner.timing import TimeReport


@dataclass
class PlayerScore:
    """One player's totals over the games played so far."""

    name: str
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    points: int = 0  # Siegpunkte, summed
    swarm: float = 0.0  # Schwarmgröße, running mean (official AVERAGE aggregation)
    violations: int = 0  # irregular games this player lost (the violator loses)

    def add(self, team: Team, result: GameResult, points: int, swarm: int) -> None:
        """Count one game in which this player played `team`."""
        self.games += 1
        self.points += points
        self.swarm += (swarm - self.swarm) / self.games
        if result.winner is None:
            self.draws += 1
        elif result.winner is team:
            self.wins += 1
        else:
            self.losses += 1
            if not result.regular:
                self.violations += 1


@dataclass
class GameSummary:
    """One finished game as the runner reports it."""

    number: int  # 1-based
    one: int  # index of the player holding slot 0 (team ONE)
    room_id: str
    result: GameResult
    turn: int | None
    seed: int | None = None  # the board seed, when the board was the seeded one
    notes: list[str] = field(default_factory=list)


def player_at(slot: int, one: int) -> int:
    """The player (0 = player1) holding `slot` in a game where player `one` holds slot 0."""
    return one if slot == 0 else 1 - one


def first_player(game_index: int) -> int:
    """Who holds slot 0 in game `game_index` (0-based): player1 in even games (official)."""
    return game_index % 2


@dataclass
class Scoreboard:
    """The run's tally and its printed output."""

    names: tuple[str, str]
    games: int
    scores: tuple[PlayerScore, PlayerScore] = field(init=False)
    played: list[GameSummary] = field(default_factory=list)
    paired: bool = False  # games 2p+1 and 2p+2 form a pair (--seed or --boards)
    # Looked up at run time, not import time: tests and callers may replace sys.stdout.
    out: TextIO = field(default_factory=lambda: sys.stdout)
    report_every: int = 0  # a block of figures every N counted games (0 = never)
    display: Display = field(init=False)
    sprt: Sprt | None = None  # --sprt: stop as soon as it accepts a hypothesis
    times: TimeReport | None = None  # move times and irregular losses per bot

    def __post_init__(self) -> None:
        self.scores = (PlayerScore(self.names[0]), PlayerScore(self.names[1]))
        self.display = Display(self.out)

    @property
    def irregular(self) -> int:
        """Games that ended by a violation."""
        return sum(not game.result.regular for game in self.played)

    def record(self, game: GameSummary) -> None:
        """Count a finished game and print its line."""
        self.restore(game)
        self.display.line(game_line(game, self.names, self.games))
        self.display.progress(len(self.played), self.games, self.running_figures())
        count = len(self.played)
        if self.report_every and count % self.report_every == 0 and count < self.games:
            self.display.line(self.counts_block())

    def restore(self, game: GameSummary) -> None:
        """Count a finished game without printing it (a game of a resumed run)."""
        for slot, (entry, (points, swarm)) in enumerate(game.result.scores[:2]):
            self.scores[player_at(slot, game.one)].add(entry.team, game.result, points, swarm)
        self.played.append(game)

    def trinomial(self) -> tuple[int, int, int]:
        """Player1's (losses, draws, wins)."""
        first = self.scores[0]
        return first.losses, first.draws, first.wins

    def counts(self) -> Trinomial:
        """Player1's per-game counts."""
        losses, draws, wins = self.trinomial()
        return Trinomial(losses, draws, wins)

    def pairs(self) -> Pentanomial | None:
        """With paired boards: player1's counts over the finished pairs (WL tracked)."""
        if not self.paired:
            return None
        points = {game.number: player1_points(game) for game in self.played}
        total = Pentanomial(wl=0)
        for number in sorted(points):
            second = points.get(number + 1)
            if number % 2 == 1 and second is not None:
                total = total + Pentanomial.of_pair(points[number], second)
        return total

    def estimate(self) -> Estimate:
        """Elo, nElo, LOS, draw ratio so far: from the pairs with paired boards (as fastchess),
        else from the games."""
        pairs = self.pairs()
        return estimate(self.counts() if pairs is None else pairs)

    def sprt_status(self) -> SprtStatus | None:
        """The SPRT's state (None without --sprt). With paired boards only finished pairs
        count, so a decision falls after a pair."""
        if self.sprt is None:
            return None
        pairs = self.pairs()
        return self.sprt.status(self.counts() if pairs is None else pairs)

    def running_figures(self) -> str:
        """The progress bar's summary: W/D/L, Elo ± and LOS (and the LLR with --sprt)."""
        losses, draws, wins = self.trinomial()
        text = f"+{wins} ={draws} -{losses}"
        figures = self.estimate()
        if len(self.played) >= 2:
            text += f"  Elo {elo_text(figures, '.1f', '±')}  LOS {figures.los:.1%}"
        if self.sprt is not None:
            pairs = self.pairs()
            text += f"  LLR {self.sprt.llr(self.counts() if pairs is None else pairs):.2f}"
        return text

    def pentanomial(self) -> tuple[int, int, int, int, int] | None:
        """With paired boards: over the pairs whose two games (2p+1, 2p+2) are both finished,
        how many gave player1 0, ½, 1, 1½, 2 points (LL, LD, DD+WL, WD, WW); else None."""
        if not self.paired:
            return None
        points = {game.number: player1_points(game) for game in self.played}
        counts = [0, 0, 0, 0, 0]
        for number, first in points.items():
            second = points.get(number + 1)
            if number % 2 == 1 and second is not None:
                counts[round((first + second) * 2)] += 1
        return counts[0], counts[1], counts[2], counts[3], counts[4]

    def say(self, text: str) -> None:
        """Print a line between the game lines."""
        self.display.line(text)

    def counts_block(self) -> str:
        """The figures so far, from player1's side (fastchess layout: Elo, nElo, LOS, draw
        ratio, W/L/D, pentanomial, LLR)."""
        rule = "-" * 50
        block = figures_block(
            self.names[0],
            self.names[1],
            self.counts(),
            self.pairs(),
            self.sprt,
            conditions=f"{len(self.played)} of {self.games} games",
        )
        return f"{rule}\n{block}\n{rule}"

    def final_figures(self) -> str:
        """The figures block for the end of the run, with the SPRT's conclusion."""
        text = self.counts_block()
        status = self.sprt_status()
        if status is not None:
            text += "\n" + sprt_conclusion(status)
        return text

    def print_table(self) -> None:
        """The final table, as the official TestClient prints it (plus violations)."""
        header = ("player", "games", "wins", "draws", "losses", "Siegpunkte", "∅Schwarmgröße")
        rows = [
            (
                score.name,
                str(score.games),
                str(score.wins),
                str(score.draws),
                str(score.losses),
                str(score.points),
                f"{score.swarm:.2f}",
            )
            for score in self.scores
        ]
        widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

        def line(cells: Sequence[str]) -> str:
            first = cells[0].ljust(widths[0])
            rest = [cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True)]
            return "  ".join([first, *rest])

        self.out.write("=============== SCORES ================\n")
        for row in (header, *rows):
            self.out.write(line(row) + "\n")
        irregular = [
            f"{score.name} {score.violations}" for score in self.scores if score.violations
        ]
        detail = f" (lost by violation: {', '.join(irregular)})" if irregular else ""
        self.out.write(f"{self.irregular} of {len(self.played)} games ended irregularly{detail}\n")
        self.out.flush()


def player1_points(game: GameSummary) -> float:
    """Player1's points in a game: 1 for a win, ½ for a draw, 0 for a loss."""
    winner = game.result.winner
    if winner is None:
        return 0.5
    return 1.0 if player_at(0 if winner is Team.ONE else 1, game.one) == 0 else 0.0


def game_line(game: GameSummary, names: tuple[str, str], games: int) -> str:
    """`game k/N: A (ONE) vs B (TWO) 2:0, winner A — reason; notes`."""
    one, two = names[game.one], names[1 - game.one]
    result = game.result
    if result.winner is None:
        outcome = "draw"
    else:
        outcome = f"winner {names[player_at(0 if result.winner is Team.ONE else 1, game.one)]}"
    points = ":".join(str(points) for _, (points, _swarm) in result.scores)
    regular = "" if result.regular else " IRREGULAR"
    notes = "".join(f"; {note}" for note in game.notes)
    width = len(str(games))
    return (
        f"game {game.number:>{width}}/{games}: {one} (ONE) vs {two} (TWO) {points}, "
        f"{outcome}{regular} — {result.reason}{notes}"
    )
