"""A built-in bot as a contest client: join (a reserved slot, or any open game), answer every
move request from a worker thread (the connection stays served while it searches), return the
result. The command is `cli.bot` (`piranhas-bot`)."""

from __future__ import annotations

import trio

from bots.players import Bot
from client import ClientSession
from engine import GameState, Move


async def play(bot: Bot, host: str, port: int, reservation: str | None, budget: float) -> str:
    """Join, answer every move request, return the game's result reason after `<left>`."""
    stream = await trio.open_tcp_stream(host, port)
    session = ClientSession(stream)
    try:
        if reservation is not None:
            await session.join_prepared(reservation)
        else:
            await session.join()

        async def choose(state: GameState) -> Move:
            return await trio.to_thread.run_sync(bot.choose, state, budget)

        result = await session.play(choose)
        return result.reason if result is not None else ""
    finally:
        await session.aclose()
