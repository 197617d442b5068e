"""The lobby without sockets: fake peers that record what the lobby sends them, and a running
lobby to drive with packets (`Harness`, built by the `make_harness` fixture)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import trio

from engine import GameState, Move
from protocol import GAME_TYPE
from protocol.events import ClientPacket, Join, MovePacket
from protocol.messages import Joined, Memento, ResultMessage, ServerMessage
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
        """Record `message`; report it sent now unless `hold_sent`."""
        self.messages.append(message)
        if on_sent is not None:
            if self.hold_sent:
                self.unsent.append(on_sent)
            else:
                on_sent(trio.current_time())

    def close(self) -> None:
        """Remember that the lobby closed this peer."""
        self.closed = True

    def release_sent(self) -> None:
        """Report every held message as sent now."""
        now = trio.current_time()
        for callback in self.unsent:
            callback(now)
        self.unsent.clear()

    def take(self) -> list[ServerMessage]:
        """The messages so far; forget them."""
        messages, self.messages = self.messages, []
        return messages

    def of(self, kind: type[M]) -> list[M]:
        """The messages of one kind, in order."""
        return [message for message in self.messages if isinstance(message, kind)]

    def last_state(self) -> GameState:
        """The state of the last memento this peer got."""
        mementos = self.of(Memento)
        assert mementos, f"{self.name} got no memento"
        return mementos[-1].state


class Harness:
    """A running lobby plus helpers to talk to it as fake clients."""

    def __init__(self, lobby: Lobby) -> None:
        self.lobby = lobby

    def peer(self, name: str) -> FakePeer:
        """A new fake peer, connected to the lobby."""
        peer = FakePeer(name)
        self.lobby.connect(peer)
        return peer

    def send(self, peer: FakePeer, packet: ClientPacket) -> None:
        """`packet` from `peer`, arrived now."""
        self.lobby.handle(peer, packet, trio.current_time())

    def move(self, peer: FakePeer, room_id: str, move: Move) -> None:
        """A move packet from `peer`, arrived now."""
        self.send(peer, MovePacket(room_id, move))

    async def settle(self) -> None:
        """Let ended rooms be recorded and removed (their <left> goes out then)."""
        with trio.fail_after(5):
            await self.lobby.wait_rooms_closed()


class HarnessFactory(Protocol):
    """The `make_harness` fixture: `await make_harness(**settings_overrides)`."""

    def __call__(self, **overrides: Any) -> Awaitable[Harness]: ...


async def start_game(
    make_harness: HarnessFactory, **settings: Any
) -> tuple[Harness, FakePeer, FakePeer, str]:
    """A lobby with a started game between two <join> peers (one plain, one naming the game
    type): (harness, team ONE, team TWO, room id)."""
    harness = await make_harness(**settings)
    one, two = harness.peer("one"), harness.peer("two")
    harness.send(one, Join())
    harness.send(two, Join(GAME_TYPE))
    room_id = one.of(Joined)[0].room_id
    return harness, one, two, room_id


def result_of(peer: FakePeer) -> ResultMessage:
    """The one result message `peer` got."""
    results = peer.of(ResultMessage)
    assert len(results) == 1, peer.messages
    return results[0]
