"""Game results exactly as the official server computes them (framework `getResult`,
`GameResultConverter`): scores, winner, regular flag and the final reason text."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from engine.state import GameState
from engine.types import Team

WIN_SCORE = 2
DRAW_SCORE = 1
LOSE_SCORE = 0

# Name used in a reason when no team is responsible (e.g. every player left).
NOBODY = "Alle Spieler"


class ViolationKind(enum.Enum):
    LEFT = "LEFT"
    RULE_VIOLATION = "RULE_VIOLATION"
    PROCESS_VIOLATION = "PROCESS_VIOLATION"
    SOFT_TIMEOUT = "SOFT_TIMEOUT"
    HARD_TIMEOUT = "HARD_TIMEOUT"


@dataclass(frozen=True, slots=True)
class Violation:
    """Why a player lost irregularly.

    `detail` is, per kind: LEFT the disconnect cause name ("LOST_CONNECTION", "NOT_CONNECTED",
    …); RULE_VIOLATION str(InvalidMoveError); PROCESS_VIOLATION the exception message;
    SOFT_TIMEOUT/HARD_TIMEOUT the seconds shown in the text ("" = "2", the official value,
    which both texts show because the official server prints the soft limit in both).
    """

    kind: ViolationKind
    detail: str = ""

    @property
    def template(self) -> str:
        """The official reason text with `%s` standing for the violator's name."""
        kind, detail = self.kind, self.detail
        if kind is ViolationKind.LEFT:
            return "%s hat das Spiel verlassen: " + detail
        if kind is ViolationKind.RULE_VIOLATION:
            return "Regelverletzung von %s: " + detail
        if kind is ViolationKind.PROCESS_VIOLATION:
            return "Missachtung des Spielablaufs von %s: " + detail
        seconds = detail or "2"
        if kind is ViolationKind.SOFT_TIMEOUT:
            return (
                f"%s hat fuer die Antwort auf die Zugaufforderung laenger als {seconds} "
                "Sekunden gebraucht."
            )
        return f"%s hat innerhalb von {seconds} Sekunden nach Aufforderung keinen Zug gesendet."


@dataclass(frozen=True, slots=True)
class PlayerEntry:
    """One player slot of a game, in slot order. `name` is the display name ("" = unnamed)."""

    team: Team
    name: str
    violation: Violation | None = None


@dataclass(frozen=True)
class GameResult:
    """The final result. `scores` are in player (slot) order, each [Siegpunkte, Schwarmgröße];
    `reason` is the final text with the name already filled in."""

    scores: list[tuple[PlayerEntry, tuple[int, int]]]
    winner: Team | None
    regular: bool
    reason: str


def _fill(template: str, name: str) -> str:
    # Only the first %s is the name; anything after it (a move, a message) is verbatim.
    return template.replace("%s", name, 1)


def _reason_name(players: Sequence[PlayerEntry], team: Team | None) -> str:
    """The official name for a reason: the first non-blank display name among the entries of
    `team`, else the team's name, or "Alle Spieler" when no team is meant."""
    if team is None:
        return NOBODY
    for player in players:
        if player.team is team and player.name.strip():
            return player.name
    return team.name


def game_result(
    state: GameState, players: Sequence[PlayerEntry], aborted: str | None = None
) -> GameResult:
    """The result of the game ending in `state` (framework getResult, §6.3/§6.4).

    The first player with a violation is the violator: the first player without one wins
    irregularly, non-violators score [2, swarm], violators [0, 0]. Without a violation
    `state.current_winner()` decides with 2/1/0 points. `players` may hold a single entry.
    `aborted` (not official: e.g. server shutdown) ends without winner, irregularly, every
    player [0, 0], with `aborted` as the reason.
    """
    if aborted is not None:
        return GameResult([(p, (0, 0)) for p in players], None, False, aborted)

    violator = next((p for p in players if p.violation is not None), None)
    if violator is not None and violator.violation is not None:
        winner = next((p.team for p in players if p.violation is None), None)
        scores = [
            (p, (0, 0) if p.violation else (WIN_SCORE, state.greatest_swarm_weight(p.team)))
            for p in players
        ]
        # The official converter names the winner's opponent; with two teams that is the violator.
        named = winner.opponent if winner is not None else None
        reason = _fill(violator.violation.template, _reason_name(players, named))
        return GameResult(scores, winner, False, reason)

    # Each team's weight once, for the winner and the scores (it was computed twice a game).
    weights = (state.greatest_swarm_weight(Team.ONE), state.greatest_swarm_weight(Team.TWO))
    outcome = state.current_winner(weights)
    scores = []
    for p in players:
        if outcome.winner is None:
            points = DRAW_SCORE
        elif outcome.winner is p.team:
            points = WIN_SCORE
        else:
            points = LOSE_SCORE
        scores.append((p, (points, weights[p.team.value])))
    reason = _fill(outcome.reason.template, _reason_name(players, outcome.winner))
    return GameResult(scores, outcome.winner, True, reason)
