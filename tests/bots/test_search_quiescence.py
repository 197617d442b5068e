"""bots/search.py, the opt-in quiescence search: the captures read from the bit masks,
and the value of a search with captures played out at the leaves, against plain references."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bots.evaluation import evaluate
from bots.search import SearchBot, _captures, final_score
from engine import GameState, Team
from tests.helpers.positions import positions, reachable


def weight(state: GameState, team: Team) -> int:
    return sum(field.size for row in state.rows() for field in row if field.team is team)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(positions)
def test_captures_are_the_legal_moves_that_take_a_fish_heaviest_first(state: GameState) -> None:
    opponent = state.current_team.opponent
    before = weight(state, opponent)
    taken = {move: before - weight(state.apply(move), opponent) for move in state.legal_moves()}
    found = _captures(state)
    assert sorted(map(str, found)) == sorted(str(move) for move, took in taken.items() if took)
    assert [taken[move] for move in found] == sorted((taken[m] for m in found), reverse=True)


def united_after_one(state: GameState) -> bool:
    return bool(state.turn & 1) and (state.is_connected(Team.ONE) or state.is_connected(Team.TWO))


def plain_quiesce(state: GameState, left: int) -> int:
    """Stand pat or capture, `left` plies of captures, without pruning."""
    stand = evaluate(state)
    if left <= 0:
        return stand
    best = stand
    opponent = state.current_team.opponent
    for move in state.legal_moves():
        child = state.apply(move)
        if child.fish_count(opponent) == state.fish_count(opponent):
            continue
        if child.is_over:
            score = -final_score(child)
        elif united_after_one(child):
            score = -evaluate(child)
        else:
            score = -plain_quiesce(child, left - 1)
        best = max(best, score)
    return best


def plain_negamax(state: GameState, depth: int, left: int) -> int:
    """Full-width negamax with `plain_quiesce` at the leaves: the reference value."""
    if state.is_over:
        return final_score(state)
    if depth <= 0:
        if not united_after_one(state):
            return plain_quiesce(state, left)
        depth = 1
    return max(-plain_negamax(state.apply(move), depth - 1, left) for move in state.legal_moves())


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(positions, st.sampled_from([1, 2]))
def test_quiescence_value_equals_the_plain_reference(state: GameState, left: int) -> None:
    # Pruning and ordering may change which of equal moves is chosen, never the value. One
    # ply keeps the full-width reference cheap; the root's null windows still reach the
    # captures' stand-pat cut-offs.
    assume(not state.is_over and len(state.legal_moves()) > 1)
    bot = SearchBot(1, max_depth=1, quiescence=left)
    bot.choose(state, 600.0)
    assert bot.last is not None
    assume(bot.last.depth == 1)
    assert bot.last.score == plain_negamax(state, 1, left)


def test_an_analysis_with_quiescence_is_reproducible() -> None:
    state = reachable(7, 24)
    played = state.legal_moves()[-1]
    first = SearchBot(0, max_nodes=2000, quiescence=2).analyse(state, played)
    assert first == SearchBot(0, max_nodes=2000, quiescence=2).analyse(state, played)
    assert first.depth >= 1 and first.nodes == 2001


def test_a_negative_quiescence_is_refused() -> None:
    with pytest.raises(ValueError, match="quiescence must be 0 or more plies, got -1"):
        SearchBot(0, quiescence=-1)
