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

# The move generator folds its three checks into one AND. With
#     probe = 1 | (opponent << 1) | (own_or_squid << check_shift)
# a move is legal iff not probe & check, where check = (fields jumped over) << 1 |
# (target << check_shift): an opponent under the path or an own fish/squid on the target
# hits. check_shift is the board's bit length + 1, so the two halves never overlap. A target
# off the board gets check = off_board = 1, the bit below the board that every probe sets:
# it always hits, and its AND is the cheapest there is (about half of all directions lead
# off the board): one digit, and a result of 1 is CPython's cached small int, not a new
# object (a guard bit, 1 << width, was 15-30 ns slower per test).

# Per field: the four line masks (see _AXIS_OF), then per direction in enum order the check
# masks indexed by distance. The eight Move objects live in a table of their own: the move
# generator appends only the legal few, so unpacking all eight per fish is wasted work.
FieldTable = tuple[
    int, int, int, int,
    tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...],
    tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...],
]  # fmt: skip

# The move generator works on *line codes*: per line (column, diagonal, row, anti-diagonal)
# one small int, the same for both teams,
#     ONE's fish | TWO's fish << team_shift | squids << squid_shift
# with one bit per field of the line (its place among the line's fields, in bit order) and
# team_shift = the longest line's length, squid_shift twice that. For a 10×10 board that is
# 30 bits: a one-digit int, whose AND CPython computes without making an object (a
# whole-board mask is 8 digits, and each AND of two made one and freed it). One list for
# both teams: a ply's derivation copies and updates one list of codes, not each team's view.
# The number of fish on each line (the distance of a move along it) is a list of its own:
# in the code it would cost a shift per line and fish, dearer than the list's upkeep.
# A local check mask is the mover's: (fields jumped over) in the opponent's bits | target in
# its own and in the squids' bits; a move is legal iff not code & check. A target off the
# board has no mask but None, tested before the AND (`check is not None`: a compare with a
# constant and a jump, where an AND of a one-digit int costs a call into the int type; 46 %
# of a playout's tests lead off the board).

# The move generator's entry of a field for one team (GameState keeps one per fish, sorted):
# its bit index first (the sort key: row-major order), the ids of its four lines (see
# _AXIS_OF) into the line codes a state carries, per line the pair of the team's local check
# masks of its two directions (forward in enum order first: UP, UP_RIGHT, RIGHT, DOWN_RIGHT;
# then DOWN, DOWN_LEFT, LEFT, UP_LEFT) indexed by distance, and its eight Moves. Iterating
# over the entries saves extracting the lowest bit; one pair per line and distance is one
# read and an unpacking of two, where the two directions' masks each took a read (4 names
# fewer per fish).
CheckPairs = tuple[tuple[int | None, int | None], ...]
FishEntry = tuple[
    int, int, int, int, int,
    CheckPairs, CheckPairs, CheckPairs, CheckPairs,
    tuple[Move, ...],
]  # fmt: skip

# How a fish of one team arriving on (or leaving) a field changes the codes of its four
# lines: the line ids, then per line x = its bit, then z = x - the other team's bit (a
# capture: the field changes team). A squid's: the line ids and its bit per line.
LineDeltas = tuple[int, ...]

# What apply needs of one of the table's Moves: the start's entry (ONE's: apply and the
# derivation read only its index and line ids), the whole-board check masks of the move's
# direction by distance, the id and the mask of the line it moves along, the start's bit,
# per team the local check masks by distance (see line codes), and per distance the
# landing: the target's bit, its FishEntry for each team and the mask of its 8 neighbours
# (None off the board).
Landing = tuple[int, tuple[FishEntry, FishEntry], int]
MoveEntry = tuple[
    FishEntry,
    tuple[int, ...],
    int,
    int,
    int,
    tuple[tuple[int | None, ...], tuple[int | None, ...]],
    tuple[Landing | None, ...],
]


