""" "Play from here": a person against a built-in bot from any position of any game, played on
the engine in the viewer's process (the bot thinks in a worker thread).

Why not a room of the game server: the SC protocol has no per-room start position —
`loadGameFile` + `turn` is one setting for every `<join>` room of the server and `<prepare>`
ignores it (docs/protocol.md) — so a position of the page's choosing cannot be given to a
room. The page sees a `LocalGame` exactly as it sees a `web.sc.HumanPlayer` (the play page's
socket, `web.sc.player_json`), and the game server's thread is never involved.

Bounded: the bot has `BOT_BUDGET` seconds a move; a game the person leaves alone for
`IDLE_SECONDS` ends (no winner) and frees its slot; the count of games is the play page's
(`MAX_HUMANS`, `MAX_GAMES_PER_SESSION` in `web.app`).
"""

from __future__ import annotations

import time
from typing import Any

import structlog
import trio

from bots.players import Bot, make_bot
from engine import (
    FieldState,
    GameResult,
    GameState,
    InvalidMoveError,
    Move,
    PlayerEntry,
    Team,
    game_result,
)
from web.hub import Change

log = structlog.get_logger("web.local")

BOTS = ("random", "greedy", "search")  # offered on the pages
BOT_BUDGET = 1.0  # seconds a move for the bot
IDLE_SECONDS = 600.0  # a person's move may take this long; then the game ends
_FIELDS = {field.name: field for field in FieldState}


class StartError(ValueError):
    """A start position the page sent that is no position to play from; says why."""


def start_state(body: dict[str, Any]) -> GameState:
    """The position of a request body: `board` (rows[y][x] of FieldState names, y = 0 the
    bottom row, as the pages' state JSON), `turn`, `firstUnion` ("ONE", "TWO" or null)."""
    board, turn, union = body.get("board"), body.get("turn"), body.get("firstUnion")
    if not (isinstance(board, list) and len(board) == 10):
        raise StartError("board: 10 rows of 10 field names")
    rows = []
    for row in board:
        if not (isinstance(row, list) and len(row) == 10):
            raise StartError("board: 10 rows of 10 field names")
        try:
            rows.append([_FIELDS[name] for name in row])
        except (KeyError, TypeError):
            raise StartError("board: unknown field name") from None
    if not isinstance(turn, int) or isinstance(turn, bool) or not 0 <= turn <= 60:
        raise StartError("turn: a whole number 0 … 60")
    if union not in (None, "ONE", "TWO"):
        raise StartError("firstUnion: ONE, TWO or null")
    state = GameState.from_rows(rows, turn=turn, first_union=None if union is None else Team[union])
    if state.is_over:
        raise StartError("the game is over in this position: nothing to play")
    return state


class LocalGame:
    """One game of a person (`team`) against a built-in bot from `start`; the interface of
    `web.sc.HumanPlayer` that the play page's socket reads."""

    def __init__(
        self,
        token: str,
        owner: str,
        start: GameState,
        team: Team,
        bot_name: str,
        seed: int | None = None,
    ) -> None:
        self.token = token
        self.owner = owner
        self.room_id: str | None = None  # no room of the game server
        self.team: Team | None = team
        self.state: GameState | None = start
        self.previous: GameState | None = None
        self.my_turn = False
        self.requested_at = 0.0
        self.result: GameResult | None = None
        self.errors: list[str] = []
        self.ended = False
        self.change = Change()
        self.bot_name = bot_name
        self._bot: Bot = make_bot(bot_name, seed)
        self._entries = [
            PlayerEntry(team, "Mensch"),
            PlayerEntry(team.opponent, bot_name),
        ]
        self._moves, self._received = trio.open_memory_channel[Move](1)

    async def run(self) -> None:
        """Play until the game is over or the person has not moved for IDLE_SECONDS."""
        try:
            await self._play()
        finally:
            self.ended = True
            self.my_turn = False
            self.change.bump()

    async def _play(self) -> None:
        assert self.state is not None
        while not self.state.is_over:
            state = self.state
            if state.current_team is self.team:
                self.my_turn = True
                self.requested_at = time.time()
                self.change.bump()
                with trio.move_on_after(IDLE_SECONDS):
                    move = await self._received.receive()
                    self._advance(state.apply(move))  # checked by `move` already
                    continue
                self.errors.append(f"no move for {IDLE_SECONDS:g} s: the game ended")
                self.result = game_result(state, self._entries, aborted="abandoned")
                return
            move = await trio.to_thread.run_sync(self._bot.choose, state, BOT_BUDGET)
            try:
                self._advance(state.apply(move))
            except InvalidMoveError as error:  # built-in bots never do; never a crash
                log.warning("built-in bot moved illegally", bot=self.bot_name, error=str(error))
                self.result = game_result(state, self._entries, aborted=f"bot error: {error}")
                return
        self.result = game_result(self.state, self._entries)

    def _advance(self, state: GameState) -> None:
        self.previous, self.state = self.state, state
        self.change.bump()

    async def move(self, move: Move) -> str | None:
        """Take the person's `move` if it is their turn and legal; else say why not."""
        if not self.my_turn or self.state is None or self.ended:
            return "it is not your turn"
        try:
            self.state.apply(move)
        except InvalidMoveError as error:
            return str(error)
        self.my_turn = False
        try:
            self._moves.send_nowait(move)
        except trio.WouldBlock:  # a move is pending already
            return "it is not your turn"
        return None
