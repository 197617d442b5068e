"""In-process SC bots for the web tests: random legal moves over loopback TCP."""

from __future__ import annotations

import random

import trio

from client import ConnectionClosed, open_session
from engine import GameResult, GameState
from protocol.events import Join, JoinPrepared
from protocol.messages import Left, Memento, MoveRequest, ResultMessage


async def random_bot(
    port: int,
    *,
    seed: int = 1,
    reservation: str | None = None,
    think: float = 0.0,
    states: list[GameState] | None = None,
    gate: trio.MemoryReceiveChannel[None] | None = None,
) -> GameResult | None:
    """Join (or take `reservation`), play random legal moves after `think` seconds, return
    the result. Every state it sees is appended to `states`; with `gate`, each move waits
    for an item from it (both bots may share one gate)."""
    chooser = random.Random(seed)
    result: GameResult | None = None
    state: GameState | None = None
    async with open_session("127.0.0.1", port) as session:
        await session.send(JoinPrepared(reservation) if reservation else Join(None))
        while True:
            try:
                message = await session.receive()
            except ConnectionClosed:
                break
            if isinstance(message, Memento):
                state = message.state
                if states is not None:
                    states.append(state)
            elif isinstance(message, MoveRequest):
                assert state is not None
                if think:
                    await trio.sleep(think)
                if gate is not None:
                    await gate.receive()
                move = chooser.choice(state.legal_moves())
                await session.send_move(message.room_id, move)
            elif isinstance(message, ResultMessage):
                result = message.result
            elif isinstance(message, Left):
                break
    return result
