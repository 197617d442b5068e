"""Built-in bots: the search bot's speed (nodes/s, depth reached within its budget), the cost
of one evaluation and of a greedy move, and optionally a short timed match search vs greedy.

    python -m bench.bots [--budget 1.5] [--boards 4] [--match PAIRS] [--match-budget 0.1]

Positions: seeded start boards, then the same boards after 10, 20, 30 and 40 plies of greedy
against greedy (typical middle-game positions).
"""

from __future__ import annotations

import argparse
import statistics
import time

from bots import GreedyBot, SearchBot
from bots.evaluation import evaluate
from bots.selfplay import play
from engine import GameState, Team


def positions(boards: int) -> list[tuple[str, GameState]]:
    """(label, state) for every board at plies 0, 10, 20, 30, 40 (while the game lasts)."""
    found = []
    for board in range(boards):
        state = GameState.initial(board)
        bots = {Team.ONE: GreedyBot(board), Team.TWO: GreedyBot(board + 1)}
        for ply in range(41):
            if state.is_over:
                break
            if ply % 10 == 0:
                found.append((f"board {board} ply {ply:>2}", state))
            state = state.apply(bots[state.current_team].choose(state, 1.0))
    return found


def bench_search(budget: float, boards: int) -> None:
    print(f"search, budget {budget} s per move")
    print(f"{'position':<18} {'moves':>5} {'depth':>5} {'nodes':>7} {'seconds':>7} {'nodes/s':>8}")
    depths, rates, overshoot = [], [], []
    for label, state in positions(boards):
        bot = SearchBot(0)
        began = time.perf_counter()
        bot.choose(state, budget)
        elapsed = time.perf_counter() - began
        info = bot.last
        assert info is not None
        rate = info.nodes / elapsed
        depths.append(info.depth)
        rates.append(rate)
        overshoot.append(elapsed - budget)
        print(
            f"{label:<18} {len(state.legal_moves()):>5} {info.depth:>5} {info.nodes:>7} "
            f"{elapsed:>7.3f} {rate:>8.0f}"
        )
    print(
        f"depth: min {min(depths)} median {statistics.median(depths)} max {max(depths)}; "
        f"nodes/s median {statistics.median(rates):.0f}; "
        f"time beyond budget max {max(overshoot) * 1000:+.1f} ms"
    )


def bench_pieces(boards: int) -> None:
    states = [state for _, state in positions(boards)]
    rounds = 200
    began = time.perf_counter()
    for _ in range(rounds):
        for state in states:
            evaluate(state)
    per_eval = (time.perf_counter() - began) / (rounds * len(states))
    greedy = GreedyBot(0)
    began = time.perf_counter()
    for _ in range(5):
        for state in states:
            greedy.choose(state, 1.0)
    per_greedy = (time.perf_counter() - began) / (5 * len(states))
    print(f"evaluate: {per_eval * 1e6:.1f} µs; greedy move: {per_greedy * 1e3:.2f} ms")


def bench_match(pairs: int, budget: float) -> None:
    """Search (timed) vs greedy on paired boards; prints the game score."""
    wins = ties = losses = 0
    for board in range(pairs):
        for search_team in (Team.ONE, Team.TWO):
            search, greedy = SearchBot(board), GreedyBot(board)
            one, two = (search, greedy) if search_team is Team.ONE else (greedy, search)
            winner = play(one, two, GameState.initial(board), budget).current_winner().winner
            if winner is search_team:
                wins += 1
            elif winner is None:
                ties += 1
            else:
                losses += 1
    print(f"search ({budget} s/move) vs greedy, {pairs} boards × 2: +{wins} ={ties} -{losses}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--budget", type=float, default=1.5)
    parser.add_argument("--boards", type=int, default=4)
    parser.add_argument("--match", type=int, default=0, help="boards for a search/greedy match")
    parser.add_argument("--match-budget", type=float, default=0.1)
    options = parser.parse_args()
    bench_pieces(options.boards)
    bench_search(options.budget, options.boards)
    if options.match:
        bench_match(options.match, options.match_budget)


if __name__ == "__main__":
    main()
