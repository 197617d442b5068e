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
from typing import Protocol, runtime_checkable

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


@dataclass(frozen=True)
class LoginFailure:
    """What one failed login did: the failures now counted in the window, and the end of the
    lockout it started (None: no lockout; the time is the gate's clock, the trio run's)."""

    failures: int
    locked_until: float | None = None


class LoginGate(Protocol):
    """The admin-login guard of the game server (`server.logins.Logins`), shared by every
    place that takes the admin password: the TCP admin port and the web viewer's login. An
    address that fails loginFailures times within loginFailureWindow seconds on either is
    locked out of both for loginLockout seconds. Ask `check` before looking at a password;
    report the outcome with `fail` or `succeed`. The calls return at once and may come from
    any thread."""

    def check(self, address: str) -> float:
        """0 when `address` may try a password now; else the seconds its lockout still runs
        (refuse without comparing the password)."""
        ...

    def fail(self, address: str) -> LoginFailure:
        """A wrong password from `address`."""
        ...

    def succeed(self, address: str) -> None:
        """The right password from `address`: its failures are forgotten."""
        ...


@runtime_checkable
class GuardsLogins(Protocol):
    """A companion that takes the admin password itself (the web viewer's login): the game
    server hands it its own `LoginGate` before `run`, so both share one lockout."""

    def use_login_gate(self, gate: LoginGate) -> None:
        """Check every login against `gate` from now on."""
        ...


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