@dataclass(frozen=True, eq=False)
class Geometry:
    """Lookup tables for a W×H board. One shared instance per shape (see `geometry`)."""

    width: int
    height: int
    stride: int
    target_shift: int
    # target_shift + 1: where a check mask's target half starts (see above).
    check_shift: int
    # The guard bit that marks a target off the board (see above).
    off_board: int
    full: int
    # Bit index of every field, row-major; and the inverse mapping.
    squares: tuple[int, ...]
    coords: dict[int, tuple[int, int]]
    # lines[bit] = the four line masks (see _AXIS_OF) through that field.
    lines: dict[int, tuple[int, int, int, int]]
    # tables[bit] = the FieldTable of that field, moves[bit] its eight Moves in enum order
    # (None for guard bits).
    tables: list[FieldTable | None]
    moves: list[tuple[Move, ...] | None]
    # checks[bit][direction index][distance] = the check mask (see target_shift).
    checks: dict[int, tuple[tuple[int, ...], ...]]
    # axes[direction index] = which of the four lines that direction moves along.
    axes: tuple[int, ...]
    # rays[bit][direction index] = bits of the fields walked in that direction, in order.
    rays: dict[int, tuple[tuple[int, ...], ...]]
    # How many lines (columns, diagonals, rows, anti-diagonals) the board has;
    # team_entries[team][bit] the FishEntry of a field for ONE (0) and TWO (1), None for guard
    # bits; neighbours[bit] its 8 neighbours' mask.
    line_count: int
    team_entries: tuple[list[FishEntry | None], ...]
    neighbours: list[int]
    # below[bit] = the mask of all bits below it (a fish's place among its team's, row-major).
    below: list[int]
    # Line codes (see above): where TWO's and the squids' fields start, per team and field
    # its LineDeltas, and per field a squid's (None for guard bits).
    team_shift: int
    squid_shift: int
    team_deltas: tuple[list[LineDeltas | None], ...]
    squid_deltas: list[LineDeltas | None]
    # id(move) → its MoveEntry, for the Moves in `moves` (they live as long as the geometry,
    # so their ids are never reused by another object).
    move_entries: dict[int, MoveEntry]
    # (x, y, direction name) → the MoveEntry of that Move, for Moves made elsewhere (the
    # protocol's): one dict lookup, not the coordinates decoded.
    move_entries_by_key: dict[tuple[int, int, str], MoveEntry]

    def bit(self, x: int, y: int) -> int:
        return 1 << (y * self.stride + x)

    def __reduce__(self) -> tuple[object, tuple[int, int]]:
        # Pickled and copied as the shared instance of its shape: move_entries is keyed by
        # the ids of this instance's Moves, which a copy's new Moves would not have.
        return geometry, (self.width, self.height)

    def contains(self, x: int, y: int) -> bool:
        return 0 <= x < self.width and 0 <= y < self.height


