"""Property-based tests: the engine against a slow, obviously-correct reference written
straight from the official rules (walk the board field by field, flood-fill with a queue)."""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import (
    Direction,
    FieldState,
    GameState,
    InvalidMoveError,
    Move,
    MoveMistake,
    Outcome,
    PlayerEntry,
    Team,
    Violation,
    ViolationKind,
    WinReason,
    game_result,
)

Board = list[list[FieldState]]
X = FieldState.SQUID

# ---- the reference --------------------------------------------------------------------


def on_board(board: Board, x: int, y: int) -> bool:
    return 0 <= y < len(board) and 0 <= x < len(board[0])


def ref_distance(board: Board, x: int, y: int, direction: Direction) -> int:
    count = 1
    for dx, dy in ((direction.dx, direction.dy), (-direction.dx, -direction.dy)):
        cx, cy = x + dx, y + dy
        while on_board(board, cx, cy):
            if board[cy][cx].team is not None:
                count += 1
            cx, cy = cx + dx, cy + dy
    return count


def ref_check(board: Board, turn: int, move: Move) -> MoveMistake | None:
    team = Team.TWO if turn % 2 else Team.ONE
    if not on_board(board, move.x, move.y):
        return MoveMistake.START_OUT_OF_BOUNDS
    if board[move.y][move.x].team is not team:
        return MoveMistake.WRONG_START
    distance = ref_distance(board, move.x, move.y, move.direction)
    x, y = move.x, move.y
    for _ in range(distance - 1):
        x, y = x + move.direction.dx, y + move.direction.dy
        if not on_board(board, x, y):
            return MoveMistake.DESTINATION_OUT_OF_BOUNDS
        if board[y][x].team is team.opponent:
            return MoveMistake.JUMP_OVER_OPPONENT
    x, y = x + move.direction.dx, y + move.direction.dy
    if not on_board(board, x, y):
        return MoveMistake.DESTINATION_OUT_OF_BOUNDS
    if board[y][x] is FieldState.SQUID:
        return MoveMistake.DESTINATION_BLOCKED
    if board[y][x].team is team:
        return MoveMistake.DESTINATION_BLOCKED_BY_SELF
    return None


def ref_swarms(board: Board, team: Team) -> list[set[tuple[int, int]]]:
    fish = {
        (x, y) for y, row in enumerate(board) for x, field in enumerate(row) if field.team is team
    }
    swarms = []
    while fish:
        start = fish.pop()
        swarm = {start}
        queue = deque([start])
        while queue:
            x, y = queue.popleft()
            for dx in (-1, 0, 1):
                for dy in (-1, 0, 1):
                    if (x + dx, y + dy) in fish:
                        fish.remove((x + dx, y + dy))
                        swarm.add((x + dx, y + dy))
                        queue.append((x + dx, y + dy))
        swarms.append(swarm)
    return swarms


def ref_weight(board: Board, team: Team) -> int:
    return max(
        (sum(board[y][x].size for x, y in swarm) for swarm in ref_swarms(board, team)),
        default=-1,
    )


def ref_connected(board: Board, team: Team) -> bool:
    return len(ref_swarms(board, team)) == 1


def ref_apply(
    board: Board, turn: int, first_union: Team | None, move: Move
) -> tuple[Board, Team | None]:
    distance = ref_distance(board, move.x, move.y, move.direction)
    after = [list(row) for row in board]
    tx, ty = move.x + move.direction.dx * distance, move.y + move.direction.dy * distance
    after[ty][tx] = after[move.y][move.x]
    after[move.y][move.x] = FieldState.EMPTY
    if first_union is None:
        first_union = next((t for t in (Team.ONE, Team.TWO) if ref_connected(after, t)), None)
    return after, first_union


def all_moves(board: Board) -> list[Move]:
    """Every start on the board and one ring around it, in every direction."""
    return [
        Move(x, y, direction)
        for y in range(-1, len(board) + 1)
        for x in range(-1, len(board[0]) + 1)
        for direction in Direction
    ]


def ref_legal(board: Board, turn: int) -> list[Move]:
    return [
        Move(x, y, d)
        for y in range(len(board))
        for x in range(len(board[0]))
        for d in Direction
        if ref_check(board, turn, Move(x, y, d)) is None
    ]


def ref_outcome(board: Board, turn: int, first_union: Team | None) -> tuple[bool, Outcome]:
    """(is_over, current winner) per the official isOver / winCondition / currentWinner."""
    connected = any(ref_connected(board, t) for t in Team)
    blocked = not ref_legal(board, turn)
    over = (connected and turn % 2 == 0) or blocked or turn // 2 >= 30
    one, two = ref_weight(board, Team.ONE), ref_weight(board, Team.TWO)
    bigger = Team.ONE if one > two else Team.TWO if two > one else None
    if connected:
        if bigger:
            return over, Outcome(bigger, WinReason.BIGGER_SWARM)
        if first_union:
            return over, Outcome(first_union, WinReason.FIRST_UNION)
        return over, Outcome(None, WinReason.TIE)
    if blocked:
        team = Team.TWO if turn % 2 else Team.ONE
        return over, Outcome(team.opponent, WinReason.BLOCKED)
    if bigger:
        return over, Outcome(bigger, WinReason.BIGGER_SWARM)
    return over, Outcome(None, WinReason.TIE)


