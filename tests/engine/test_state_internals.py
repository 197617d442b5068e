"""The move generator's own representation (engine.state, engine.geometry): the fish lists and
per-line counts a state derives from its parent's must equal the ones made from its bitboards,
and every way to the moves (derived lists, lists from scratch, no lists) gives the same."""

from __future__ import annotations

import copy
import pickle
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Direction, FieldState, GameState, Move, MoveMistake
from engine.geometry import geometry

FIELDS = list(FieldState)


@st.composite
def positions(draw: st.DrawFn) -> GameState:
    """A random board of any shape up to 10×10, then a few random legal moves (captures
    included), with legal_moves() asked on some of the states on the way and not on others."""
    width, height = draw(st.integers(1, 10)), draw(st.integers(1, 10))
    fields = st.sampled_from(FIELDS + [FieldState.EMPTY] * 4)
    rows = [[draw(fields) for _ in range(width)] for _ in range(height)]
    state = GameState.from_rows(rows, turn=draw(st.integers(0, 3)))
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.booleans()):
            moves = state.legal_moves()
        elif state.has_legal_move():
            moves = straightforward_moves(state)
        else:
            moves = []
        if not moves:
            break
        state = state.apply(draw(st.sampled_from(moves)))
    return state


def straightforward_moves(state: GameState) -> list[Move]:
    """The legal moves by check_move (walks the rays field by field, no count tables)."""
    return [
        Move(x, y, direction)
        for y in range(state.height)
        for x in range(state.width)
        for direction in Direction
        if state.check_move(Move(x, y, direction)) is None
    ]


def from_scratch(state: GameState) -> GameState:
    """The same position, its generator tables made from the bitboards alone."""
    return GameState.from_rows(state.rows(), state.turn, state.first_union, state.last_move)


@settings(max_examples=100, deadline=None)
@given(state=positions())
def test_derived_fish_lists_and_line_codes_equal_the_ones_from_the_bitboards(
    state: GameState,
) -> None:
    fresh = from_scratch(state)
    assert state.legal_moves() == fresh.legal_moves()
    assert (state._ones, state._twos, state._codes, state._counts) == (
        fresh._ones,
        fresh._twos,
        fresh._codes,
        fresh._counts,
    )
    geo = geometry(state.width, state.height)
    for team, team_mask, fish in ((0, state._one, state._ones), (1, state._two, state._twos)):
        # Row-major, one entry per fish, the team's own entries.
        assert [entry[0] for entry in fish] == sorted(
            index for index in geo.squares if team_mask >> index & 1
        )
        assert all(entry is geo.team_entries[team][entry[0]] for entry in fish)
    # Each line's code, field by field: ONE's fish from bit 0, TWO's from team_shift, squids
    # from squid_shift; its count: the fish on the line.
    expected = [0] * geo.line_count
    counts = [0] * geo.line_count
    occupied = state._one | state._two
    for index in geo.squares:
        one_deltas, two_deltas = geo.team_deltas[0][index], geo.team_deltas[1][index]
        squid_deltas = geo.squid_deltas[index]
        assert one_deltas is not None and two_deltas is not None and squid_deltas is not None
        assert one_deltas[:4] == two_deltas[:4] == squid_deltas[:4]
        bit = 1 << index
        for k, line_mask in enumerate(geo.lines[index]):
            line, one_bit, two_bit = one_deltas[k], one_deltas[4 + k], two_deltas[4 + k]
            squid_bit = squid_deltas[4 + k]
            assert one_bit.bit_count() == two_bit.bit_count() == squid_bit.bit_count() == 1
            assert one_bit < 1 << geo.team_shift <= two_bit < 1 << geo.squid_shift <= squid_bit
            assert one_deltas[8 + k] == one_bit - two_bit == -two_deltas[8 + k]
            counts[line] = (occupied & line_mask).bit_count()
            for mask, line_bit in ((state._one, one_bit), (state._two, two_bit)):
                if bit & mask:
                    expected[line] |= line_bit
            if bit & state._squid:
                expected[line] |= squid_bit
    assert (state._codes, state._counts) == (expected, counts)
    # On 10×10 a code is one CPython digit (30 bits): its AND makes no object.
    assert geometry(10, 10).squid_shift + 10 <= 30


