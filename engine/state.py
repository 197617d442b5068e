"""The immutable Piranhas game state: moves, swarms, game end (backend 26.1.0 rules)."""

from __future__ import annotations

import enum
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

from engine.generator import BOARD_SIZE, SQUID_COUNT, SQUID_MAX, SQUID_MIN
from engine.geometry import (
    DIRECTIONS,
    FishEntry,
    Geometry,
    connected_component,
    geometry,
)
from engine.types import FieldState, InvalidMoveError, Move, MoveMistake, Team

ROUND_LIMIT = 30
"""The game ends once turn // 2 reaches this (after move 60)."""

_DIRECTION_INDEX = {direction.name: index for index, direction in enumerate(DIRECTIONS)}

_FIELD_BY_BITS = {
    # (team index, size) → field; rebuilt from bitboards in field()/rows().
    (0, 1): FieldState.ONE_S,
    (0, 2): FieldState.ONE_M,
    (0, 3): FieldState.ONE_L,
    (1, 1): FieldState.TWO_S,
    (1, 2): FieldState.TWO_M,
    (1, 3): FieldState.TWO_L,
}

_SYMBOL = {
    FieldState.ONE_S: "1s",
    FieldState.ONE_M: "1m",
    FieldState.ONE_L: "1L",
    FieldState.TWO_S: "2s",
    FieldState.TWO_M: "2m",
    FieldState.TWO_L: "2L",
    FieldState.SQUID: "XX",
    FieldState.EMPTY: " .",
}


