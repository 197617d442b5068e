"""The observer feed: what the lobby publishes about its rooms to a watcher in the same process.

A feed sees a game exactly as an admin observer does: the messages the lobby already sends to
observers (`Memento`, `Paused`, `RoomError`, `ResultMessage`, `Left`), plus the two facts an
observer learns only by asking (a room exists, who joined it). It never gets the lobby's
rooms or slots, so a watcher (the web viewer in `web/`) cannot depend on the lobby's insides.

The game server core never imports a feed implementation: the composition root (the CLI)
passes one in. Every call is synchronous, runs on the trio thread inside a lobby handler and
must return at once (no I/O, no waiting): a slow watcher must never slow a game.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import trio

from protocol.messages import ServerMessage


@dataclass(frozen=True)
class RoomPlayer:
    """One slot of a room as an observer may know it: team name, display name, joined."""

    team: str
    name: str
    joined: bool


class ObserverFeed(Protocol):
    """Receives what observers of every room receive, as it happens."""

    def room_opened(self, room_id: str, *, paused: bool, prepared: bool) -> None:
        """A room exists (created by a `<join>` or a `<prepare>`)."""
        ...

    def players_changed(self, room_id: str, players: Sequence[RoomPlayer]) -> None:
        """A player took a slot (or the slots were laid out by a `<prepare>`)."""
        ...

    def observe(self, message: ServerMessage) -> None:
        """A message the lobby sends to the observers of `message.room_id`, in order:
        `Memento`, `Paused`, `RoomError`, `ResultMessage`, finally `Left` (room closed)."""
        ...


class NoFeed:
    """The feed when nobody watches: every call does nothing."""

    def room_opened(self, room_id: str, *, paused: bool, prepared: bool) -> None:
        """Nothing to do."""

    def players_changed(self, room_id: str, players: Sequence[RoomPlayer]) -> None:
        """Nothing to do."""

    def observe(self, message: ServerMessage) -> None:
        """Nothing to do."""


class Companion(Protocol):
    """A service started next to the game server in its nursery (e.g. the web viewer): it
    watches games through `feed` and may connect to the game server's port like any client."""

    @property
    def feed(self) -> ObserverFeed:
        """The feed the lobby publishes to."""
        ...

    async def run(
        self, game_port: int, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve until cancelled; `task_status.started()` once it accepts requests."""
        ...
