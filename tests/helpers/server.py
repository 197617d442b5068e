"""The whole server in-process on loopback port 0, for tests that talk TCP to it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

import trio

from engine import Team
from protocol import GAME_TYPE
from protocol.events import Join, MovePacket
from protocol.messages import Joined, Memento, MoveRequest, ResultMessage, WelcomeMessage
from server.app import serve
from server.config import Settings

from .rawclient import RawClient

LIMIT = 10  # seconds for any one test's network exchange
PASSWORD = "pw"  # the admin password of `running_server` unless overridden


@dataclass
class Server:
    """A server started by `running_server`: its port; `stop` ends it, `done` says it ended."""

    port: int
    stop: trio.Event
    done: trio.Event

    async def client(self) -> RawClient:
        """A new raw client connected to this server."""
        return await RawClient.connect(self.port)


@asynccontextmanager
async def running_server(**overrides: Any) -> AsyncIterator[Server]:
    """`serve()` on 127.0.0.1 port 0 with the given Settings overrides, stopped on exit."""
    settings = replace(Settings(host="127.0.0.1", port=0, password=PASSWORD), **overrides)
    stop, done = trio.Event(), trio.Event()
    async with trio.open_nursery() as nursery:

        async def run(task_status: trio.TaskStatus[int]) -> None:
            try:
                await serve(settings, task_status=task_status, stop=stop, handle_signals=False)
            finally:
                done.set()

        port = await nursery.start(run)
        yield Server(port, stop, done)
        stop.set()


async def join_pair(server: Server) -> tuple[RawClient, RawClient, str]:
    """Two raw clients in one new room via <join> (one plain, one naming the game type)."""
    one, two = await server.client(), await server.client()
    await one.send(Join())
    room_id = (await one.expect(Joined)).room_id
    await two.send(Join(GAME_TYPE))
    assert (await two.expect(Joined)).room_id == room_id
    return one, two, room_id


async def play_to_the_result(one: RawClient, two: RawClient, room_id: str) -> None:
    """Two clients of `join_pair` play the first legal move of every turn; returns once each
    read its result (the next message is its <left>)."""
    clients = {Team.ONE: one, Team.TWO: two}
    for client in (one, two):
        await client.expect(WelcomeMessage)
    while True:
        state = (await one.expect(Memento)).state
        await two.expect(Memento)
        if state.is_over:
            break
        mover = clients[state.current_team]
        await mover.expect(MoveRequest)
        await mover.send(MovePacket(room_id, state.legal_moves()[0]))
    for client in (one, two):
        await client.expect(ResultMessage)
