"""The Piranhas rules (swc_2026_piranhas) exactly as the official server 26.1.0 implements them.

Pure, synchronous, no I/O. See docs/ARCHITECTURE.md for the public API.
"""

from engine.types import Direction, FieldState, InvalidMoveError, Move, MoveMistake, Team

__all__ = ["Direction", "FieldState", "InvalidMoveError", "Move", "MoveMistake", "Team"]
