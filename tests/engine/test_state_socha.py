"""Cross-check with the official Python client's compiled rules (socha 4.3.9): the same
legal moves and the same boards in seeded random games."""

from __future__ import annotations

import random
from typing import Any

import pytest

from engine import GameState, Move
from tests.helpers.socha import SOCHA_FIELD_NAMES, socha_direction_name

socha: Any = pytest.importorskip("socha")
pytestmark = pytest.mark.socha


def to_socha(state: GameState) -> Any:
    board = socha.Board(
        [[getattr(socha.FieldType, SOCHA_FIELD_NAMES[f]) for f in row] for row in state.rows()]
    )
    return socha.GameState(board, state.turn, None)


def socha_moves(state: Any) -> set[tuple[int, int, str]]:
    return {
        (m.start.x, m.start.y, repr(m.direction).split()[0].strip("("))
        for m in state.possible_moves()
    }


def socha_rows(state: Any) -> list[list[str]]:
    return [[repr(field) for field in row] for row in state.board.map]


@pytest.mark.parametrize("seed", range(8))
def test_same_moves_and_boards_as_socha(seed: int) -> None:
    rng = random.Random(seed)
    ours = GameState.initial(seed)
    theirs = to_socha(ours)
    while not ours.is_over:
        legal = ours.legal_moves()
        assert {(m.x, m.y, socha_direction_name(m.direction)) for m in legal} == socha_moves(theirs)
        move: Move = rng.choice(legal)
        ours = ours.apply(move)
        theirs = theirs.perform_move(
            socha.Move(
                socha.Coordinate(move.x, move.y),
                getattr(socha.Direction, socha_direction_name(move.direction)),
            )
        )
        assert [[SOCHA_FIELD_NAMES[f] for f in row] for row in ours.rows()] == socha_rows(theirs)
        assert ours.turn == theirs.turn
