"""Fixtures for the lobby/connection tests: fake peers and a running lobby."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

import pytest
import trio

from engine import GameState, Move
from protocol.events import ClientPacket, MovePacket
from protocol.messages import Memento, ServerMessage
from server.config import Settings
from server.lobby import Lobby

M = TypeVar("M")


class FakePeer:
    """A Peer that records what the lobby sends. With `hold_sent`, the "bytes handed to the
    socket" callbacks wait until `release_sent()` (a connection whose writer is late)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.messages: list[ServerMessage] = []
        self.hold_sent = False
        self.unsent: list[Callable[[float], None]] = []
        self.closed = False

    def send(self, message: ServerMessage, on_sent: Callable[[float], None] | None = None) -> None:
        self.messages.append(message)
        if on_sent is not None:
            if self.hold_sent:
                self.unsent.append(on_sent)
            else:
                on_sent(trio.current_time())

    def close(self) -> None:
        self.closed = True

    def release_sent(self) -> None:
        now = trio.current_time()
        for callback in self.unsent:
            callback(now)
        self.unsent.clear()

    def take(self) -> list[ServerMessage]:
        messages, self.messages = self.messages, []
        return messages

    def of(self, kind: type[M]) -> list[M]:
        return [message for message in self.messages if isinstance(message, kind)]

    def last_state(self) -> GameState:
        mementos = self.of(Memento)
        assert mementos, f"{self.name} got no memento"
        return mementos[-1].state


class Harness:
    """A running lobby plus helpers to talk to it as fake clients."""

    def __init__(self, lobby: Lobby) -> None:
        self.lobby = lobby

    def peer(self, name: str) -> FakePeer:
        peer = FakePeer(name)
        self.lobby.connect(peer)
        return peer

    def send(self, peer: FakePeer, packet: ClientPacket) -> None:
        self.lobby.handle(peer, packet, trio.current_time())

    def move(self, peer: FakePeer, room_id: str, move: Move) -> None:
        self.send(peer, MovePacket(room_id, move))

    async def settle(self) -> None:
        """Let ended rooms be recorded and removed (their <left> goes out then)."""
        with trio.fail_after(5):
            await self.lobby.wait_rooms_closed()


HarnessFactory = Callable[..., Any]


@pytest.fixture
async def make_harness(nursery: trio.Nursery) -> HarnessFactory:
    """`await make_harness(**settings_overrides)` → a Harness with a running lobby."""

    async def make(**overrides: Any) -> Harness:
        settings = replace(Settings(), **overrides)
        lobby = Lobby(settings)
        await nursery.start(lobby.run)
        return Harness(lobby)

    return make
