"""Value types shared by the whole server: teams, fields, directions, moves, mistakes.

These names, their members and their order are fixed: they are the official enum names
of backend 26.1.0 and appear verbatim on the wire.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Team(enum.Enum):
    ONE = 0
    TWO = 1

    @property
    def opponent(self) -> Team:
        return Team.TWO if self is Team.ONE else Team.ONE


class FieldState(enum.Enum):
    """Content of one board field. Value = (team index or None, fish size)."""

    ONE_S = (Team.ONE, 1)
    ONE_M = (Team.ONE, 2)
    ONE_L = (Team.ONE, 3)
    TWO_S = (Team.TWO, 1)
    TWO_M = (Team.TWO, 2)
    TWO_L = (Team.TWO, 3)
    SQUID = (None, 0)
    EMPTY = (None, -1)  # distinct value; size() of EMPTY is 0

    @property
    def team(self) -> Team | None:
        return self.value[0]  # type: ignore[no-any-return]

    @property
    def size(self) -> int:
        """Fish size 1/2/3; 0 for SQUID and EMPTY."""
        size: int = self.value[1]
        return max(0, size)


class Direction(enum.Enum):
    """The eight directions in the official enum order. UP increases y."""

    UP = (0, 1)
    UP_RIGHT = (1, 1)
    RIGHT = (1, 0)
    DOWN_RIGHT = (1, -1)
    DOWN = (0, -1)
    DOWN_LEFT = (-1, -1)
    LEFT = (-1, 0)
    UP_LEFT = (-1, 1)

    @property
    def dx(self) -> int:
        return self.value[0]

    @property
    def dy(self) -> int:
        return self.value[1]


@dataclass(frozen=True, slots=True)
class Move:
    """Move the fish at (x, y) in `direction`. Coordinates may lie outside the board:
    the wire format allows any integer, and legality checking reports it."""

    x: int
    y: int
    direction: Direction

    def __str__(self) -> str:
        # Move.toString() of the official server; appears in reasons and error messages.
        # (_name_: Enum.name is a Python-level property; the server logs every move.)
        return f"Schwimme von [{self.x}|{self.y}] in Richtung {self.direction._name_}"


class MoveMistake(enum.Enum):
    """Why a move is illegal. Value = the official German message."""

    WRONG_START = "Das Startfeld ist kein Piranha des eigenen Teams"
    JUMP_OVER_OPPONENT = "Gegnerische Piranhas können nicht übersprungen werden"
    DESTINATION_OUT_OF_BOUNDS = "Das Zielfeld liegt außerhalb des Spielfelds"
    DESTINATION_BLOCKED = "Zielfeld ist besetzt"
    DESTINATION_BLOCKED_BY_SELF = "Kann nicht auf ein Feld des eigenen Teams ziehen"
    # Not an official mistake: the official server crashes the connection on such a start
    # (IllegalArgumentException). We report it as an ordinary rule violation instead.
    START_OUT_OF_BOUNDS = "Das Startfeld liegt außerhalb des Spielfelds"

    @property
    def message(self) -> str:
        return self.value


class InvalidMoveError(Exception):
    """A move broke the rules. str() is the official InvalidMoveException.message:
    "<mistake message> bei '<move>'"."""

    def __init__(self, mistake: MoveMistake, move: Move) -> None:
        self.mistake = mistake
        self.move = move
        super().__init__(f"{mistake.message} bei '{move}'")

    def official_repr(self) -> str:
        # Kotlin data-class toString of InvalidMoveException, used in the room error message.
        return f"InvalidMoveException(mistake={self.mistake.name}, move={self.move})"
