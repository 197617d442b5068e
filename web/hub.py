"""The web viewer's picture of every game, built only from the observer feed.

`GameHub` implements `server.feed.ObserverFeed`: each call updates one `GameView` in O(1)
(plus the swarm sizes of one state) and bumps its version. Pages never get a
message per event: they ask for the latest snapshot, at most a few times a second, and the
JSON of a snapshot is built once per change however many pages watch it (bench/viewer.py
measures what 500 viewers cost the game); `web.fanout` frames it once for all of them).
"""

from __future__ import annotations

import functools
import json
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ParamSpec

import structlog

from engine import GameResult, GameState, Team
from protocol.messages import Left, Memento, Paused, ResultMessage, RoomError, ServerMessage
from server.feed import RoomPlayer
from web.board import move_json, state_json

log = structlog.get_logger("web.hub")
P = ParamSpec("P")

# Finished games stay visible (with their result) for this many newer finished games.
KEEP_FINISHED = 50


class Change:
    """A version counter: pages compare it with the version they last sent (latest state
    wins; nobody is woken per change, see `web.fanout.Broadcast`)."""

    def __init__(self) -> None:
        self.version = 0

    def bump(self) -> None:
        """Something changed."""
        self.version += 1


@dataclass(eq=False)
class GameView:
    """One room as an observer has seen it."""

    room_id: str
    paused: bool
    prepared: bool
    opened_at: float  # wall clock (time.time())
    players: list[RoomPlayer] = field(default_factory=list)
    states: list[GameState] = field(default_factory=list)
    move_ms: list[float] = field(default_factory=list)  # state i -> i + 1, as observed
    clock_start: float = 0.0  # wall clock when the current move was (re)requested
    swarms: tuple[int, int] = (0, 0)
    result: GameResult | None = None
    errors: list[str] = field(default_factory=list)
    closed: bool = False
    change: Change = field(default_factory=Change)
    _json: str | None = None
    _json_version: int = -1

    @property
    def status(self) -> str:
        """waiting, running, paused or over."""
        if self.result is not None:
            return "over"
        if not self.states:
            return "waiting"
        return "paused" if self.paused else "running"

    @property
    def turn(self) -> int:
        """The turn of the latest state (0 before the start)."""
        return self.states[-1].turn if self.states else 0

    def time_used_ms(self) -> dict[str, float]:
        """Observed thinking time per team so far (Team ONE moves on even turns)."""
        used = {"ONE": 0.0, "TWO": 0.0}
        first_turn = self.states[0].turn if self.states else 0
        for index, ms in enumerate(self.move_ms):
            team = "ONE" if (first_turn + index) % 2 == 0 else "TWO"
            used[team] += ms
        return {team: round(ms, 1) for team, ms in used.items()}

    def names(self) -> list[str]:
        """Display names per team, the team name where a player has none."""
        names = ["Team ONE", "Team TWO"]
        for player in self.players:
            index = 0 if player.team == "ONE" else 1
            if player.name:
                names[index] = player.name
        return names

    def summary(self) -> dict[str, Any]:
        """The lobby page's row."""
        return {
            "id": self.room_id,
            "names": self.names(),
            "joined": sum(1 for player in self.players if player.joined),
            "status": self.status,
            "turn": self.turn,
            "swarm": list(self.swarms),
            "timeMs": self.time_used_ms(),
            "current": self.states[-1].current_team.name if self.states else None,
            "result": result_json(self.result),
            "openedAt": self.opened_at,
        }

    def to_json(self) -> str:
        """The game page's snapshot, built once per version."""
        if self._json is None or self._json_version != self.change.version:
            last = self.states[-1] if self.states else None
            previous = self.states[-2] if len(self.states) > 1 else None
            snapshot = self.summary()
            snapshot.update(
                state=state_json(last, previous) if last is not None else None,
                moves=[move_json(state.last_move) for state in self.states[1:]],
                firstTurn=self.states[0].turn if self.states else 0,
                moveMs=self.move_ms,
                clockStart=self.clock_start,
                errors=self.errors,
                closed=self.closed,
            )
            self._json = json.dumps(snapshot, separators=(",", ":"))
            self._json_version = self.change.version
        return self._json