class WinReason(enum.Enum):
    """Why a game was won without a violation. `.template` is the official text (`%s` = name)."""

    BIGGER_SWARM = "%s hat den größeren zusammenhängenden Schwarm"
    FIRST_UNION = "%s hat zuerst alle Fische einer Farbe vereinigt"
    BLOCKED = "%s hat den Gegner blockiert, sodass er keinen Zug mehr machen kann"
    TIE = "Beide Spieler sind gleichauf"

    @property
    def template(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Outcome:
    """Who wins (None = nobody, a tie) and why."""

    winner: Team | None
    reason: WinReason


def _is_connected(mask: int, stride: int) -> bool:
    # False without fish, as the official isSwarmConnected.
    return mask != 0 and connected_component(mask & -mask, mask, stride) == mask


class GameState:
    """One position of a Piranhas game. **Immutable**: `apply` returns a new state and
    nothing changes an existing one, so states can be shared, cached and hashed freely.

    The board is x = column 0..width-1 (left→right), y = row 0..height-1 (bottom→top);
    the real game is 10×10, other shapes exist for tests. `turn` counts the moves made;
    ONE moves on even turns, TWO on odd ones.
    """

    __slots__ = (
        "_codes",
        "_connected",
        "_counts",
        "_first_union",
        "_ge2",
        "_ge3",
        "_geo",
        "_last_move",
        "_one",
        "_ones",
        "_source",
        "_squid",
        "_turn",
        "_two",
        "_twos",
    )

    _geo: Geometry
    # Bitboards (see engine.geometry): fish of each team, squids, fish of size ≥ 2 and = 3.
    _one: int
    _two: int
    _squid: int
    _ge2: int
    _ge3: int
    _turn: int
    _first_union: Team | None
    _last_move: Move | None
    # For the move generator, made on first use (None until then) and never changed after:
    # the FishEntry of each team's fish in row-major order (each team's entries), the code of
    # each line and the number of fish on each line (both indexed by the line ids of
    # engine.geometry; see there). A state made
    # by apply from a state that has them derives them from its parent's in a few list
    # operations: `_source` is (parent, start entry, target entry, captured) until then. apply
    # does not derive them itself: a search makes many children it never expands, a server
    # never lists moves.
    _ones: list[FishEntry]
    _twos: list[FishEntry]
    _codes: list[int] | None
    _counts: list[int]
    _source: tuple[GameState, FishEntry, FishEntry, int] | None
    # Lazily computed, never observable as mutation: whether (ONE, TWO) are fully connected.
    _connected: tuple[bool, bool] | None

    def __init__(self) -> None:
        raise TypeError(
            "use GameState.initial(), GameState.from_rows() or GameState.from_bitboards()"
        )

    @classmethod
    def _make(
        cls,
        geo: Geometry,
        boards: tuple[int, int, int, int, int],
        turn: int,
        first_union: Team | None,
        last_move: Move | None,
        connected: tuple[bool, bool] | None = None,
    ) -> GameState:
        state = object.__new__(cls)
        state._geo = geo
        state._one, state._two, state._squid, state._ge2, state._ge3 = boards
        state._turn = turn
        state._first_union = first_union
        state._last_move = last_move
        state._connected = connected
        state._codes = None
        state._source = None
        return state

    # ---- construction ------------------------------------------------------------

    @classmethod
    def initial(cls, seed: int | None = None) -> GameState:
        """A new game on a start board from the official generator. The same `seed` always
        gives the same board (None = a fresh random board)."""
        if seed is None:
            # One generator seeded from the OS per process, not a Random(None) per game
            # (≈ 25 µs of urandom and MT seeding a game): the same distribution of boards.
            return cls._make(_START_GEO, _start_boards(_FRESH_BOARDS), 0, None, None)
        return cls._make(_START_GEO, _start_boards(random.Random(seed)), 0, None, None)

    @classmethod
    def from_rows(
        cls,
        rows: Sequence[Sequence[FieldState | str]],
        turn: int = 0,
        first_union: Team | None = None,
        last_move: Move | None = None,
    ) -> GameState:
        """A state with the board `rows[y][x]` (rows[0] is the bottom row, y = 0). Fields may be
        FieldState members or their names. Any non-empty rectangle is accepted; the real game
        is 10×10. Raises ValueError for a ragged or empty board or a negative turn."""
        if turn < 0:
            raise ValueError(f"turn must not be negative, got {turn}")
        height = len(rows)
        width = len(rows[0]) if height else 0
        if width == 0 or any(len(row) != width for row in rows):
            raise ValueError("the board must be a non-empty rectangle of fields")
        geo = geometry(width, height)
        stride = geo.stride
        one = two = squid = ge2 = ge3 = 0
        # Every observer decodes every memento through here (the runner, the league, the
        # clients): one look-up of the field's name per field that is not empty, no enum
        # properties and no enum hash (both run Python code; ≈ 5× faster).
        codes, empty = _FIELD_CODES, FieldState.EMPTY
        for y, row in enumerate(rows):
            base = y * stride
            for x, cell in enumerate(row):
                if cell is empty:
                    continue
                name = cell._name_ if isinstance(cell, FieldState) else cell
                code = codes.get(name)
                if code is None:
                    raise ValueError(f"unknown field {name!r}")
                if code:
                    bit = 1 << (base + x)
                    if code & _ONE_BIT:
                        one |= bit
                    elif code & _TWO_BIT:
                        two |= bit
                    else:
                        squid |= bit
                    if code & _GE2_BIT:
                        ge2 |= bit
                        if code & _GE3_BIT:
                            ge3 |= bit
        return cls._make(geo, (one, two, squid, ge2, ge3), turn, first_union, last_move)

    @classmethod
    def from_bitboards(
        cls,
        boards: tuple[int, int, int, int, int],
        width: int = BOARD_SIZE,
        height: int = BOARD_SIZE,
        turn: int = 0,
        first_union: Team | None = None,
        last_move: Move | None = None,
    ) -> GameState:
        """The inverse of `bitboards`: a state from its five masks, without a field-by-field
        board (a process that receives states as masks: the web viewer's, every move of every
        game). Raises ValueError for masks that are no board: a bit off the board, a field held
        by two of fish ONE, fish TWO and squid, or a size bit without a fish under it.

        >>> state = GameState.initial(7)
        >>> GameState.from_bitboards(state.bitboards()) == state
        True
        """
        if turn < 0:
            raise ValueError(f"turn must not be negative, got {turn}")
        if width <= 0 or height <= 0:
            raise ValueError("the board must be a non-empty rectangle of fields")
        one, two, squid, ge2, ge3 = boards
        geo = geometry(width, height)
        if (one | two | squid | ge2 | ge3) & ~geo.full:
            raise ValueError("a mask has a bit off the board")
        if one & two or one & squid or two & squid:
            raise ValueError("a field is held twice")
        if ge2 & ~(one | two) or ge3 & ~ge2:
            raise ValueError("a size bit without a fish of that size under it")
        return cls._make(geo, (one, two, squid, ge2, ge3), turn, first_union, last_move)

    # ---- plain data ----------------------------------------------------------------

    @property
    def turn(self) -> int:
        """Moves made so far."""
        return self._turn

    @property
    def first_union(self) -> Team | None:
        """The first team whose fish were all connected after some move (tie-breaker)."""
        return self._first_union

    @property
    def last_move(self) -> Move | None:
        return self._last_move

    @property
    def width(self) -> int:
        return self._geo.width

    @property
    def height(self) -> int:
        return self._geo.height

    @property
    def current_team(self) -> Team:
        """The team to move: ONE on even turns, TWO on odd ones."""
        return Team.TWO if self._turn & 1 else Team.ONE

    def field(self, x: int, y: int) -> FieldState:
        """The content of field (x, y); IndexError outside the board."""
        geo = self._geo
        if not geo.contains(x, y):
            raise IndexError(f"[{x}|{y}] is not on the {geo.width}×{geo.height} board")
        bit = geo.bit(x, y)
        if bit & self._squid:
            return FieldState.SQUID
        if not bit & (self._one | self._two):
            return FieldState.EMPTY
        size = 1 + bool(bit & self._ge2) + bool(bit & self._ge3)
        return _FIELD_BY_BITS[0 if bit & self._one else 1, size]

    def rows(self) -> list[list[FieldState]]:
        """A fresh copy of the board, rows[y][x] with rows[0] the bottom row."""
        # Hot path (every memento): visit only the set bits instead of testing all fields.
        geo = self._geo
        stride = geo.stride
        flat = [FieldState.EMPTY] * (geo.height * stride)
        ge2, ge3 = self._ge2, self._ge3
        for mask, field in (
            (self._squid, FieldState.SQUID),
            (self._one & ~ge2, FieldState.ONE_S),
            (self._one & ge2 & ~ge3, FieldState.ONE_M),
            (self._one & ge3, FieldState.ONE_L),
            (self._two & ~ge2, FieldState.TWO_S),
            (self._two & ge2 & ~ge3, FieldState.TWO_M),
            (self._two & ge3, FieldState.TWO_L),
        ):
            while mask:
                low = mask & -mask
                flat[low.bit_length() - 1] = field
                mask ^= low
        return [flat[y * stride : y * stride + geo.width] for y in range(geo.height)]

    def row(self, y: int) -> list[FieldState]:
        """Row y of the board (rows()[y], without building the others)."""
        geo = self._geo
        if not 0 <= y < geo.height:
            raise IndexError(f"row {y} is not on the {geo.width}×{geo.height} board")
        one, fish, squid, ge2, ge3 = (
            self._one,
            self._one | self._two,
            self._squid,
            self._ge2,
            self._ge3,
        )
        cells = []
        bit = 1 << (y * geo.stride)
        for _ in range(geo.width):
            if bit & squid:
                cells.append(FieldState.SQUID)
            elif not bit & fish:
                cells.append(FieldState.EMPTY)
            else:
                size = 1 + bool(bit & ge2) + bool(bit & ge3)
                cells.append(_FIELD_BY_BITS[0 if bit & one else 1, size])
            bit <<= 1
        return cells

    def row_keys(self) -> list[tuple[int, int, int, int, int]]:
        """One hashable key per row, rows[0] = y 0: two states' rows y are equal exactly when
        their keys are (the row's bits of each bitboard). A renderer caches rows by it: a
        move changes at most two rows, so most of a memento is rendered already."""
        geo = self._geo
        stride = geo.stride
        width_mask = (1 << geo.width) - 1
        one, two, squid, ge2, ge3 = self._one, self._two, self._squid, self._ge2, self._ge3
        keys = []
        for shift in range(0, geo.height * stride, stride):
            keys.append(
                (
                    (one >> shift) & width_mask,
                    (two >> shift) & width_mask,
                    (squid >> shift) & width_mask,
                    (ge2 >> shift) & width_mask,
                    (ge3 >> shift) & width_mask,
                )
            )
        return keys

    def _team_mask(self, team: Team) -> int:
        return self._one if team is Team.ONE else self._two

    def bitboards(self) -> tuple[int, int, int, int, int]:
        """The board as bit masks: ONE's fish, TWO's fish, squids, fish of size ≥ 2, fish of
        size 3; field (x, y) is bit y * (width + 1) + x (engine.geometry). For bots that hash
        positions (a transposition table keys on these, not on the last move) or evaluate
        them without building rows."""
        return (self._one, self._two, self._squid, self._ge2, self._ge3)

    def fish_count(self, team: Team) -> int:
        """How many fish `team` has left."""
        return self._team_mask(team).bit_count()

    # ---- moves ---------------------------------------------------------------------

    def check_move(self, move: Move) -> MoveMistake | None:
        """None if `move` is legal for the team to move, else the official mistake (checked in
        the official order: start, then the jumped fields in order, then the target). A start
        outside the board gives START_OUT_OF_BOUNDS."""
        geo = self._geo
        if not geo.contains(move.x, move.y):
            return MoveMistake.START_OUT_OF_BOUNDS
        if self._turn & 1:
            own, opponent = self._two, self._one
        else:
            own, opponent = self._one, self._two
        index = move.y * geo.stride + move.x
        if not own & (1 << index):
            return MoveMistake.WRONG_START
        direction = _DIRECTION_INDEX[move.direction._name_]
        distance = ((own | opponent) & geo.lines[index][geo.axes[direction]]).bit_count()
        ray = geo.rays[index][direction]
        for step in range(distance - 1):
            if step >= len(ray):
                return MoveMistake.DESTINATION_OUT_OF_BOUNDS
            if ray[step] & opponent:
                return MoveMistake.JUMP_OVER_OPPONENT
        if distance > len(ray):
            return MoveMistake.DESTINATION_OUT_OF_BOUNDS
        target = ray[distance - 1]
        if target & self._squid:
            return MoveMistake.DESTINATION_BLOCKED
        if target & own:
            return MoveMistake.DESTINATION_BLOCKED_BY_SELF
        return None

    def apply(self, move: Move) -> GameState:
        """The state after `move` by the team to move; raises InvalidMoveError if it is illegal.
        A fish landing on an opponent's fish captures it. Sets first_union if it was unset and
        a team (checked ONE first) now has all its fish connected."""
        geo = self._geo
        # The Moves legal_moves() hands out are the geometry's own: found by identity, without
        # decoding coordinates and direction (hot path: one apply per ply).
        found = geo.move_entries.get(id(move))
        if found is None:
            # A Move made elsewhere (the protocol's, a test's): by coordinates and direction
            # (none off the board).
            found = geo.move_entries_by_key.get((move.x, move.y, move.direction._name_))
            if found is None:
                self._reject(move)
        entry, checks, line, line_mask, start, local_checks, landings = found
        mover_is_two = self._turn & 1
        if mover_is_two:
            own, opponent = self._two, self._one
        else:
            own, opponent = self._one, self._two
        if not own & start:
            self._reject(move)
        codes = self._codes
        if codes is None:
            distance = ((own | opponent) & line_mask).bit_count()
            check = 1 | (opponent << 1) | ((own | self._squid) << geo.check_shift)
            if checks[distance] & check:
                self._reject(move)
        else:
            # With the generator's lists: the line's code, as in legal_moves.
            distance = self._counts[line]
            local = local_checks[mover_is_two][distance]
            if local is None or codes[line] & local:
                self._reject(move)
        # Legal (the checks above accept exactly the legal moves): make the new state.
        target, target_entries, near = landings[distance]  # type: ignore[misc]
        both = start | target
        own ^= both
        # A legal move lands on an empty field or captures: the opponent changed only then.
        captured = target & opponent
        ge2, ge3 = self._ge2, self._ge3
        if captured:
            opponent ^= target
            # The captured fish's size goes with it (size 3 is a subset of size >= 2).
            if ge2 & target:
                ge2 ^= target
                if ge3 & target:
                    ge3 ^= target
        if ge2 & start:
            ge2 ^= both
            if ge3 & start:
                ge3 ^= both
        if mover_is_two:
            one, two = opponent, own
        else:
            one, two = own, opponent
        stride = geo.stride
        # The mover's connectivity. A landing fish without a neighbour of its own team leaves
        # the swarm split (the usual case); else connected_component inlined (hot path).
        if not own & near and own != target:
            mover_connected = False
        else:
            reach = target
            while True:
                row_grown = reach | (reach << 1) | (reach >> 1)
                grown = (row_grown | (row_grown << stride) | (row_grown >> stride)) & own
                if grown == reach:
                    break
                reach = grown
            mover_connected = reach == own
        # Without a capture the opponent's fish did not change: reuse its connectivity.
        before = self._connected
        if before is None:
            before = self._connected_pair()
        if mover_is_two:
            connected = (_is_connected(one, stride) if captured else before[0], mover_connected)
        else:
            connected = (mover_connected, _is_connected(two, stride) if captured else before[1])
        first_union = self._first_union
        if first_union is None:
            if connected[0]:
                first_union = Team.ONE
            elif connected[1]:
                first_union = Team.TWO
        # GameState._make inlined: one state per ply.
        state = object.__new__(GameState)
        state._geo = geo
        state._one = one
        state._two = two
        state._squid = self._squid
        state._ge2 = ge2
        state._ge3 = ge3
        state._turn = self._turn + 1
        state._first_union = first_union
        state._last_move = move
        state._connected = connected
        state._codes = None
        # Only a parent with fish lists is kept: no chain of states stays alive.
        state._source = (
            None if codes is None else (self, entry, target_entries[mover_is_two], captured)
        )
        return state

    def _reject(self, move: Move) -> NoReturn:
        mistake = self.check_move(move)
        # The checks in apply accept exactly the legal moves.
        assert mistake is not None
        raise InvalidMoveError(mistake, move)

    def _fish_lists(self) -> None:
        """Make _ones, _twos, _codes and _counts (see there)."""
        source = self._source
        geo = self._geo
        if source is None:
            codes = [0] * geo.line_count
            counts = [0] * geo.line_count
            squid = self._squid
            squid_deltas = geo.squid_deltas
            while squid:
                low = squid & -squid
                squid ^= low
                found = squid_deltas[low.bit_length() - 1]
                assert found is not None
                for line, bit in zip(found[0:4], found[4:8], strict=True):
                    codes[line] += bit
            fish_lists: list[list[FishEntry]] = [[], []]
            for team, mask in ((0, self._one), (1, self._two)):
                append = fish_lists[team].append
                entries, deltas = geo.team_entries[team], geo.team_deltas[team]
                # Unrolled over the four lines (every game's first listing makes them here).
                while mask:
                    low = mask & -mask
                    mask ^= low
                    index = low.bit_length() - 1
                    append(entries[index])  # type: ignore[arg-type]  # a fish's field
                    a, b, c, d, xa, xb, xc, xd, _, _, _, _ = deltas[index]  # type: ignore[misc]
                    codes[a] += xa
                    codes[b] += xb
                    codes[c] += xc
                    codes[d] += xd
                    counts[a] += 1
                    counts[b] += 1
                    counts[c] += 1
                    counts[d] += 1
            self._counts = counts
            self._ones, self._twos = fish_lists
            self._codes = codes
            return
        parent, entry, target_entry, captured = source
        self._source = None
        ones, twos = parent._ones, parent._twos
        # A fish's place in its list is the number of its team's fish below it (row-major):
        # no comparisons of entries.
        below = geo.below
        start_index, target_index = entry[0], target_entry[0]
        if parent._turn & 1:
            twos = twos.copy()
            del twos[(parent._two & below[start_index]).bit_count()]
            twos.insert((self._two & below[target_index]).bit_count(), target_entry)
            if captured:
                ones = ones.copy()
                del ones[(parent._one & below[target_index]).bit_count()]
            deltas = geo.team_deltas[1]
        else:
            ones = ones.copy()
            del ones[(parent._one & below[start_index]).bit_count()]
            ones.insert((self._one & below[target_index]).bit_count(), target_entry)
            if captured:
                twos = twos.copy()
                del twos[(parent._two & below[target_index]).bit_count()]
            deltas = geo.team_deltas[0]
        self._ones = ones
        self._twos = twos
        codes = parent._codes.copy()  # type: ignore[union-attr]  # a source's parent has them
        # Unrolled (one derivation per listed ply): the mover leaves the start's lines ...
        a, b, c, d, xa, xb, xc, xd, _, _, _, _ = deltas[start_index]  # type: ignore[misc]
        counts = parent._counts.copy()
        counts[a] -= 1
        counts[b] -= 1
        counts[c] -= 1
        counts[d] -= 1
        codes[a] -= xa
        codes[b] -= xb
        codes[c] -= xc
        codes[d] -= xd
        a, b, c, d, xa, xb, xc, xd, za, zb, zc, zd = deltas[target_index]  # type: ignore[misc]
        if captured:
            # ... and takes the target's field from the opponent (the counts stay) ...
            codes[a] += za
            codes[b] += zb
            codes[c] += zc
            codes[d] += zd
        else:
            # ... or arrives on an empty one.
            counts[a] += 1
            counts[b] += 1
            counts[c] += 1
            counts[d] += 1
            codes[a] += xa
            codes[b] += xb
            codes[c] += xc
            codes[d] += xd
        self._counts = counts
        self._codes = codes

    def legal_moves(self) -> list[Move]:
        """All legal moves of the team to move: fish in row-major order (y, then x), each
        fish's moves in Direction enum order. A new list on every call."""
        if self._codes is None:
            self._fish_lists()
        codes: list[int] = self._codes  # type: ignore[assignment]  # made above
        fish = self._twos if self._turn & 1 else self._ones
        counts = self._counts
        legal: list[Move] = []
        # Unrolled over the eight directions (enum order): this loop is the engine's hot path.
        for _, column, diagonal, row, anti, by_column, by_diagonal, by_row, by_anti, moves in fish:
            on_column = codes[column]
            up, down = by_column[counts[column]]
            on_diagonal = codes[diagonal]
            up_right, down_left = by_diagonal[counts[diagonal]]
            on_row = codes[row]
            right, left = by_row[counts[row]]
            on_anti = codes[anti]
            down_right, up_left = by_anti[counts[anti]]
            if up is not None and not on_column & up:
                legal.append(moves[0])
            if up_right is not None and not on_diagonal & up_right:
                legal.append(moves[1])
            if right is not None and not on_row & right:
                legal.append(moves[2])
            if down_right is not None and not on_anti & down_right:
                legal.append(moves[3])
            if down is not None and not on_column & down:
                legal.append(moves[4])
            if down_left is not None and not on_diagonal & down_left:
                legal.append(moves[5])
            if left is not None and not on_row & left:
                legal.append(moves[6])
            if up_left is not None and not on_anti & up_left:
                legal.append(moves[7])
        return legal

    def has_legal_move(self) -> bool:
        """Whether the team to move has any legal move. Stops at the first one found: the
        server asks this after every move (game end), where listing all moves is wasted work."""
        codes = self._codes
        if codes is None:
            source = self._source
            if source is not None and not source[3] and _parent_has_legal_move(source):
                return True
            geo = self._geo
            # Without fish lists (they cost more than this): the line counts from the masks.
            if self._turn & 1:
                own, opponent = self._two, self._one
            else:
                own, opponent = self._one, self._two
            probe = 1 | (opponent << 1) | ((own | self._squid) << geo.check_shift)
            occupied = own | opponent
            tables = geo.tables
            remaining = own
            while remaining:
                lowest = remaining & -remaining
                remaining ^= lowest
                (
                    column, diagonal, row, anti,
                    up, up_right, right, down_right, down, down_left, left, up_left,
                ) = tables[lowest.bit_length() - 1]  # type: ignore[misc]  # fmt: skip
                # One line at a time, both its directions: the first line usually has one.
                along = (occupied & column).bit_count()
                if not (probe & up[along] and probe & down[along]):
                    return True
                along = (occupied & diagonal).bit_count()
                if not (probe & up_right[along] and probe & down_left[along]):
                    return True
                along = (occupied & row).bit_count()
                if not (probe & right[along] and probe & left[along]):
                    return True
                along = (occupied & anti).bit_count()
                if not (probe & down_right[along] and probe & up_left[along]):
                    return True
            return False
        fish = self._twos if self._turn & 1 else self._ones
        counts = self._counts
        for _, column, diagonal, row, anti, by_column, by_diagonal, by_row, by_anti, _ in fish:
            # Line by line, both directions: the first line usually has a legal move.
            on = codes[column]
            up, down = by_column[counts[column]]
            if (up is not None and not on & up) or (down is not None and not on & down):
                return True
            on = codes[diagonal]
            up_right, down_left = by_diagonal[counts[diagonal]]
            if (up_right is not None and not on & up_right) or (
                down_left is not None and not on & down_left
            ):
                return True
            on = codes[row]
            right, left = by_row[counts[row]]
            if (right is not None and not on & right) or (left is not None and not on & left):
                return True
            on = codes[anti]
            down_right, up_left = by_anti[counts[anti]]
            if (down_right is not None and not on & down_right) or (
                up_left is not None and not on & up_left
            ):
                return True
        return False

    # ---- swarms --------------------------------------------------------------------

    def _connected_pair(self) -> tuple[bool, bool]:
        connected = self._connected
        if connected is None:
            stride = self._geo.stride
            connected = (_is_connected(self._one, stride), _is_connected(self._two, stride))
            self._connected = connected
        return connected

    def is_connected(self, team: Team) -> bool:
        """Whether all of `team`'s fish form one 8-connected swarm (False without fish)."""
        return self._connected_pair()[team.value]

    def greatest_swarm_weight(self, team: Team) -> int:
        """Weight (sum of sizes 1/2/3) of `team`'s heaviest 8-connected swarm; -1 without fish."""
        remaining = self._team_mask(team)
        stride, ge2, ge3 = self._geo.stride, self._ge2, self._ge3
        best = -1
        while remaining:
            swarm = connected_component(remaining & -remaining, remaining, stride)
            remaining &= ~swarm
            weight = swarm.bit_count() + (swarm & ge2).bit_count() + (swarm & ge3).bit_count()
            best = max(best, weight)
        return best

    # ---- game end --------------------------------------------------------------------

    @property
    def is_over(self) -> bool:
        """The official end: a team connected at the end of a round (even turn), no legal move
        for the team to move, or the round limit reached."""
        turn = self._turn
        if turn // 2 >= ROUND_LIMIT:
            return True
        if not turn & 1:
            connected = self._connected
            if connected is None:
                connected = self._connected_pair()
            if connected[0] or connected[1]:
                return True
        return not self.has_legal_move()

    def win_condition(self) -> Outcome | None:
        """The official plugin winCondition: if any team is connected, the strictly heavier
        swarm wins, else first_union, else a tie; otherwise, if the team to move is blocked,
        its opponent wins. May be non-None while the game is not over (odd turns)."""
        if any(self._connected_pair()):
            one = self.greatest_swarm_weight(Team.ONE)
            two = self.greatest_swarm_weight(Team.TWO)
            if one != two:
                return Outcome(Team.ONE if one > two else Team.TWO, WinReason.BIGGER_SWARM)
            if self._first_union is not None:
                return Outcome(self._first_union, WinReason.FIRST_UNION)
            return Outcome(None, WinReason.TIE)
        if not self.has_legal_move():
            return Outcome(self.current_team.opponent, WinReason.BLOCKED)
        return None

    def current_winner(self, weights: tuple[int, int] | None = None) -> Outcome:
        """The result if the game ended now without a violation: win_condition(), else the
        strictly heavier swarm, else a tie. `weights`: both teams' greatest_swarm_weight
        (ONE, TWO) when the caller has them already (the result's scores need them too)."""
        if weights is None:
            condition = self.win_condition()
            if condition is not None:
                return condition
            one = self.greatest_swarm_weight(Team.ONE)
            two = self.greatest_swarm_weight(Team.TWO)
        else:
            # win_condition with the given weights (each is a connected-component walk).
            one, two = weights
            if any(self._connected_pair()):
                if one != two:
                    return Outcome(Team.ONE if one > two else Team.TWO, WinReason.BIGGER_SWARM)
                if self._first_union is not None:
                    return Outcome(self._first_union, WinReason.FIRST_UNION)
                return Outcome(None, WinReason.TIE)
            if not self.has_legal_move():
                return Outcome(self.current_team.opponent, WinReason.BLOCKED)
        if one != two:
            return Outcome(Team.ONE if one > two else Team.TWO, WinReason.BIGGER_SWARM)
        return Outcome(None, WinReason.TIE)

    def outcome(self) -> Outcome | None:
        """current_winner() once the game is over, else None."""
        return self.current_winner() if self.is_over else None

    # ---- value semantics and display --------------------------------------------------

    def _key(self) -> tuple[object, ...]:
        return (
            self._geo.width,
            self._geo.height,
            self._one,
            self._two,
            self._squid,
            self._ge2,
            self._ge3,
            self._turn,
            self._first_union,
            self._last_move,
        )

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        # The position only: not the generator's lists, nor the parent they derive from.
        boards = (self._one, self._two, self._squid, self._ge2, self._ge3)
        return GameState._make, (self._geo, boards, self._turn, self._first_union, self._last_move)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GameState):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"GameState(turn={self._turn}, first_union={self._first_union}, "
            f"last_move={self._last_move}, {self.width}×{self.height})"
        )

    def __str__(self) -> str:
        union = self._first_union.name if self._first_union else "-"
        header = (
            f"turn {self._turn} (round {self._turn // 2 + 1}), {self.current_team.name} to move, "
            f"firstUnion {union}, last move: {self._last_move or '-'}"
        )
        lines = [header]
        for y in reversed(range(self.height)):
            cells = " ".join(_SYMBOL[self.field(x, y)] for x in range(self.width))
            lines.append(f"{y:>2} {cells}")
        lines.append("   " + " ".join(f"{x:>2}" for x in range(self.width)))
        return "\n".join(lines)