# ---- comparing the engine with the reference -----------------------------------------------


def assert_matches_reference(
    state: GameState, board: Board, turn: int, first_union: Team | None
) -> None:
    # Before anything lists the moves: the short-circuit check must agree on its own.
    assert state.has_legal_move() == bool(ref_legal(board, turn))
    assert state.rows() == board
    assert (state.turn, state.first_union) == (turn, first_union)
    for move in all_moves(board):
        assert state.check_move(move) is ref_check(board, turn, move), move
    assert state.legal_moves() == ref_legal(board, turn)
    for team in Team:
        assert state.greatest_swarm_weight(team) == ref_weight(board, team)
        assert state.is_connected(team) == ref_connected(board, team)
        assert state.fish_count(team) == sum(f.team is team for row in board for f in row)
    over, winner = ref_outcome(board, turn, first_union)
    assert state.is_over == over
    assert state.current_winner() == winner
    assert state.outcome() == (winner if over else None)


FIELDS = list(FieldState)
# Mostly fish, some squids, many empty fields: dense enough for captures and blocking.
field_strategy = st.sampled_from(FIELDS + [FieldState.EMPTY] * 6)


@st.composite
def boards(draw: st.DrawFn) -> Board:
    width = draw(st.integers(1, 10))
    height = draw(st.integers(1, 10))
    return [[draw(field_strategy) for _ in range(width)] for _ in range(height)]


@settings(max_examples=150, deadline=None)
@given(
    board=boards(),
    turn=st.integers(0, 70),
    first_union=st.sampled_from([None, Team.ONE, Team.TWO]),
)
def test_any_board_matches_reference(board: Board, turn: int, first_union: Team | None) -> None:
    state = GameState.from_rows(board, turn, first_union)
    assert_matches_reference(state, board, turn, first_union)
    for move in state.legal_moves():
        after, union = ref_apply(board, turn, first_union, move)
        assert state.apply(move).rows() == after
        assert state.apply(move).first_union is union


def play(seed: int, choices: Sequence[int], check_every: int) -> None:
    state = GameState.initial(seed)
    board, turn, union = state.rows(), 0, None
    while True:
        if turn % check_every == 0 or state.is_over:
            assert_matches_reference(state, board, turn, union)
        if state.is_over:
            break
        moves = state.legal_moves()
        move = moves[choices[turn % len(choices)] % len(moves)]
        before = state
        captured = before.field(*target_of(before, move)).team is before.current_team.opponent
        state = state.apply(move)
        board, union = ref_apply(board, turn, union, move)
        turn += 1
        # Fish only disappear by capture, and a capture removes exactly one opponent fish.
        mover, opponent = before.current_team, before.current_team.opponent
        assert state.fish_count(mover) == before.fish_count(mover)
        assert state.fish_count(opponent) == before.fish_count(opponent) - captured
        assert state.last_move == move
        # The earlier state is untouched (immutability).
        assert before.turn == turn - 1
        assert before.field(move.x, move.y).team is mover


def target_of(state: GameState, move: Move) -> tuple[int, int]:
    distance = ref_distance(state.rows(), move.x, move.y, move.direction)
    return move.x + move.direction.dx * distance, move.y + move.direction.dy * distance


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), choices=st.lists(st.integers(0, 10**6), min_size=1))
def test_random_games_match_reference(seed: int, choices: list[int]) -> None:
    play(seed, choices, check_every=7)


def test_long_seeded_games_match_reference() -> None:
    # Deterministic games played to the end, checked at every ply.
    for seed in range(3):
        rng = random.Random(seed)
        play(seed, [rng.randrange(10**6) for _ in range(61)], check_every=1)


@settings(max_examples=150, deadline=None)
@given(board=boards(), turn=st.integers(0, 70), data=st.data())
def test_illegal_moves_raise_the_checked_mistake(
    board: Board, turn: int, data: st.DataObject
) -> None:
    state = GameState.from_rows(board, turn)
    move = data.draw(st.sampled_from(all_moves(board)))
    mistake = ref_check(board, turn, move)
    if mistake is None:
        assert state.apply(move).turn == turn + 1
    else:
        try:
            state.apply(move)
        except InvalidMoveError as error:
            assert error.mistake is mistake
            assert error.move == move
        else:
            raise AssertionError(f"{move} was accepted, expected {mistake}")


