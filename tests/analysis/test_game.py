"""analysis.game: the marks, the best move, determinism across runs and --concurrency."""

from __future__ import annotations

import json
from functools import cache

import pytest

from analysis import Analyser, Game, Settings, model
from analysis import game as game_module
from analysis.report import json_text, ndjson_line
from bots import SearchBot
from bots.search import DECIDED, RootAnalysis
from engine import Direction, GameState, Move, Team


@cache
def before_last_move(seed: int) -> GameState:
    """The position before the last move of a search-vs-search game on board `seed` (turn
    59: TWO's move decides by the heavier swarm)."""
    state = GameState.initial(seed)
    bots = {Team.ONE: SearchBot(1, max_nodes=2000), Team.TWO: SearchBot(2, max_nodes=2000)}
    while state.turn < 59:
        assert not state.is_over
        state = state.apply(bots[state.current_team].choose(state, 100.0))
    return state


def moves_by_winner(state: GameState) -> dict[Team | None, list[Move]]:
    found: dict[Team | None, list[Move]] = {}
    for move in state.legal_moves():
        found.setdefault(state.apply(move).current_winner().winner, []).append(move)
    return found


def analyse(game: Game, nodes: int = 2000, concurrency: int = 1) -> list[dict[str, object]]:
    with Analyser(Settings(nodes=nodes), concurrency) as analyser:
        moves: list[dict[str, object]] = analyser.analyse(game).as_json()["moves"]
    return moves


def test_a_losing_move_played_on_purpose_is_a_blunder_with_a_better_best_move() -> None:
    # Board 5, TWO's last move: 45 moves win, 4 lose. Play a losing one on purpose.
    state = before_last_move(5)
    by_winner = moves_by_winner(state)
    losing = by_winner[Team.ONE][0]
    [move] = analyse(Game(state, (losing,)))
    assert move["mark"] == "??"
    assert move["played"] != move["best"]
    best = move["best"]
    assert isinstance(best, dict)
    best_move = next(
        m
        for m in state.legal_moves()
        if m.x == best["x"] and m.y == best["y"] and m.direction.name == best["direction"]
    )
    assert best_move in by_winner[Team.TWO]
    assert isinstance(move["eval_best"], int) and move["eval_best"] >= DECIDED
    assert isinstance(move["eval_played"], int) and move["eval_played"] <= -DECIDED
    assert move["loss"] == 1.0


def test_the_clearly_best_move_is_not_marked_but_an_only_move() -> None:
    # Board 2, TWO's last move: exactly one of 38 moves wins.
    state = before_last_move(2)
    [winning] = moves_by_winner(state)[Team.TWO]
    [move] = analyse(Game(state, (winning,)))
    assert move["played"] == move["best"]
    assert move["loss"] == 0.0
    assert move["mark"] == "!"


def test_the_worst_move_of_a_middle_game_is_a_blunder_and_a_good_one_is_not() -> None:
    state = GameState.initial(3)
    bots = {Team.ONE: SearchBot(1, max_nodes=2000), Team.TWO: SearchBot(2, max_nodes=2000)}
    while state.turn < 20:
        state = state.apply(bots[state.current_team].choose(state, 100.0))
    # The worst move by a two-ply look of the search itself, independent of the analysis.
    scored = []
    for move in state.legal_moves():
        reply = SearchBot(0, max_depth=2).analyse(state.apply(move))
        scored.append((reply.best_score, move))  # the opponent's view: high is bad for us
    worst = max(scored, key=lambda entry: entry[0])[1]
    best = SearchBot(0, max_nodes=4000).analyse(state).best
    blunder, good = analyse(Game(state, (worst,))), analyse(Game(state, (best,)), nodes=4000)
    assert blunder[0]["mark"] == "??"
    assert blunder[0]["best"] != blunder[0]["played"]
    assert good[0]["mark"] in (None, "!")


def short_game() -> Game:
    state = GameState.initial(7)
    bots = {Team.ONE: SearchBot(3, max_nodes=1500), Team.TWO: SearchBot(4, max_nodes=1500)}
    while state.turn < 16:
        state = state.apply(bots[state.current_team].choose(state, 100.0))
    moves = []
    start = state
    for _ in range(6):
        move = bots[state.current_team].choose(state, 100.0)
        moves.append(move)
        state = state.apply(move)
    return Game(start, tuple(moves), ("a", "b"), "short")


