"""The rendered-state cache is shared by the trio thread and the replay-writer threads."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

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


def test_rows_rendered_from_the_row_cache_match_the_plain_rendering(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Whole games on many boards, and boards of other widths with the same bits (a one-row
    # board and the real one): every board from the cache equals board_xml(rows).
    monkeypatch.setattr(messages, "_ROW_CACHE_SIZE", 64)  # cleared often, too
    monkeypatch.setattr(messages, "_ROW_CACHE", {})
    checked = 0
    for seed in range(12):
        state = GameState.initial(seed)
        while True:
            for depth in (2, 3):
                plain = messages.board_xml(state.rows(), depth)
                assert messages._state_board_xml(state, depth) == plain
                checked += 1
            if state.is_over:
                break
            state = state.apply(state.legal_moves()[seed % len(state.legal_moves())])
    assert checked > 500
    first = GameState.initial(1).rows()[0]
    narrow = GameState.from_rows([first[:3]])
    wide = GameState.from_rows([first])
    for board in (wide, narrow):
        assert messages._state_board_xml(board, 2) == messages.board_xml(board.rows(), 2)


def test_a_row_is_the_row_of_the_board() -> None:
    state = GameState.initial(5)
    for _ in range(30):
        assert [state.row(y) for y in range(state.height)] == state.rows()
        state = state.apply(state.legal_moves()[-1])
    with pytest.raises(IndexError):
        state.row(state.height)


def _interleaved_games(steps: int) -> Iterator[tuple[int, str, GameState]]:
    # Four rooms in turn, each a game one move on at its next turn; now and then a room is
    # reused by an unrelated game: a new one, a lower board, a narrower one.
    games = {f"room-{seed % 4}": GameState.initial(seed) for seed in range(4)}
    for step in range(steps):
        room = f"room-{step % 4}"
        state = games[room]
        yield step, room, state
        moves = state.legal_moves()
        if state.is_over or step % 37 == 0:
            games[room] = GameState.initial(step)  # a new game in the same room
        elif step % 53 == 0:
            games[room] = GameState.from_rows(state.rows()[0:3])  # another height
        elif step % 41 == 0:
            games[room] = GameState.from_rows([row[:-1] for row in state.rows()])  # width
        else:
            games[room] = state.apply(moves[step % len(moves)])


def test_boards_rendered_from_the_room_cache_match_the_plain_rendering(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Several games at once, their mementos interleaved, room ids reused by unrelated games
    # (another board, a narrower one), and the caches cleared often: every board equals
    # board_xml(rows), the one that reuses the room's last board included.
    monkeypatch.setattr(messages, "_ROOM_BOARDS_SIZE", 8)
    monkeypatch.setattr(messages, "_ROOM_BOARDS", {})
    monkeypatch.setattr(messages, "_ROW_CACHE_SIZE", 64)
    monkeypatch.setattr(messages, "_ROW_CACHE", {})
    checked = reused = 0
    last = GameState.initial()
    for step, room, state in _interleaved_games(400):
        last = state
        for depth in (3, 4):
            reused += (room, depth) in messages._ROOM_BOARDS
            plain = messages.board_xml(state.rows(), depth)
            assert messages._state_board_xml(state, depth, room) == plain
            checked += 1
        if step % 97 == 0:  # a ninth (room, depth): the cache is cleared
            messages._state_board_xml(state, 5, "room-extra")
    assert checked == 800 and reused > 100, reused
    memento = messages.Memento("room-0", last)
    assert memento.to_xml(1) == messages.Memento("other", last).to_xml(1).replace(
        'roomId="other"', 'roomId="room-0"'
    )


def test_memento_bytes_from_the_room_board_are_the_rendered_mementos(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Memento.to_bytes writes the fields a move changed over the room's last board bytes:
    # several games at once, interleaved, room ids reused by unrelated games (another board,
    # a narrower, a lower one), the cache cleared often, depths 0 and 1, a state sent twice.
    # Each time the bytes are the memento rendered from its rows, encoded.
    monkeypatch.setattr(messages, "_ROOM_BOARDS_SIZE", 8)
    monkeypatch.setattr(messages, "_ROOM_BOARD_BYTES", {})
    checked = reused = 0
    for step, room, state in _interleaved_games(400):
        for depth in (0, 1, 1):
            reused += (room, depth) in messages._ROOM_BOARD_BYTES
            data = messages.Memento(room, state).to_bytes(depth)
            messages._ROOM_BOARDS.clear()  # the string's way, from the rows
            messages._STATE_CACHE.clear()
            assert data == messages.Memento(room, state).to_xml(depth).encode()
            checked += 1
        if step % 97 == 0:  # a ninth (room, depth): the cache is cleared
            messages.Memento("room-extra", state).to_bytes(2)
    assert checked == 1200 and reused > 300, reused


def test_a_rooms_first_memento_from_the_last_start_board_is_the_rendered_memento(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A new room's first memento patches the start board sent last: the same board, another
    # seed's, a board of another size in between, at two depths. Each is its rendering.
    monkeypatch.setattr(messages, "_ROOM_BOARD_BYTES", {})
    monkeypatch.setattr(messages, "_START_BOARD_BYTES", {})
    narrow = GameState.from_rows([row[:7] for row in GameState.initial(3).rows()])
    starts = [GameState.initial(seed) for seed in (1, 1, 2, 1)] + [narrow, GameState.initial(4)]
    for number, state in enumerate(starts):
        for depth in (1, 2):
            room = f"room-{number}"
            data = messages.Memento(room, state).to_bytes(depth)
            assert data == messages.Memento(room, state).to_xml(depth).encode()
    assert set(messages._START_BOARD_BYTES) == {1, 2}


def test_every_field_name_has_the_same_length() -> None:
    # What the memento's bytes rely on to patch a field in place (else: rendered each time).
    assert messages._FIXED_FIELDS
