"""The Piranhas rules (swc_2026_piranhas) exactly as the official server 26.1.0 implements them.

Pure, synchronous, no I/O. See docs/ARCHITECTURE.md for the public API. Every GameState is
immutable: `apply` returns a new state.
"""

from engine.generator import BOARD_SIZE
from engine.lastmove import last_move_problem
from engine.results import (
    GameResult,
    PlayerEntry,
    Violation,
    ViolationKind,
    game_result,
)
from engine.state import ROUND_LIMIT, GameState, Outcome, WinReason
from engine.types import Direction, FieldState, InvalidMoveError, Move, MoveMistake, Team

__all__ = [
    "BOARD_SIZE",
    "ROUND_LIMIT",
    "Direction",
    "FieldState",
    "GameResult",
    "GameState",
    "InvalidMoveError",
    "Move",
    "MoveMistake",
    "Outcome",
    "PlayerEntry",
    "Team",
    "Violation",
    "ViolationKind",
    "WinReason",
    "game_result",
    "last_move_problem",
]
