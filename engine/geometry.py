"""Precomputed bitboard tables for one board shape (internal to the engine).

A board of width W and height H is stored as Python ints with one bit per field.
Field (x, y) is bit ``y * (W + 1) + x``: every row has one extra, always-clear guard
bit, so shifting a mask by one bit never wraps a fish from one row edge into the
next row. Bits ascend in row-major order (y, then x), which is the order in which
legal moves are listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from engine.types import Direction, Move

DIRECTIONS: tuple[Direction, ...] = tuple(Direction)

# Which of the four lines through a field a direction moves along:
# 0 = column, 1 = diagonal (x - y constant), 2 = row, 3 = anti-diagonal (x + y constant).
_AXIS_OF = {
    Direction.UP: 0,
    Direction.DOWN: 0,
    Direction.UP_RIGHT: 1,
    Direction.DOWN_LEFT: 1,
    Direction.RIGHT: 2,
    Direction.LEFT: 2,
    Direction.DOWN_RIGHT: 3,
    Direction.UP_LEFT: 3,
}

# Target of a move along a ray: (bits of the fields jumped over, bit of the target field).
Step = tuple[int, int]


@dataclass(frozen=True, eq=False)
class Geometry:
    """Lookup tables for a W×H board. One shared instance per shape (see `geometry`)."""

    width: int
    height: int
    stride: int
    full: int
    # Bit index of every field, row-major; and the inverse mapping.
    squares: tuple[int, ...]
    coords: dict[int, tuple[int, int]]
    # lines[bit] = the four line masks (see _AXIS_OF) through that field.
    lines: dict[int, tuple[int, int, int, int]]
    # moves[bit] = for each direction in enum order: (axis, steps, move). steps[d] is the
    # Step for distance d, or None where the target would leave the board.
    moves: dict[int, tuple[tuple[int, tuple[Step | None, ...], Move], ...]]
    # rays[bit][direction index] = bits of the fields walked in that direction, in order.
    rays: dict[int, tuple[tuple[int, ...], ...]]

    def bit(self, x: int, y: int) -> int:
        return 1 << (y * self.stride + x)

    def contains(self, x: int, y: int) -> bool:
        return 0 <= x < self.width and 0 <= y < self.height


@cache
def geometry(width: int, height: int) -> Geometry:
    """The tables for a width×height board (computed once per shape)."""
    stride = width + 1
    squares = tuple(y * stride + x for y in range(height) for x in range(width))
    coords = {y * stride + x: (x, y) for y in range(height) for x in range(width)}
    full = 0
    for index in squares:
        full |= 1 << index

    def ray(x: int, y: int, direction: Direction) -> tuple[int, ...]:
        bits = []
        x, y = x + direction.dx, y + direction.dy
        while 0 <= x < width and 0 <= y < height:
            bits.append(1 << (y * stride + x))
            x, y = x + direction.dx, y + direction.dy
        return tuple(bits)

    longest_line = max(width, height)
    lines: dict[int, tuple[int, int, int, int]] = {}
    moves: dict[int, tuple[tuple[int, tuple[Step | None, ...], Move], ...]] = {}
    rays: dict[int, tuple[tuple[int, ...], ...]] = {}
    for index, (x, y) in coords.items():
        own_rays = tuple(ray(x, y, direction) for direction in DIRECTIONS)
        rays[index] = own_rays
        axis_masks = [1 << index] * 4
        for direction, bits in zip(DIRECTIONS, own_rays, strict=True):
            for b in bits:
                axis_masks[_AXIS_OF[direction]] |= b
        lines[index] = (axis_masks[0], axis_masks[1], axis_masks[2], axis_masks[3])
        entries = []
        for direction, bits in zip(DIRECTIONS, own_rays, strict=True):
            # A distance can never exceed the number of fields on its line.
            steps: list[Step | None] = [None] * (longest_line + 1)
            jumped = 0
            for distance, target in enumerate(bits, start=1):
                steps[distance] = (jumped, target)
                jumped |= target
            entries.append((_AXIS_OF[direction], tuple(steps), Move(x, y, direction)))
        moves[index] = tuple(entries)
    return Geometry(
        width=width,
        height=height,
        stride=stride,
        full=full,
        squares=squares,
        coords=coords,
        lines=lines,
        moves=moves,
        rays=rays,
    )