@settings(max_examples=100, deadline=None)
@given(state=positions())
def test_every_way_to_the_moves_agrees(state: GameState) -> None:
    expected = straightforward_moves(state)
    # has_legal_move without lists (from_rows) and with them (after legal_moves).
    fresh = from_scratch(state)
    assert fresh.has_legal_move() == bool(expected)
    assert state.has_legal_move() == bool(expected)
    assert state.legal_moves() == expected
    assert state.has_legal_move() == bool(expected)
    assert fresh.legal_moves() == expected
    for move in expected:
        # A Move made elsewhere (equal, not the table's object) is applied alike.
        copy = Move(move.x, move.y, move.direction)
        assert copy is not move
        assert state.apply(copy) == state.apply(move)
        assert state.apply(move).legal_moves() == from_scratch(state.apply(move)).legal_moves()
        # A child of a state with lists answers has_legal_move from the parent's lines the
        # move left alone, else from its masks: both must agree with the moves listed.
        child = state.apply(move)
        assert child.has_legal_move() == bool(straightforward_moves(child))


def test_moves_of_another_board_shape_are_checked_by_coordinates() -> None:
    small = GameState.from_rows([["ONE_S", "EMPTY", "TWO_S"]])
    # The 10×10 tables' Move object, unknown to the 3×1 board's: found by its coordinates.
    moves = geometry(10, 10).moves[0]
    assert moves is not None
    right, up = moves[2], moves[0]
    assert (right.x, right.y, right.direction) == (0, 0, Direction.RIGHT)
    after = small.apply(right)
    assert after.field(2, 0) is FieldState.ONE_S  # two fish on the row: captures at x = 2
    assert small.check_move(up) is MoveMistake.DESTINATION_OUT_OF_BOUNDS


def test_a_state_keeps_no_chain_of_parents() -> None:
    # A server never lists moves: the states it applies keep no reference to their parent.
    state = GameState.initial(5)
    for _ in range(6):
        assert state._source is None
        state = state.apply(straightforward_moves(state)[0])
    # After legal_moves() the child holds its parent until it makes its own lists.
    parent = state
    child = parent.apply(parent.legal_moves()[0])
    assert child._source is not None and child._source[0] is parent
    child.legal_moves()
    assert child._source is None


def test_pickled_and_copied_states_use_the_shared_tables() -> None:
    state = GameState.initial(9)
    child = state.apply(state.legal_moves()[0])
    for twin in (pickle.loads(pickle.dumps(child)), copy.deepcopy(child), copy.copy(child)):
        assert twin == child
        assert twin._geo is child._geo
        assert twin._source is None
        # apply finds the twin's Moves in the shared tables by identity.
        moves = twin.legal_moves()
        assert moves == child.legal_moves()
        assert [twin.apply(move) for move in moves] == [child.apply(move) for move in moves]


def test_has_legal_move_of_children_on_small_crowded_boards() -> None:
    # Small full boards block often, and their moves touch most lines: the children of a
    # listed state whose moves lie only on the lines the move changed, or that have none,
    # need the masks after the parent's lines found nothing.
    rng = random.Random(7)
    blocked = 0
    for _ in range(300):
        width, height = rng.randint(2, 4), rng.randint(2, 4)
        rows = [[rng.choice(FIELDS) for _ in range(width)] for _ in range(height)]
        state = GameState.from_rows(rows, turn=rng.randint(0, 1))
        for move in state.legal_moves():
            child = state.apply(move)
            expected = bool(straightforward_moves(child))
            blocked += not expected
            assert child.has_legal_move() == expected
    assert blocked > 0
