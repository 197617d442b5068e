"""What an admin's `<prepare>` asks for, checked before the lobby creates its room.

Pure functions of the packet (no lobby state): `check_prepare` refuses a wrong gameType and a
slot count no game can have; `start_position` gives the room's start, `GameState.initial(seed)`
or the admin's `<state>` (our extension, docs/server.md: "play from here"). Each refusal is a
`ClientError` with the official exception class name; the lobby answers it and creates nothing.
"""

from __future__ import annotations

import functools

from engine import BOARD_SIZE, ROUND_LIMIT, GameState, last_move_problem
from protocol.events import GAME_TYPE, Prepare
from server import errors
from server.errors import ClientError
from server.game import MAX_SLOTS


def check_prepare(packet: Prepare) -> None:
    """Refuse a `<prepare>` of another game type, without a slot, or with too many slots."""
    if packet.game_type is not None and packet.game_type != GAME_TYPE:
        raise ClientError(errors.unknown_game_type(packet.game_type))
    if not packet.slots:
        raise ClientError(f"{errors.ROOM_EXCEPTION}: A prepared game needs at least one <slot>")
    if len(packet.slots) > MAX_SLOTS:
        raise ClientError(
            f"{errors.TOO_MANY_PLAYERS}: A game has at most {MAX_SLOTS} slots, "
            f"got {len(packet.slots)}"
        )


def start_position(packet: Prepare) -> GameState:
    """The start of a prepared room: `GameState.initial(seed)`, or the `<state>` the admin
    sent (our extensions, docs/server.md; "play from here"). A position no game can be
    played from, or whose last move cannot have led to it (`engine.last_move_problem`), is
    refused with a reason: the room is not created."""
    state = packet.state
    if state is None:
        return GameState.initial() if packet.seed is None else seeded_start(packet.seed)
    problem = None
    if packet.seed is not None:
        problem = "give a seed or a start state, not both"
    elif state.width != BOARD_SIZE or state.height != BOARD_SIZE:
        problem = f"the board must be {BOARD_SIZE}×{BOARD_SIZE}, got {state.width}×{state.height}"
    elif state.turn // 2 >= ROUND_LIMIT:
        problem = f"turn {state.turn} is past the last turn ({2 * ROUND_LIMIT - 1})"
    elif state.is_over:
        problem = f"the game is already over in this position (turn {state.turn})"
    elif (wrong := last_move_problem(state)) is not None:
        # The replay keeps the last move and pages draw it: never one that did not happen.
        problem = f"lastMove: {wrong}"
    if problem is not None:
        raise ClientError(f"{errors.ROOM_EXCEPTION}: Invalid start state: {problem}")
    return state


@functools.lru_cache(maxsize=256)
def seeded_start(seed: int) -> GameState:
    """`GameState.initial(seed)`, made once per seed (~50 µs a board): a league plays a seed
    twice (colours swapped), a benchmark hundreds of times. A GameState never changes, so
    the rooms share it."""
    return GameState.initial(seed)