def _parent_has_legal_move(source: tuple[GameState, FishEntry, FishEntry, int]) -> bool:
    """True if the team to move after the parent's move without a capture has a legal
    move on a line the move left alone (False = none found there, not: none at all).
    Such a line has the same fish and code as in the parent, whose lists exist: no
    derivation and no whole-board masks (a playout and the search's leaves ask is_over
    of every child)."""
    parent, start, target, _ = source
    codes = parent._codes
    assert codes is not None  # a source's parent has its lists
    fish = parent._ones if parent._turn & 1 else parent._twos
    counts = parent._counts
    # Line ids differ between the axes: a fish's column can only be the start's or the
    # target's column, and so on.
    start_column, start_diagonal, start_row, start_anti = start[1:5]
    target_column, target_diagonal, target_row, target_anti = target[1:5]
    for _, column, diagonal, row, anti, by_column, by_diagonal, by_row, by_anti, _ in fish:
        if column != start_column and column != target_column:
            on = codes[column]
            up, down = by_column[counts[column]]
            if (up is not None and not on & up) or (down is not None and not on & down):
                return True
        if diagonal != start_diagonal and diagonal != target_diagonal:
            on = codes[diagonal]
            up_right, down_left = by_diagonal[counts[diagonal]]
            if (up_right is not None and not on & up_right) or (
                down_left is not None and not on & down_left
            ):
                return True
        if row != start_row and row != target_row:
            on = codes[row]
            right, left = by_row[counts[row]]
            if (right is not None and not on & right) or (left is not None and not on & left):
                return True
        if anti != start_anti and anti != target_anti:
            on = codes[anti]
            down_right, up_left = by_anti[counts[anti]]
            if (down_right is not None and not on & down_right) or (
                up_left is not None and not on & up_left
            ):
                return True
    return False


