"""Wire-protocol speed: µs to parse one move packet and to serialise one memento and one
result (best of several rounds, per operation).

    python bench/protocol.py [--number N] [--repeat R]

"memento (cold)" renders a state never rendered before (the engine's `rows()` included);
"memento (warm)" is each further send of the same state (both players, observers, replay),
which hits the per-state cache.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine import GameState, PlayerEntry, Team, game_result
from protocol import NEED_DATA, ServerConnection
from protocol.messages import Memento, ResultMessage, _render_state

# Exactly what socha 4.3.9 sends for a move.
MOVE_PACKET = (
    b'<room roomId="7436c247-5a67-4eca-9b17-fceab576b083">\n  <data class="move">\n'
    b'    <from x="0" y="3"/>\n    <direction>UP_RIGHT</direction>\n  </data>\n</room>\n'
)


def best_us(operation: Callable[[], object], number: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        began = time.perf_counter()
        for _ in range(number):
            operation()
        best = min(best, (time.perf_counter() - began) / number)
    return best * 1e6


def midgame_states(count: int) -> list[GameState]:
    rng = random.Random(1)
    states: list[GameState] = []
    while len(states) < count:
        state = GameState.initial(seed=rng.randrange(2**32))
        for _ in range(10):
            if state.is_over:
                break
            state = state.apply(rng.choice(state.legal_moves()))
        states.append(state)
    return states


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    number, repeat = args.number, args.repeat

    conn = ServerConnection()
    conn.receive_data(b"<protocol>")
    assert conn.next_event() is NEED_DATA

    def parse_move() -> None:
        conn.receive_data(MOVE_PACKET)
        conn.next_event()
        conn.next_event()  # NEED_DATA: the full cost of one packet

    states = midgame_states(min(number, 2000))
    state_iter = iter(states * (number * repeat // len(states) + 1))
    rows_state = states[0]

    def memento_cold() -> None:
        # The rendering a fresh state needs, without the cache.
        _render_state(next(state_iter), 3)

    memento = Memento("7436c247-5a67-4eca-9b17-fceab576b083", states[0])
    players = [PlayerEntry(Team.ONE, "Spieler 1"), PlayerEntry(Team.TWO, "Spieler 2")]
    result = ResultMessage(memento.room_id, game_result(states[0], players))

    figures = [
        ("parse one move packet (receive_data + next_event)", best_us(parse_move, number, repeat)),
        ("serialise one memento, cold (new state)", best_us(memento_cold, number // 4, repeat)),
        ("  of which engine GameState.rows()", best_us(rows_state.rows, number // 4, repeat)),
        (
            "serialise one memento, warm (same state again)",
            best_us(lambda: conn.send(memento), number, repeat),
        ),
        ("serialise one result", best_us(lambda: conn.send(result), number, repeat)),
    ]
    width = max(len(label) for label, _ in figures)
    for label, micros in figures:
        print(f"{label:<{width}}  {micros:8.2f} µs")


if __name__ == "__main__":
    main()
