"""`Lobby.handle_move` (the read loop's move, its packet made only when needed) against
`Lobby.handle` with the `MovePacket`: the same messages to everyone, for odd moves too."""

from __future__ import annotations

import itertools

import pytest
import trio

from engine import Direction, GameState, InvalidMoveError, Move
from protocol.events import Authenticate
from tests.helpers.lobby import FakePeer, Harness, HarnessFactory, start_game

PASSWORD = "secret"
START = GameState.initial(2026)  # one board for both runs


def _illegal(state: GameState) -> Move:
    """A move of the team to move that the rules refuse."""
    for x, y, direction in itertools.product(range(10), range(10), Direction):
        move = Move(x, y, direction)
        try:
            state.apply(move)
        except InvalidMoveError:
            return move
    raise AssertionError("every move is legal")


async def _play(make_harness: HarnessFactory, fields: bool) -> list[str]:
    """Odd and regular moves in three games; what every peer got, room ids replaced."""
    peers: list[FakePeer] = []
    rooms: list[str] = []

    def move(harness: Harness, peer: FakePeer, room_id: str, move: Move) -> None:
        if fields:
            harness.lobby.handle_move(peer, room_id, move, trio.current_time())
        else:
            harness.move(peer, room_id, move)

    harness, one, two, room_id = await start_game(
        make_harness, password=PASSWORD, login_failure_delay=0.05, start_state=START
    )
    stranger = harness.peer("stranger")
    peers += [one, two, stranger]
    rooms.append(room_id)
    state = one.last_state()
    first = state.legal_moves()[0]
    move(harness, stranger, room_id, first)  # not a member of the room
    move(harness, one, "no-such-room", first)
    move(harness, one, room_id, first)  # requested: played
    reply = one.last_state().legal_moves()[0]
    move(harness, one, room_id, reply)  # not its turn: process violation, the game is over
    move(harness, two, room_id, reply)  # already over
    await harness.settle()

    harness, one, two, room_id = await start_game(make_harness, start_state=START)
    peers += [one, two]
    rooms.append(room_id)
    move(harness, one, room_id, _illegal(one.last_state()))  # rule violation
    await harness.settle()

    harness, one, two, room_id = await start_game(
        make_harness, password=PASSWORD, login_failure_delay=0.05, start_state=START
    )
    peers += [one, two]
    rooms.append(room_id)
    before = len(one.messages)
    harness.send(one, Authenticate("wrong"))  # its answer is delayed: the move waits behind it
    move(harness, one, room_id, one.last_state().legal_moves()[0])
    assert len(one.messages) == before, one.messages  # nothing yet
    await trio.sleep(0.2)
    move(harness, FakePeer("unknown"), room_id, first)  # no connection the lobby knows
    await harness.settle()

    seen = []
    for peer in peers:
        text = repr(peer.messages)
        for index, room in enumerate(rooms):
            text = text.replace(room, f"ROOM{index}")
        seen.append(text)
    return seen


@pytest.mark.parametrize("fields", [False, True])
async def test_handle_move_sends_what_handle_sends(
    make_harness: HarnessFactory, fields: bool
) -> None:
    general = await _play(make_harness, fields=False)
    assert await _play(make_harness, fields=fields) == general
    # The scenario reaches what it means to: refusals, violations, the held answer.
    joined = "\n".join(general)
    for text in (
        "is not a member of game",
        "Couldn't find a room with id no-such-room",
        "It's not your turn yet",
        "Game is already over",
        "Ungueltiger Zug",
        "Failed to authenticate",
    ):
        assert text in joined, text