@cache
def geometry(width: int, height: int) -> Geometry:
    """The tables for a width×height board (computed once per shape)."""
    stride = width + 1
    target_shift = height * stride
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
    tables: list[FieldTable | None] = [None] * (height * stride)
    moves: list[tuple[Move, ...] | None] = [None] * (height * stride)
    all_checks: dict[int, tuple[tuple[int, ...], ...]] = {}
    rays: dict[int, tuple[tuple[int, ...], ...]] = {}
    line_ids: dict[int, tuple[int, int, int, int]] = {}
    neighbours = [0] * (height * stride)
    for index, (x, y) in coords.items():
        own_rays = tuple(ray(x, y, direction) for direction in DIRECTIONS)
        rays[index] = own_rays
        axis_masks = [1 << index] * 4
        for direction, bits in zip(DIRECTIONS, own_rays, strict=True):
            for b in bits:
                axis_masks[_AXIS_OF[direction]] |= b
        lines[index] = (axis_masks[0], axis_masks[1], axis_masks[2], axis_masks[3])
        checks = []
        for bits in own_rays:
            # A distance never exceeds the number of fields on its line.
            by_distance = [1] * (longest_line + 1)
            jumped = 0
            for distance, target in enumerate(bits, start=1):
                by_distance[distance] = (jumped << 1) | (target << (target_shift + 1))
                jumped |= target
            checks.append(tuple(by_distance))
        all_checks[index] = tuple(checks)
        moves[index] = tuple(Move(x, y, direction) for direction in DIRECTIONS)
        tables[index] = (*lines[index], *checks)  # type: ignore[assignment]
        line_ids[index] = (
            x,
            width + (x - y + height - 1),
            2 * width + height - 1 + y,
            2 * width + 2 * height - 1 + x + y,
        )
        neighbours[index] = sum(
            1 << ((y + dy) * stride + x + dx)
            for dx in (-1, 0, 1)
            for dy in (-1, 0, 1)
            if (dx or dy) and 0 <= x + dx < width and 0 <= y + dy < height
        )
    line_count = 3 * width + 3 * height - 2
    # Each field's place on its four lines (the line's fields in bit order).
    on_line: dict[int, list[int]] = {}
    for index in coords:
        for line_id in line_ids[index]:
            on_line.setdefault(line_id, []).append(index)
    place = {
        index: tuple(on_line[line_id].index(index) for line_id in line_ids[index])
        for index in coords
    }
    # Line codes (see above): ONE's fields from bit 0, TWO's from team_shift, squids from
    # squid_shift.
    team_shift = longest_line
    squid_shift = 2 * longest_line
    team_bits = (0, team_shift)
    # Per team (its view as the mover), per field: the check masks of each direction by
    # distance, None for a target off the board.
    local_checks: tuple[dict[int, tuple[tuple[int | None, ...], ...]], ...] = ({}, {})
    team_deltas: tuple[list[LineDeltas | None], ...] = (
        [None] * (height * stride),
        [None] * (height * stride),
    )
    squid_deltas: list[LineDeltas | None] = [None] * (height * stride)
    team_entries: tuple[list[FishEntry | None], ...] = (
        [None] * (height * stride),
        [None] * (height * stride),
    )
    # Per field its (ONE's, TWO's) entries, one pair shared by every landing on it.
    entry_pairs: dict[int, tuple[FishEntry, FishEntry]] = {}
    for index in coords:
        made = []
        for team in (0, 1):
            own_shift, opponent_shift = team_bits[team], team_bits[1 - team]
            team_checks = []
            for direction, bits in zip(DIRECTIONS, rays[index], strict=True):
                axis = _AXIS_OF[direction]
                local_by_distance: list[int | None] = [None] * (longest_line + 1)
                jumped = 0
                for distance, target in enumerate(bits, start=1):
                    local = 1 << place[target.bit_length() - 1][axis]
                    local_by_distance[distance] = (
                        (jumped << opponent_shift) | (local << own_shift) | (local << squid_shift)
                    )
                    jumped |= local
                team_checks.append(tuple(local_by_distance))
            local_checks[team][index] = tuple(team_checks)
            pairs = tuple(
                tuple(zip(team_checks[axis], team_checks[axis + 4], strict=True))
                for axis in range(4)
            )
            entry: FishEntry = (index, *line_ids[index], *pairs, moves[index])  # type: ignore[assignment]
            team_entries[team][index] = entry
            made.append(entry)
            own_bits = [1 << (own_shift + at) for at in place[index]]
            opponent_bits = [1 << (opponent_shift + at) for at in place[index]]
            team_deltas[team][index] = (
                *line_ids[index],
                *own_bits,
                *(own - opponent for own, opponent in zip(own_bits, opponent_bits, strict=True)),
            )
        entry_pairs[index] = (made[0], made[1])
        squid_deltas[index] = (*line_ids[index], *(1 << (squid_shift + at) for at in place[index]))
    move_entries: dict[int, MoveEntry] = {}
    move_entries_by_key: dict[tuple[int, int, str], MoveEntry] = {}
    for index in coords:
        own_moves = moves[index]
        assert own_moves is not None
        start_entry = entry_pairs[index][0]
        for number, move in enumerate(own_moves):
            landings: list[Landing | None] = [None] * (longest_line + 1)
            for distance, target in enumerate(rays[index][number], start=1):
                target_index = target.bit_length() - 1
                landings[distance] = (target, entry_pairs[target_index], neighbours[target_index])
            move_entry: MoveEntry = (
                start_entry,
                all_checks[index][number],
                line_ids[index][number & 3],
                lines[index][number & 3],
                1 << index,
                (local_checks[0][index][number], local_checks[1][index][number]),
                tuple(landings),
            )
            move_entries[id(move)] = move_entry
            move_entries_by_key[(move.x, move.y, move.direction.name)] = move_entry
    return Geometry(
        width=width,
        height=height,
        stride=stride,
        target_shift=target_shift,
        check_shift=target_shift + 1,
        off_board=1,
        full=full,
        squares=squares,
        coords=coords,
        lines=lines,
        tables=tables,
        moves=moves,
        checks=all_checks,
        axes=tuple(_AXIS_OF[direction] for direction in DIRECTIONS),
        rays=rays,
        line_count=line_count,
        team_entries=team_entries,
        neighbours=neighbours,
        below=[(1 << index) - 1 for index in range(height * stride)],
        team_shift=team_shift,
        squid_shift=squid_shift,
        team_deltas=team_deltas,
        squid_deltas=squid_deltas,
        move_entries=move_entries,
        move_entries_by_key=move_entries_by_key,
    )


def connected_component(seed: int, mask: int, stride: int) -> int:
    """The 8-connected group of `mask` containing the bit(s) of `seed`, on bit boards with
    `stride` bits per row and a guard bit at each row's end (so shifts never wrap a row)."""
    reach = seed
    while True:
        row_grown = reach | (reach << 1) | (reach >> 1)
        grown = (row_grown | (row_grown << stride) | (row_grown >> stride)) & mask
        if grown == reach:
            return reach
        reach = grown
