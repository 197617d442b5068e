""" "Play from here": a person against a bot from any position of any game, in a real room of the
game server.

The viewer prepares the room over its admin connection with the position as the room's start
(`<prepare>`'s `<state>`, docs/server.md): one reserved slot for the person (a
`web.sc.HumanPlayer`, no time limit), one for the bot, which keeps the normal clocks. The bot
is a process: a built-in bot (`piranhas-bot`, `BUILTIN_BUDGET` seconds a move) or one of the
commands the operator configured (`webPlayBots`; a page only names one, it never sends a
command), started by the match runner's launcher under its `BotReaper`, so neither it nor
anything it spawns outlives its game or the viewer. Nothing of this runs on the game server's
thread: the viewer is a client of it like any other.

Bounded: `webPlayMaxGames` such games at once and `webPlayMaxGamesPerAddress` per remote
address (loopback exempt unless `perAddressLimitOnLoopback`, as the game port); a bot that
has not joined within `JOIN_SECONDS`, or a person who leaves a move alone for `IDLE_SECONDS`,
ends the game (the admin `<cancel>`), and the bot process is stopped when the game ends.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import structlog
import trio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from engine import Direction, FieldState, GameState, Move, Team, last_move_problem
from launching import MatchError, RunningPlayer
from protocol import GAME_TYPE
from protocol.events import Prepare, SlotDescriptor
from runner.options import player_command
from runner.processes import ProcessLauncher, SpawnThread
from runner.reaper import BotReaper, reaped
from server.config import Settings
from server.limits import is_loopback
from server.values import BUILTIN_PLAY_BOTS
from web.auth import Session, client_address
from web.http import error, json_body
from web.sc import HumanPlayer

log = structlog.get_logger("web.playfrom")

BUILTIN_BUDGET = 1.0  # seconds a move for a built-in bot (the soft timeout is 2 s)
JOIN_SECONDS = 30.0  # a bot process that has not joined by then is stopped, the game cancelled
IDLE_SECONDS = 600.0  # a person's move may take this long; then the game is cancelled
WATCH_INTERVAL = 0.1
_FIELDS = {field.name: field for field in FieldState}


class StartError(ValueError):
    """A start position the page sent that is no position to play from; says why."""


def start_state(body: dict[str, Any]) -> GameState:
    """The position of a request body: `board` (rows[y][x] of FieldState names, y = 0 the
    bottom row, as the pages' state JSON), `turn`, `firstUnion` ("ONE", "TWO" or null) and
    `lastMove` (null or {x, y, dir}: the move that led to this board, checked by the engine)."""
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
    state = GameState.from_rows(
        rows,
        turn=turn,
        first_union=None if union is None else Team[union],
        last_move=_last_move(body.get("lastMove")),
    )
    if state.is_over:
        raise StartError("the game is over in this position: nothing to play")
    # The game server refuses it too (server.prepare); here it is a 400 naming the field.
    wrong = last_move_problem(state)
    if wrong is not None:
        raise StartError(f"lastMove: {wrong}")
    return state


def _last_move(value: Any) -> Move | None:
    """The move that led to the position (shown as its arrow, kept in the replay), or None."""
    if value is None:
        return None
    try:
        x, y, direction = value["x"], value["y"], Direction[value["dir"]]
    except (KeyError, TypeError):
        raise StartError("lastMove: null or {x, y, dir}") from None
    if not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 10 for n in (x, y)):
        raise StartError("lastMove: x and y are whole numbers 0 … 9")
    return Move(x, y, direction)


class PlayBots:
    """The bots "play from here" offers, the games running against them, and their launches
    (see the module docstring). `cancel(room)` ends a room over the admin connection."""

    def __init__(
        self,
        settings: Settings,
        cancel: Callable[[str], Awaitable[None]],
        spawner: SpawnThread | None = None,
    ) -> None:
        self.commands: dict[str, str] = {
            name: f"builtin:{name} --budget {BUILTIN_BUDGET:g}" for name in BUILTIN_PLAY_BOTS
        }
        self.commands.update(settings.web_play_bots)
        self.max_games = settings.web_play_max_games
        self.max_per_address = settings.web_play_max_games_per_address
        self.limit_loopback = settings.per_address_limit_on_loopback
        self.games: dict[str, str] = {}  # token → remote address, while its bot may run
        self.bots: dict[str, RunningPlayer] = {}  # token → its bot process, while it runs
        self._cancel = cancel
        self._spawner = spawner  # None: from this thread (a viewer in the server's process)
        self._reaper: BotReaper | None = None
        self._logs: Path | None = None
        self._reaper_lock = trio.Lock()

    @property
    def names(self) -> list[str]:
        """The bots a page may name: the built-in ones, then the configured ones."""
        return list(self.commands)

    def refusal(self, address: str) -> str | None:
        """Why one more game from `address` is too many now, or None."""
        if len(self.games) >= self.max_games:
            return f"{self.max_games} games against bots are running: try again later"
        exempt = is_loopback(address) and not self.limit_loopback
        mine = sum(1 for other in self.games.values() if other == address)
        if not exempt and mine >= self.max_per_address:
            return f"at most {self.max_per_address} games against bots per address at once"
        return None

    def claim(self, token: str, address: str) -> None:
        """Count the game `token` (its bot is about to start) until `play` ends."""
        self.games[token] = address

    async def play(
        self, player: HumanPlayer, bot: str, reservation: str, room_id: str, port: int
    ) -> None:
        """Start `bot` for `reservation` and keep it until `player`'s game ends; then stop it
        (and whatever it started). The game is cancelled when the bot cannot start, does not
        join, or the person leaves a move alone for IDLE_SECONDS."""
        running: RunningPlayer | None = None
        log_path: Path | None = None
        try:
            try:
                argv = player_command(self.commands[bot], f"webPlayBots {bot}")
                reaper, logs = await self._launch_context()
                log_path = logs / f"{player.token}.log"
                launcher = reaped(ProcessLauncher(argv, self._spawner), reaper)
                running = await launcher.launch(bot, "127.0.0.1", port, reservation, log_path)
            except MatchError as error:
                log.warning("play from here: the bot did not start", bot=bot, error=str(error))
                await self._end(player, room_id, f"the bot {bot} could not start: {error}")
                return
            self.bots[player.token] = running
            log.info("play from here: bot started", bot=bot, room=room_id)
            await self._watch(player, running, bot, room_id)
        finally:
            with trio.CancelScope(shield=True):
                if running is not None:
                    await running.stop()
                if log_path is not None:
                    with contextlib.suppress(OSError):
                        log_path.unlink()
            self.bots.pop(player.token, None)
            self.games.pop(player.token, None)

    async def _watch(
        self, player: HumanPlayer, running: RunningPlayer, bot: str, room_id: str
    ) -> None:
        joined_by = trio.current_time() + JOIN_SECONDS
        while not player.ended:
            if player.state is None:  # the game starts when the bot has joined
                if running.returncode is not None:
                    await self._end(
                        player, room_id, f"the bot {bot} ended (status {running.returncode})"
                    )
                    return
                if trio.current_time() > joined_by:
                    await self._end(
                        player, room_id, f"the bot {bot} did not join within {JOIN_SECONDS:g} s"
                    )
                    return
            elif player.my_turn and time.time() - player.requested_at > IDLE_SECONDS:
                await self._end(player, room_id, f"no move for {IDLE_SECONDS:g} s: the game ended")
                return
            await trio.sleep(WATCH_INTERVAL)

    async def _end(self, player: HumanPlayer, room_id: str, why: str) -> None:
        player.errors.append(why)
        player.change.bump()
        with trio.move_on_after(15):
            await self._cancel(room_id)

    async def _launch_context(self) -> tuple[BotReaper, Path]:
        """The reaper and the bot log directory, made on the first launch (a companion
        process and a subreaper role only where someone plays)."""
        async with self._reaper_lock:
            if self._reaper is None:
                self._logs = Path(tempfile.mkdtemp(prefix="piranhas-play-"))
                self._reaper = await trio.to_thread.run_sync(BotReaper)
            assert self._logs is not None
            return self._reaper, self._logs

    def close(self) -> None:
        """The viewer stops: end the reaper (it kills what is left) and remove the logs."""
        if self._reaper is not None:
            self._reaper.close()
            self._reaper = None
        if self._logs is not None:
            shutil.rmtree(self._logs, ignore_errors=True)
            self._logs = None


class PlayHost(Protocol):
    """What the route needs of the viewer (`web.app.WebViewer`)."""

    humans: dict[str, HumanPlayer]  # token → the person's player, as every played game
    game_port: int

    async def admin(self, *packets: Any) -> tuple[Any, Response | None]: ...

    def no_room_for(self, session: Session) -> Response | None: ...

    def spawn(self, task: Callable[[], Awaitable[None]]) -> None: ...


class PlayFromRoutes:
    """`POST /api/play/from`: start a game against a bot of `bots` from a posted position."""

    def __init__(self, bots: PlayBots, host: PlayHost) -> None:
        self.bots = bots
        self.host = host

    def routes(
        self,
        guard: Callable[
            [Callable[[Request, Session], Awaitable[Response]]],
            Callable[[Request], Awaitable[Response]],
        ],
    ) -> list[Route]:
        """The routes, each behind `guard` (a session, CSRF, this site; as open as playing)."""
        return [Route("/api/play/from", guard(self.play_from), methods=["POST"])]

    async def play_from(self, request: Request, session: Session) -> Response:
        """Play from here: a room of the game server prepared to start from the posted
        position, the person in one slot and a bot process in the other (module docstring);
        `team` is the person's side (default: the side to move), `bot` a name of
        `PlayBots.names` (a built-in bot or a configured command: never a command itself)."""
        body = await json_body(request)
        try:
            state = start_state(body)
        except StartError as failure:
            return error(400, str(failure))
        bot = body.get("bot", "search")
        if not isinstance(bot, str) or bot not in self.bots.commands:
            return error(400, f"bot: one of {', '.join(self.bots.names)}")
        team_name = body.get("team") or state.current_team.name
        if team_name not in ("ONE", "TWO"):
            return error(400, "team: ONE or TWO")
        refused = self.host.no_room_for(session)
        if refused is not None:
            return refused
        address = client_address(request)
        too_many = self.bots.refusal(address)
        if too_many is not None:
            return error(429, too_many)
        human = SlotDescriptor("Mensch", False, True)
        opponent = SlotDescriptor(bot, True, True)
        slots = (human, opponent) if team_name == "ONE" else (opponent, human)
        token = secrets.token_urlsafe(16)
        self.bots.claim(token, address)  # before the await: concurrent requests count it
        try:
            reply, failed = await self.host.admin(Prepare(GAME_TYPE, False, slots, state=state))
        except BaseException:
            self.bots.games.pop(token, None)
            raise
        if failed is not None:
            self.bots.games.pop(token, None)
            return failed
        prepared = reply.prepared[0]
        mine, theirs = prepared.reservations if team_name == "ONE" else prepared.reservations[::-1]
        player = HumanPlayer(token, mine, session.token)
        player.opponent = bot
        self.host.humans[token] = player
        port = self.host.game_port
        self.host.spawn(partial(player.run, port))
        self.host.spawn(partial(self.bots.play, player, bot, theirs, prepared.room_id, port))
        log.info("play from here", room=prepared.room_id, turn=state.turn, bot=bot, team=team_name)
        return JSONResponse({"token": token, "room": prepared.room_id})
