"""The official start-board generator (backend 26.1.0 `Board.randomFields`), seedable."""

from __future__ import annotations

import random

from engine.types import FieldState, Team

BOARD_SIZE = 10
SQUID_COUNT = 2
# Squids are drawn from the inner square SQUID_MIN..SQUID_MAX in both coordinates.
SQUID_MIN = 2
SQUID_MAX = 7

_FISH = {
    (Team.ONE, 1): FieldState.ONE_S,
    (Team.ONE, 2): FieldState.ONE_M,
    (Team.ONE, 3): FieldState.ONE_L,
    (Team.TWO, 1): FieldState.TWO_S,
    (Team.TWO, 2): FieldState.TWO_M,
    (Team.TWO, 3): FieldState.TWO_L,
}


def fish(team: Team, size: int) -> FieldState:
    """The field holding a fish of `team` with `size` 1, 2 or 3."""
    return _FISH[team, size]


def _fish_size(rng: random.Random) -> int:
    # Small, medium and large fish in the ratio 4:3:2, as the official nextInt(9).
    drawn = rng.randrange(9)
    if drawn < 4:
        return 1
    if drawn < 7:
        return 2
    return 3


def random_rows(rng: random.Random) -> list[list[FieldState]]:
    """A new start board, rows[y][x], drawn with `rng` exactly as the official generator does:
    for i = 1..8 one size for TWO at (i, 0) and ONE at (0, i), one size for TWO at (i, 9) and
    ONE at (9, i) (so both teams get the same fish, mirrored on the diagonal), then two squids
    in the inner 6×6 that share no row, column or diagonal."""
    last = BOARD_SIZE - 1
    rows = [[FieldState.EMPTY] * BOARD_SIZE for _ in range(BOARD_SIZE)]
    for index in range(1, last):
        size = _fish_size(rng)
        rows[0][index] = fish(Team.TWO, size)
        rows[index][0] = fish(Team.ONE, size)
        size = _fish_size(rng)
        rows[last][index] = fish(Team.TWO, size)
        rows[index][last] = fish(Team.ONE, size)

    width = SQUID_MAX - SQUID_MIN + 1
    squids: list[tuple[int, int]] = []
    while len(squids) < SQUID_COUNT:
        drawn = rng.randrange(width * width)
        x, y = SQUID_MIN + drawn % width, SQUID_MIN + drawn // width
        if all(x != sx and y != sy and x - y != sx - sy and x + y != sx + sy for sx, sy in squids):
            squids.append((x, y))
            rows[y][x] = FieldState.SQUID
    return rows