_ONE_BIT, _TWO_BIT, _SQUID_BIT, _GE2_BIT, _GE3_BIT = 1, 2, 4, 8, 16


def _field_code(field: FieldState) -> int:
    """`from_rows`' bits of a field: its team (or squid), size ≥ 2, size 3; 0 when empty."""
    if field is FieldState.EMPTY:
        return 0
    if field is FieldState.SQUID:
        return _SQUID_BIT
    code = _ONE_BIT if field.team is Team.ONE else _TWO_BIT
    return code | (_GE2_BIT if field.size >= 2 else 0) | (_GE3_BIT if field.size == 3 else 0)


_FIELD_CODES: dict[str, int] = {field.name: _field_code(field) for field in FieldState}


def _parse_field(name: str) -> FieldState:
    try:
        return FieldState[name]
    except KeyError:
        raise ValueError(f"unknown field {name!r}") from None


__all__ = ["BOARD_SIZE", "ROUND_LIMIT", "GameState", "Outcome", "WinReason"]


# ---- the start board, straight to bitboards ------------------------------------------
# An inline copy of `random_rows` + `from_rows` for the 10×10 start (every game makes one; ≈ 3×
# faster): the same draws from the generator in the same order, so a seed gives the same
# board (tests/engine/test_generator.py compares both on many seeds).

