"""The rendered-state cache is shared by the trio thread and the replay-writer threads."""

from __future__ import annotations

import sys
import threading

import pytest

from engine import GameState
from engine.types import Direction, Move
from protocol import messages


def _distinct_states(count: int) -> list[GameState]:
    # Different turns give different keys; the board is the same (cheap to build).
    state = GameState.initial()
    return [
        GameState.from_rows(state.rows(), turn, None, Move(0, 1, Direction.RIGHT))
        for turn in range(count)
    ]


def test_state_cache_survives_concurrent_eviction(monkeypatch: pytest.MonkeyPatch) -> None:
    # A tiny cache makes every call evict; a tiny switch interval makes threads interleave
    # between "find the oldest key" and "delete it", which used to raise KeyError.
    monkeypatch.setattr(messages, "_STATE_CACHE_SIZE", 2)
    monkeypatch.setattr(messages, "_STATE_CACHE", {})
    states = _distinct_states(64)
    expected = {id(state): messages._render_state(state, 2) for state in states}
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def hammer(offset: int) -> None:
        start.wait()
        try:
            for round_ in range(2000):
                state = states[(offset * 7 + round_) % len(states)]
                assert messages.state_xml(state, 2) == expected[id(state)]
        except BaseException as error:
            errors.append(error)

    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=hammer, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(old_interval)
    assert errors == []
    assert len(messages._STATE_CACHE) <= 2