def test_identical_output_across_runs_and_concurrency(monkeypatch: pytest.MonkeyPatch) -> None:
    # Chains of 2: the 6 positions are 3 chains, spread over the processes in any order.
    monkeypatch.setattr(game_module, "CHAIN", 2)
    assert game_module.chains(5) == [range(0, 2), range(2, 4), range(4, 5)]
    game = short_game()
    settings = Settings(nodes=1500)
    outputs = []
    for concurrency in (1, 1, 2):
        with Analyser(settings, concurrency) as analyser:
            analysis = analyser.analyse(game)
        outputs.append(json_text(analysis))
    assert outputs[0] == outputs[1] == outputs[2]
    document = json.loads(outputs[0])
    assert document["format"] == "piranhas-analysis"
    assert len(document["moves"]) == 6
    assert len(document["graph"]) == 7
    assert json.loads(ndjson_line(analysis)) == document


def test_the_second_look_asks_for_twice_the_nodes_near_the_threshold_at_an_odd_depth() -> None:
    settings = Settings(nodes=4000)
    near = game_module.SECOND_LOOK[0] + 0.01
    best, other = Move(0, 1, Direction.UP), Move(0, 2, Direction.UP)

    # The played move's score that gives away `loss`: P(best) = P(0) = 0.5, P(played) = 0.5 - loss.
    def played_for(loss: float) -> int:
        score = model.score_for(0.5 - loss)
        assert score is not None
        return score

    def first(
        played_score: int, previous: tuple[int, int | None] | None = None, depth: int = 3
    ) -> RootAnalysis:
        return RootAnalysis(depth, 4001, best, 0, other, played_score, None, previous)

    assert game_module.second_look(first(played_for(near)), settings) == 8000
    assert game_module.second_look(first(played_for(0.005)), settings) is None  # clearly fine
    assert game_module.second_look(first(played_for(0.3)), settings) is None  # clearly bad
    # Near the threshold one depth shallower only: looked at too.
    assert game_module.second_look(first(-5, (0, played_for(0.12))), settings) == 8000
    # The deepest depth even (its pair complete): twice the nodes cannot complete the next.
    assert game_module.second_look(first(played_for(near), depth=4), settings) is None
    assert game_module.second_look(first(played_for(near), depth=5), settings) == 8000
    # A depth bound alone never looks (no nodes to multiply).
    assert game_module.second_look(first(played_for(near)), Settings(nodes=None, depth=3)) is None


def test_the_second_look_continues_the_search_to_what_a_fresh_search_at_its_bound_gives() -> None:
    # The continuation (one search) must answer what two searches would: at N, then, if the
    # rule asks, a fresh one at its bound — the bench replays the rule that way on its traces.
    game = short_game()
    states = game.states()
    settings = Settings(nodes=3000)  # depth 3 (odd) in four of the six
    looked = 0
    for state, played in zip(states, game.moves, strict=False):
        answer, _ = game_module.analyse_position(state, played, settings)
        first = SearchBot(0, max_nodes=3000).analyse(state, played)
        bound = game_module.second_look(first, settings)
        expected = first if bound is None else SearchBot(0, max_nodes=bound).analyse(state, played)
        looked += bound is not None
        assert answer.with_only_move(False) == expected.with_only_move(False)
    assert looked, "no position of the game was near the threshold: the test tests nothing"


def test_a_lone_odd_depth_from_5_on_gives_way_to_the_even_depth_before_it() -> None:
    a, b, c = Move(0, 1, Direction.UP), Move(0, 2, Direction.UP), Move(0, 3, Direction.UP)
    done = [(1, a, 10, 5), (2, a, 0, -20), (3, b, 40, -60), (4, b, 20, -30), (5, c, 50, 50)]
    # Depth 5 alone (its last ply the mover's): the answer is depth 4's, with depth 3 before it.
    answer = game_module.paired(done, c, 90_001)
    assert (answer.depth, answer.best, answer.best_score, answer.played_score) == (4, b, 20, -30)
    assert answer.previous == (40, -60) and answer.nodes == 90_001 and answer.played == c
    # Depth 3 counts on its own, and so does an even depth.
    assert game_module.paired(done[:3], c, 3000).depth == 3
    assert game_module.paired([*done, (6, a, 30, -10)], c, 600_000).depth == 6
    # A played move that is the best of the depth answered gets the best move's score.
    assert game_module.paired(done, b, 90_001).played_score == 20
    # A proof at depth 5 (for the best move or for the played one) needs no reply.
    won = [*done[:4], (5, c, DECIDED + 5, -DECIDED)]
    assert game_module.paired(won, a, 90_001).depth == 5
    lost = [*done[:4], (5, b, 30, -DECIDED - 5)]
    assert game_module.paired(lost, c, 90_001).depth == 5