_START_GEO = geometry(BOARD_SIZE, BOARD_SIZE)


def _start_bit(x: int, y: int) -> int:
    return 1 << (y * _START_GEO.stride + x)


_START_LAST = BOARD_SIZE - 1
# The fish pairs in draw order: for i = 1..8, TWO at (i, 0) with ONE at (0, i), then TWO at
# (i, 9) with ONE at (9, i); both teams' fish are always on the same squares.
_START_PAIRS = tuple(
    pair
    for index in range(1, _START_LAST)
    for pair in (
        _start_bit(index, 0) | _start_bit(0, index),
        _start_bit(index, _START_LAST) | _start_bit(_START_LAST, index),
    )
)
_START_ONE = sum(
    _start_bit(edge, index) for index in range(1, _START_LAST) for edge in (0, _START_LAST)
)
_START_TWO = sum(
    _start_bit(index, edge) for index in range(1, _START_LAST) for edge in (0, _START_LAST)
)
_SQUID_WIDTH = SQUID_MAX - SQUID_MIN + 1
_SQUID_XY = tuple(
    (SQUID_MIN + drawn % _SQUID_WIDTH, SQUID_MIN + drawn // _SQUID_WIDTH)
    for drawn in range(_SQUID_WIDTH * _SQUID_WIDTH)
)
_SQUID_BITS = tuple(_start_bit(x, y) for x, y in _SQUID_XY)
# _SQUID_CONFLICTS[a] >> b & 1: squids drawn as a and b share a row, column or diagonal.
_SQUID_CONFLICTS = tuple(
    sum(
        1 << other
        for other, (ox, oy) in enumerate(_SQUID_XY)
        if x == ox or y == oy or x - y == ox - oy or x + y == ox + oy
    )
    for x, y in _SQUID_XY
)
assert SQUID_COUNT == 2  # _start_boards draws exactly two

# The generator of boards without a seed. Reseeded in a forked child, as the `random`
# module's own, so that two processes never deal the same boards.
_FRESH_BOARDS = random.Random()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_FRESH_BOARDS.seed)


def _start_boards(rng: random.Random) -> tuple[int, int, int, int, int]:
    """The bitboards (one, two, squid, ge2, ge3) of `random_rows(rng)`."""
    randrange = rng.randrange
    ge2 = ge3 = 0
    for pair in _START_PAIRS:
        # _fish_size: 0..3 small, 4..6 medium, 7..8 large (the official nextInt(9)).
        drawn = randrange(9)
        if drawn >= 4:
            ge2 |= pair
            if drawn >= 7:
                ge3 |= pair
    squares = _SQUID_WIDTH * _SQUID_WIDTH
    first = randrange(squares)
    conflicts = _SQUID_CONFLICTS[first]
    second = randrange(squares)
    while conflicts >> second & 1:
        second = randrange(squares)
    squid = _SQUID_BITS[first] | _SQUID_BITS[second]
    return _START_ONE, _START_TWO, squid, ge2, ge3
