"""The web viewer as an SC client of its own game server (loopback TCP): admin requests and
human players, on `client.ClientSession` like every other client of the project.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import structlog
import trio

from client import ClientSession, ConnectionClosed, open_session
from engine import GameResult, GameState, InvalidMoveError, Move, Team
from protocol.events import Authenticate, ClientPacket, CloseRequest, JoinPrepared
from protocol.messages import (
    ErrorPacket,
    Joined,
    Left,
    Memento,
    MoveRequest,
    Prepared,
    ResultMessage,
    RoomError,
    ServerMessage,
    WelcomeMessage,
)
from web.board import legal_targets, state_json
from web.hub import Change, result_json

log = structlog.get_logger("web.sc")

ADMIN_TIMEOUT = 10.0
HOST = "127.0.0.1"  # the game server runs in this process: always loopback


@dataclass
class AdminReply:
    """What the server answered to an admin request: `<prepared>` and error messages."""

    prepared: list[Prepared] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


async def admin_request(
    port: int, password: str | None, packets: Sequence[ClientPacket]
) -> AdminReply:
    """Authenticate and send `packets` on a fresh loopback connection, then `<close/>`; collect
    the answers until the server closes it. A wrong password shows in `errors`. Raises
    ConnectionClosed when the server cannot be reached, trio.TooSlowError when it does not
    finish answering within ADMIN_TIMEOUT."""
    reply = AdminReply()
    with trio.fail_after(ADMIN_TIMEOUT):
        async with open_session(HOST, port) as session:
            # One write: the server answers in order, then closes after <close/>. (Not
            # session.authenticate: a missing password is sent as such, and refused.)
            await session.send(Authenticate(password), *packets, CloseRequest())
            while True:
                try:
                    message = await session.receive()
                except ConnectionClosed as closed:
                    if closed.protocol_error:
                        raise
                    break
                if isinstance(message, Prepared):
                    reply.prepared.append(message)
                elif isinstance(message, ErrorPacket):
                    reply.errors.append(message.message)
    return reply


class HumanPlayer:
    """A person in a slot of a room: an SC client that moves when the page says so.

    `run` joins with a reservation and follows the game; the page reads `state`, `my_turn`,
    `result` and calls `move`. `change` wakes the page's socket on every update."""

    def __init__(self, token: str, reservation: str, owner: str) -> None:
        self.token = token
        self.reservation = reservation
        self.owner = owner  # the browser session that may see and move
        self.room_id: str | None = None
        self.team: Team | None = None
        self.state: GameState | None = None
        self.previous: GameState | None = None  # the state before `state` (for the last move)
        self.my_turn = False
        self.requested_at = 0.0  # wall clock of the current move request
        self.result: GameResult | None = None
        self.errors: list[str] = []
        self.ended = False
        self.change = Change()
        self.opponent = ""  # the bot's name when the viewer started it (play from here)
        self._session: ClientSession | None = None

    async def run(self, port: int) -> None:
        """Play until the game ends or the connection breaks."""
        try:
            async with open_session(HOST, port) as session:
                self._session = session
                await session.send(JoinPrepared(self.reservation))
                while True:
                    message = await session.receive()
                    self._on(message)
                    self.change.bump()
                    if isinstance(message, Left):
                        break
                    if isinstance(message, ErrorPacket) and self.room_id is None:
                        break  # the join was refused (a used code, a cancelled room)
        except ConnectionClosed as error:
            self.errors.append(f"connection to the game server failed: {error.reason}")
        finally:
            self.ended = True
            self.my_turn = False
            self.change.bump()

    def _on(self, message: ServerMessage) -> None:
        if isinstance(message, Joined):
            self.room_id = message.room_id
        elif isinstance(message, WelcomeMessage):
            self.team = message.team
        elif isinstance(message, Memento):
            if self.state is None or message.state.turn != self.state.turn:
                self.previous = self.state
            self.state = message.state
        elif isinstance(message, MoveRequest):
            self.my_turn = True
            self.requested_at = time.time()
        elif isinstance(message, ResultMessage):
            self.result = message.result
            self.my_turn = False
        elif isinstance(message, (RoomError, ErrorPacket)):
            self.errors.append(message.message)

    async def move(self, move: Move) -> str | None:
        """Send `move` if it is this player's turn and legal; else say why not."""
        session = self._session
        if not self.my_turn or self.state is None or session is None or self.room_id is None:
            return "it is not your turn"
        try:
            self.state.apply(move)
        except InvalidMoveError as error:
            return str(error)
        self.my_turn = False
        self.change.bump()
        try:
            await session.send_move(self.room_id, move)
        except ConnectionClosed as error:
            return f"the move did not reach the game server: {error.reason}"
        return None


def player_json(player: HumanPlayer) -> str:
    """What a person's page shows of their game."""
    state = player.state
    return json.dumps(
        {
            "room": player.room_id,
            "team": player.team.name if player.team is not None else None,
            "opponent": player.opponent,
            "state": state_json(state, player.previous) if state is not None else None,
            "myTurn": player.my_turn,
            "legal": legal_targets(state) if state is not None and player.my_turn else {},
            "requestedAt": player.requested_at,
            "result": result_json(player.result),
            "errors": player.errors[-5:],
            "ended": player.ended,
        },
        separators=(",", ":"),
    )
