"""The built-in bots: API, legality, the search bot's budget and its tactics."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from bots import BOT_NAMES, GreedyBot, RandomBot, SearchBot, make_bot
from bots.evaluation import _tightest_spread, evaluate, team_features
from bots.search import WIN, final_score
from engine import ROUND_LIMIT, GameState, Move, Team
from tests.helpers.positions import positions, reachable

# TWO to move (odd turn); exactly one of its moves unites its swarm and wins at once.
WIN_IN_ONE = [
    ["EMPTY", "EMPTY", "EMPTY", "EMPTY", "EMPTY", "EMPTY"],
    ["EMPTY", "EMPTY", "EMPTY", "EMPTY", "EMPTY", "TWO_S"],
    ["SQUID", "EMPTY", "EMPTY", "EMPTY", "EMPTY", "ONE_M"],
    ["EMPTY", "ONE_M", "EMPTY", "ONE_M", "EMPTY", "EMPTY"],
    ["EMPTY", "EMPTY", "EMPTY", "TWO_L", "EMPTY", "EMPTY"],
    ["EMPTY", "EMPTY", "TWO_S", "ONE_L", "TWO_S", "EMPTY"],
]
# ONE to move (even turn); after every move but one, TWO has a move that wins at once. The
# one-ply choices (greedy, a depth-1 search) miss the safe move here.
ONE_SAFE_MOVE = [
    ["EMPTY", "EMPTY", "ONE_S", "EMPTY", "EMPTY", "EMPTY"],
    ["EMPTY", "EMPTY", "EMPTY", "EMPTY", "ONE_L", "EMPTY"],
    ["EMPTY", "TWO_L", "EMPTY", "EMPTY", "EMPTY", "ONE_M"],
    ["TWO_M", "EMPTY", "EMPTY", "ONE_S", "EMPTY", "EMPTY"],
    ["EMPTY", "EMPTY", "TWO_M", "EMPTY", "EMPTY", "EMPTY"],
    ["EMPTY", "EMPTY", "EMPTY", "SQUID", "TWO_L", "EMPTY"],
]
# TWO to make the game's last move (turn 59): nobody can unite, and exactly one move gives
# TWO the heavier swarm when the round limit ends the game.
LAST_MOVE = [
    ["EMPTY", "EMPTY", "EMPTY", "EMPTY", "EMPTY", "TWO_L"],
    ["SQUID", "EMPTY", "EMPTY", "EMPTY", "EMPTY", "EMPTY"],
    ["TWO_M", "EMPTY", "EMPTY", "EMPTY", "EMPTY", "EMPTY"],
    ["EMPTY", "EMPTY", "EMPTY", "TWO_M", "EMPTY", "EMPTY"],
    ["ONE_L", "EMPTY", "EMPTY", "TWO_L", "EMPTY", "EMPTY"],
    ["ONE_M", "EMPTY", "ONE_L", "EMPTY", "ONE_L", "EMPTY"],
]


def wins_now(state: GameState, team: Team) -> bool:
    outcome = state.outcome()
    return outcome is not None and outcome.winner is team


def test_make_bot_builds_each_bot_by_name() -> None:
    for name in BOT_NAMES:
        assert make_bot(name, seed=1).name == name
    with pytest.raises(ValueError, match="unknown bot 'minimax'"):
        make_bot("minimax")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(positions, st.sampled_from(BOT_NAMES), st.integers(min_value=0, max_value=99))
def test_every_bot_returns_a_legal_move(state: GameState, name: str, seed: int) -> None:
    assume(not state.is_over)
    move = make_bot(name, seed).choose(state, 0.01)
    assert move in state.legal_moves()


@pytest.mark.parametrize("name", BOT_NAMES)
def test_a_blocked_bot_gets_a_clear_error(name: str) -> None:
    # ONE's only fish would have to jump over TWO's (or leave the board).
    state = GameState.from_rows([["ONE_S", "TWO_S", "EMPTY"]])
    assert state.legal_moves() == []
    with pytest.raises(ValueError, match="no legal move for ONE at turn 0"):
        make_bot(name).choose(state, 0.1)


def test_random_bot_is_seeded_and_covers_every_move() -> None:
    state = GameState.initial(4)
    first, again = RandomBot(9), RandomBot(9)
    assert [first.choose(state, 0.0) for _ in range(20)] == [
        again.choose(state, 0.0) for _ in range(20)
    ]
    bot = RandomBot(3)
    counts = Counter(bot.choose(state, 0.0) for _ in range(40 * len(state.legal_moves())))
    assert set(counts) == set(state.legal_moves())


@settings(max_examples=25, deadline=None)
@given(positions)
def test_greedy_maximises_its_swarm_then_minimises_the_opponents(state: GameState) -> None:
    if state.is_over:
        return
    me = state.current_team

    def key(move: Move) -> tuple[int, int]:
        after = state.apply(move)
        return after.greatest_swarm_weight(me), -after.greatest_swarm_weight(me.opponent)

    best = max(key(move) for move in state.legal_moves())
    assert key(GreedyBot(0).choose(state, 1.0)) == best


def test_search_takes_a_win_in_one() -> None:
    state = GameState.from_rows(WIN_IN_ONE, turn=9)
    winning = [move for move in state.legal_moves() if wins_now(state.apply(move), Team.TWO)]
    assert len(winning) == 1 < len(state.legal_moves())
    bot = SearchBot(0, max_depth=3)
    assert bot.choose(state, 5.0) == winning[0]
    assert bot.last is not None and bot.last.score == WIN - 10


def test_search_avoids_a_move_that_lets_the_opponent_win() -> None:
    state = GameState.from_rows(ONE_SAFE_MOVE, turn=10)

    def loses(move: Move) -> bool:
        after = state.apply(move)
        return any(wins_now(after.apply(reply), Team.TWO) for reply in after.legal_moves())

    safe = [move for move in state.legal_moves() if not loses(move)]
    assert len(safe) == 1 < len(state.legal_moves())
    # One ply is not enough to see it: the test needs the search to look at the replies.
    assert SearchBot(0, max_depth=1).choose(state, 5.0) != safe[0]
    for seed in range(3):
        assert SearchBot(seed, max_depth=2).choose(state, 5.0) == safe[0]
        assert SearchBot(seed).choose(state, 0.5) == safe[0]


def test_search_plays_for_the_round_limit_winner() -> None:
    state = GameState.from_rows(LAST_MOVE, turn=59)
    winning = [move for move in state.legal_moves() if wins_now(state.apply(move), Team.TWO)]
    assert len(winning) == 1 < len(state.legal_moves())
    assert SearchBot(0).choose(state, 5.0) == winning[0]


def _waited_for_a_cpu() -> float:
    """Seconds this thread has spent runnable but waiting for a CPU (Linux schedstat)."""
    fields = Path("/proc/thread-self/schedstat").read_text().split()
    return int(fields[1]) / 1e9


@pytest.mark.parametrize(("seed", "plies", "budget"), [(1, 0, 0.05), (2, 20, 0.2), (3, 41, 0.3)])
def test_search_answers_within_its_budget(seed: int, plies: int, budget: float) -> None:
    # The budget is the bot's contract with a real clock, so it is measured with one, less
    # the time the thread was ready but given no CPU (a loaded machine's 2 cores shared by
    # dozens of processes): that time is the machine's, not the bot's. A bot that searches
    # or sleeps past its budget still fails.
    state = reachable(seed, plies)
    bot = SearchBot(seed)
    waited = _waited_for_a_cpu()
    started = time.perf_counter()
    move = bot.choose(state, budget)
    elapsed = time.perf_counter() - started
    waited = _waited_for_a_cpu() - waited
    assert move in state.legal_moves()
    assert elapsed - waited < budget + 0.1, (elapsed, waited)
    assert bot.last is not None and bot.last.seconds <= elapsed


def test_search_with_a_node_limit_is_reproducible() -> None:
    state = reachable(5, 12)
    first, second = SearchBot(5, max_nodes=300), SearchBot(5, max_nodes=300)
    assert first.choose(state, 60.0) == second.choose(state, 60.0)
    assert first.last is not None and first.last.depth >= 1
    assert first.last.nodes == 301  # stopped by the limit, not the clock


def test_final_score_follows_the_engine_winner() -> None:
    state = GameState.from_rows(WIN_IN_ONE, turn=9)
    winning = next(m for m in state.legal_moves() if wins_now(state.apply(m), Team.TWO))
    final = state.apply(winning)
    assert final.current_team is Team.ONE
    assert final_score(final) == -(WIN - 10)


@settings(max_examples=40, deadline=None)
@given(positions)
def test_evaluation_sees_the_engines_swarms(state: GameState) -> None:
    one, two = team_features(state)
    assert one.heaviest_swarm == state.greatest_swarm_weight(Team.ONE)
    assert two.heaviest_swarm == state.greatest_swarm_weight(Team.TWO)
    assert one.fish == state.fish_count(Team.ONE)
    assert (one.swarms == 1) == state.is_connected(Team.ONE)
    # The same board is worth the negation to the other side, and far less than a win.
    other_side = GameState.from_rows(state.rows(), turn=state.turn + 1)
    assert evaluate(other_side) == -evaluate(state)
    assert abs(evaluate(state)) < WIN // 10


def test_tightest_spread_fills_rings_around_the_centre() -> None:
    # 1 centre field, 8 fields at distance 1, 16 at distance 2.
    assert [_tightest_spread(n) for n in (0, 1, 2, 9, 10, 25)] == [0, 0, 1, 8, 10, 40]


def plain_negamax(state: GameState, depth: int) -> int:
    """Full-width negamax without pruning, table or ordering: the reference value."""
    if state.is_over:
        return final_score(state)
    if depth <= 0:
        # The search looks one ply past a union made by ONE (the game ends after the reply).
        if not (state.turn & 1 and (state.is_connected(Team.ONE) or state.is_connected(Team.TWO))):
            return evaluate(state)
        depth = 1
    return max(-plain_negamax(state.apply(move), depth - 1) for move in state.legal_moves())


@settings(max_examples=6, deadline=None)
@given(positions, st.booleans())
@example(reachable(71, 59), False)  # the last turn: a search of one ply
def test_search_value_equals_plain_negamax(state: GameState, table: bool) -> None:
    # Pruning, ordering and the transposition table may change which of equal moves is
    # played, never the value of the position.
    assume(not state.is_over and len(state.legal_moves()) > 1)
    bot = SearchBot(1, max_depth=2, transposition_table=table)
    move = bot.choose(state, 600.0)
    assert bot.last is not None
    # A forced result ends the deepening early; deeper plies cannot change its value. On the
    # last turn one ply is all there is (hypothesis found turn 59).
    deepest = min(2, 2 * ROUND_LIMIT - state.turn)
    assert bot.last.depth == deepest or abs(bot.last.score) > WIN - 100
    expected = plain_negamax(state, 2)
    assert bot.last.score == expected
    assert -plain_negamax(state.apply(move), 1) == expected
