"""Start boards: the official generator's invariants and seeding (docs/protocol.md §11.3)."""

from __future__ import annotations

import os
import random
from collections import Counter

import pytest

import engine.state
from engine import BOARD_SIZE, FieldState, GameState, Team
from engine.generator import random_rows

SEEDS = range(300)


@pytest.fixture(scope="module")
def boards() -> list[list[list[FieldState]]]:
    return [GameState.initial(seed).rows() for seed in SEEDS]


def test_fish_on_the_edges_and_mirrored(boards: list[list[list[FieldState]]]) -> None:
    last = BOARD_SIZE - 1
    for rows in boards:
        assert len(rows) == BOARD_SIZE and all(len(row) == BOARD_SIZE for row in rows)
        for corner in (rows[0][0], rows[0][last], rows[last][0], rows[last][last]):
            assert corner is FieldState.EMPTY
        for i in range(1, last):
            assert rows[0][i].team is Team.TWO and rows[last][i].team is Team.TWO
            assert rows[i][0].team is Team.ONE and rows[i][last].team is Team.ONE
            # Both teams get the same fish: mirrored on the diagonal x = y.
            assert rows[0][i].size == rows[i][0].size
            assert rows[last][i].size == rows[i][last].size


def test_two_squids_in_the_inner_square_on_distinct_lines(
    boards: list[list[list[FieldState]]],
) -> None:
    positions: Counter[tuple[int, int]] = Counter()
    for rows in boards:
        squids = [
            (x, y) for y, row in enumerate(rows) for x, f in enumerate(row) if f is FieldState.SQUID
        ]
        assert len(squids) == 2
        (ax, ay), (bx, by) = squids
        assert all(2 <= c <= 7 for c in (ax, ay, bx, by))
        assert ax != bx and ay != by and ax - ay != bx - by and ax + ay != bx + by
        positions.update(squids)
        inner = [
            f
            for y, row in enumerate(rows[1:-1], start=1)
            for x, f in enumerate(row[1:-1], start=1)
            if (x, y) not in squids
        ]
        assert set(inner) == {FieldState.EMPTY}
    # Every field of the inner 6×6 square can hold a squid.
    assert set(positions) == {(x, y) for x in range(2, 8) for y in range(2, 8)}


def test_fish_sizes_are_drawn_four_three_two(boards: list[list[list[FieldState]]]) -> None:
    sizes = Counter(f.size for rows in boards for f in rows[0] + rows[-1] if f.team)
    total = sum(sizes.values())
    for size, share in ((1, 4 / 9), (2, 3 / 9), (3, 2 / 9)):
        assert abs(sizes[size] / total - share) < 0.03


def test_same_seed_same_board_different_seeds_differ(
    boards: list[list[list[FieldState]]],
) -> None:
    assert GameState.initial(7) == GameState.initial(7)
    assert GameState.initial(7).rows() == boards[7]
    distinct = {tuple(map(tuple, rows)) for rows in boards}
    assert len(distinct) == len(boards)


def test_start_state() -> None:
    state = GameState.initial(11)
    assert (state.turn, state.first_union, state.last_move) == (0, None, None)
    assert state.current_team is Team.ONE
    assert state.fish_count(Team.ONE) == state.fish_count(Team.TWO) == 16
    assert not state.is_over


def test_initial_is_the_generator_board_drawn_the_same_way() -> None:
    # GameState.initial makes the bitboards directly (an inline copy of random_rows and
    # from_rows): the same board, and the same draws, for every seed.
    for seed in range(3000):
        rng = random.Random(seed)
        expected = GameState.from_rows(random_rows(rng))
        state = GameState.initial(seed)
        assert state == expected and state.rows() == expected.rows(), seed
    # Without a seed: the process-wide generator, drawn exactly as random_rows would.
    fresh = engine.state._FRESH_BOARDS
    for _ in range(300):
        before = fresh.getstate()
        state = GameState.initial()
        after = fresh.getstate()
        rng = random.Random()
        rng.setstate(before)
        assert state == GameState.from_rows(random_rows(rng))
        assert rng.getstate() == after


def test_unseeded_boards_are_fresh() -> None:
    boards = {tuple(map(tuple, GameState.initial().rows())) for _ in range(200)}
    assert len(boards) == 200


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_deals_other_boards() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.write(write, repr(GameState.initial().rows()).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        child = pipe.read().decode()
    os.waitpid(pid, 0)
    assert child and child != repr(GameState.initial().rows())