def _never_raises(method: Callable[P, None]) -> Callable[P, None]:
    """The lobby calls the feed inside its handlers: a bug here must cost the viewer a
    picture, never a game its players."""

    @functools.wraps(method)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            method(*args, **kwargs)
        except Exception:
            log.exception("the web viewer failed to follow a room event")

    return guarded


class GameHub:
    """The observer feed of the web viewer (see module docstring)."""

    def __init__(self, *, keep_finished: int = KEEP_FINISHED) -> None:
        self.games: OrderedDict[str, GameView] = OrderedDict()
        self.lobby = Change()
        self._keep_finished = keep_finished
        self._lobby_json: str | None = None
        self._lobby_version = -1

    # ------------------------------------------------------------------ ObserverFeed

    @_never_raises
    def room_opened(
        self, room_id: str, *, paused: bool, prepared: bool, now: float | None = None
    ) -> None:
        """A new room: shown as waiting (`now`: when it happened, default now)."""
        self.games[room_id] = GameView(
            room_id, paused, prepared, time.time() if now is None else now
        )
        self._changed(self.games[room_id])

    @_never_raises
    def players_changed(self, room_id: str, players: Sequence[RoomPlayer]) -> None:
        """Names and joined slots."""
        view = self.games.get(room_id)
        if view is not None:
            view.players = list(players)
            self._changed(view)

    @_never_raises
    def observe(self, message: ServerMessage, now: float | None = None) -> None:
        """What an observer of the room receives (`now`: when, default now)."""
        room_id = getattr(message, "room_id", None)
        view = self.games.get(room_id) if isinstance(room_id, str) else None
        if view is None:
            return
        now = time.time() if now is None else now
        if isinstance(message, Memento):
            state = message.state
            if view.states and view.states[-1].turn == state.turn:
                # The same state again: a step of a paused game re-requested the move.
                view.clock_start = now
            else:
                if view.states and state.turn == view.states[-1].turn + 1:
                    view.move_ms.append(round((now - view.clock_start) * 1000, 1))
                view.states.append(state)
                view.clock_start = now
                view.swarms = (
                    max(0, state.greatest_swarm_weight(Team.ONE)),
                    max(0, state.greatest_swarm_weight(Team.TWO)),
                )
        elif isinstance(message, Paused):
            view.paused = message.paused
            view.clock_start = now
        elif isinstance(message, RoomError):
            view.errors.append(message.message)
        elif isinstance(message, ResultMessage):
            view.result = message.result
        elif isinstance(message, Left):
            view.closed = True
            self._forget_old()
        else:
            return
        self._changed(view)

    def apply(self, event: tuple[Any, ...]) -> None:
        """A feed call as `web.process` passes it on: `(kind, when, *arguments)`."""
        kind, now, *arguments = event
        if kind == "opened":
            room_id, paused, prepared = arguments
            self.room_opened(room_id, paused=paused, prepared=prepared, now=now)
        elif kind == "players":
            self.players_changed(*arguments)
        elif kind == "observe":
            self.observe(arguments[0], now)

    # ------------------------------------------------------------------ queries

    def lobby_json(self) -> str:
        """Every room's summary, newest first, built once per change."""
        if self._lobby_json is None or self._lobby_version != self.lobby.version:
            rooms = [view.summary() for view in reversed(self.games.values())]
            self._lobby_json = json.dumps({"rooms": rooms}, separators=(",", ":"))
            self._lobby_version = self.lobby.version
        return self._lobby_json

    def _changed(self, view: GameView) -> None:
        view.change.bump()
        self.lobby.bump()

    def _forget_old(self) -> None:
        finished = [room_id for room_id, view in self.games.items() if view.closed]
        for room_id in finished[: max(0, len(finished) - self._keep_finished)]:
            del self.games[room_id]


def result_json(result: GameResult | None) -> dict[str, Any] | None:
    if result is None:
        return None
    return {
        "winner": result.winner.name if result.winner is not None else None,
        "reason": result.reason,
        "regular": result.regular,
        "scores": [
            {"team": entry.team.name, "name": entry.name, "points": list(points)}
            for entry, points in result.scores
        ],
    }