@settings(max_examples=100, deadline=None)
@given(
    board=boards(),
    turn=st.integers(0, 70),
    first_union=st.sampled_from([None, Team.ONE, Team.TWO]),
    names=st.tuples(st.sampled_from(["", " ", "alice"]), st.sampled_from(["", "bob"])),
)
def test_regular_result_scores_follow_current_winner(
    board: Board, turn: int, first_union: Team | None, names: tuple[str, str]
) -> None:
    state = GameState.from_rows(board, turn, first_union)
    players = [PlayerEntry(Team.ONE, names[0]), PlayerEntry(Team.TWO, names[1])]
    result = game_result(state, players)
    _, winner = ref_outcome(board, turn, first_union)
    assert result.regular
    assert result.winner is winner.winner
    for entry, (points, swarm) in result.scores:
        expected = 1 if winner.winner is None else 2 if winner.winner is entry.team else 0
        assert points == expected
        assert swarm == ref_weight(board, entry.team)
    if winner.winner is None:
        assert result.reason == "Beide Spieler sind gleichauf"
    else:
        name = names[winner.winner.value].strip() or winner.winner.name
        assert result.reason == winner.reason.template.replace("%s", name)


violations = st.one_of(
    st.none(),
    st.builds(Violation, st.sampled_from(list(ViolationKind)), st.sampled_from(["", "X", "7"])),
)
player_entries = st.builds(
    PlayerEntry, st.sampled_from(list(Team)), st.sampled_from(["", " ", "anna"]), violations
)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 50), players=st.lists(player_entries, min_size=1, max_size=2))
def test_results_with_violations_follow_the_framework_rules(
    seed: int, players: list[PlayerEntry]
) -> None:
    state = GameState.initial(seed)
    result = game_result(state, players)
    violators = [p for p in players if p.violation is not None]
    if not violators:
        assert result.regular
        return
    innocent = [p for p in players if p.violation is None]
    assert not result.regular
    assert result.winner is (innocent[0].team if innocent else None)
    for entry, score in result.scores:
        weight = state.greatest_swarm_weight(entry.team)
        assert score == ((0, 0) if entry.violation else (2, weight))
    named = result.winner.opponent if result.winner else None
    name = next((p.name for p in players if p.team is named and p.name.strip()), None)
    expected_name = name or (named.name if named else "Alle Spieler")
    first = violators[0].violation
    assert first is not None
    assert result.reason == first.template.replace("%s", expected_name, 1)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers())
def test_any_seed_gives_a_valid_start_board(seed: int) -> None:
    state = GameState.initial(seed)
    rows = state.rows()
    squids = [(x, y) for y, row in enumerate(rows) for x, f in enumerate(row) if f is X]
    assert len(squids) == 2
    (ax, ay), (bx, by) = squids
    assert {ax, ay, bx, by} <= set(range(2, 8))
    assert ax != bx and ay != by and ax - ay != bx - by and ax + ay != bx + by
    for i in range(1, 9):
        # TWO on the bottom/top rows, ONE with the same sizes mirrored onto the side columns.
        for two, one in ((rows[0][i], rows[i][0]), (rows[9][i], rows[i][9])):
            assert two.team is Team.TWO
            assert one.team is Team.ONE
            assert one.size == two.size
    assert sum(f is FieldState.EMPTY for row in rows for f in row) == 100 - 32 - 2
    assert state == GameState.initial(seed)


@settings(max_examples=150, deadline=None)
@given(
    board=boards(),
    turn=st.integers(0, 70),
    first_union=st.sampled_from([None, Team.ONE, Team.TWO]),
)
def test_from_bitboards_inverts_bitboards(
    board: Board, turn: int, first_union: Team | None
) -> None:
    state = GameState.from_rows(board, turn, first_union)
    height, width = len(board), len(board[0])
    again = GameState.from_bitboards(state.bitboards(), width, height, turn, first_union)
    assert again == state
    assert again.rows() == board
    assert again.legal_moves() == state.legal_moves()
    assert again.is_over == state.is_over


@settings(max_examples=150, deadline=None)
@given(board=boards(), which=st.integers(0, 4), bit=st.integers(0, 120))
def test_from_bitboards_refuses_masks_that_are_no_board(board: Board, which: int, bit: int) -> None:
    state = GameState.from_rows(board)
    height, width = len(board), len(board[0])
    masks = list(state.bitboards())
    masks[which] |= 1 << bit
    x, y = bit % (width + 1), bit // (width + 1)
    on_the_board = x < width and y < height
    one, two, squid, ge2, ge3 = masks
    holder = [one, two, squid]
    held = sum(1 for mask in holder if mask >> bit & 1)
    sized = not (ge2 >> bit & 1) or bool((one | two) >> bit & 1)
    sized = sized and (not (ge3 >> bit & 1) or bool(ge2 >> bit & 1))
    if on_the_board and held <= 1 and sized:
        # Still a board (the bit was set already, or it is a valid field): accepted.
        assert GameState.from_bitboards((one, two, squid, ge2, ge3), width, height).bitboards() == (
            one,
            two,
            squid,
            ge2,
            ge3,
        )
    else:
        try:
            GameState.from_bitboards((one, two, squid, ge2, ge3), width, height)
        except ValueError:
            pass
        else:
            raise AssertionError(f"accepted mask {which} with bit {bit} set on {width}x{height}")
