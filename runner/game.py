"""The match core: one game between two launched players on a prepared room, watched by an
admin session (which prepares the room, observes it and cancels it if the game goes wrong).

Reusable by a league: players come from launchers (runner.processes), not from subprocess code
here, and the caller decides what to do with the observed game (count, save, report).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import re
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

import trio

from client import ClientSession, ConnectionClosed, ServerRefused
from engine import GameState
from launching import MatchError, PlayerLauncher, RunningPlayer, exit_description
from protocol.events import Authenticate, SlotDescriptor
from protocol.messages import ErrorPacket, Left, Memento, ResultMessage, RoomError
from runner.scores import GameSummary
from runner.timing import ServerGames
from server.recorder import FinishedGame

PROCESS_EXIT_WAIT = 5.0  # after the result, as the official client
CRASH_GRACE = 3.0  # a player that exits may have seen the result before the observer did
ANSWER_TIMEOUT = 15.0  # for the server's answer to prepare/observe
# Seconds a game may take beyond its own limit (every move at the hard timeout for a match, the
# league's game limit) before the runner gives it up as hung: start-up, a slow CI machine.
GAME_MARGIN = 60.0


@dataclass(frozen=True)
class ServerAddress:
    """Where the games are played: the game server's address, its admin password and timeouts,
    and (a server in this process) its recorder sink and Unix socket."""

    host: str  # where the bots connect
    port: int
    password: str | None
    password_source: str
    hard_timeout: float
    soft_timeout: float = 2.0  # the official value; assumed for a server we did not start
    # The server in this process hands its finished games (server-measured move times) here.
    games: ServerGames | None = None
    unix_socket: Path | None = None  # the server's extra listener, for container players


@contextlib.asynccontextmanager
async def admin_session(server: ServerAddress) -> AsyncIterator[ClientSession]:
    """An admin connection to `server`, logged in when it has a password. Raises MatchError
    when the server cannot be reached or refuses the connection."""
    try:
        stream = await trio.open_tcp_stream(server.host, server.port)
    except OSError as error:
        where = f"{server.host}:{server.port}"
        raise MatchError(f"cannot connect to the server at {where}: {error}") from None
    admin = ClientSession(stream)
    try:
        if server.password is not None:
            try:
                await admin.authenticate(server.password)
            except ConnectionClosed as error:
                raise MatchError(f"the server closed the connection ({error.reason})") from None
        yield admin
    finally:
        await admin.aclose()


@dataclass(frozen=True)
class GameSpec:
    """One game to play: who sits where and on which board."""

    number: int  # 1-based
    one: int  # the player (0 = player1) holding slot 0, team ONE
    names: tuple[str, str]
    can_timeout: tuple[bool, bool]
    seed: int | None  # ask the server for the board GameState.initial(seed)


@dataclass
class Observation:
    """What the observer saw of one game."""

    summary: GameSummary
    packets: list[Memento | RoomError | ResultMessage]
    started: datetime
    # Whether the first memento showed the seeded board; None when no seed was asked for.
    seeded_board: bool | None
    # Milliseconds between consecutive states as the observer received them: each move's
    # time as seen from outside (thinking plus the server's and the network's share).
    move_ms: list[float]
    # Players whose process ended by itself during the game, with its exit status.
    crashed: dict[int, int | None] = field(default_factory=dict)
    # The server's own record of the game (in-process server only).
    server_game: FinishedGame | None = None
    # Seconds per phase of the game's slot (runner.game.play_game): where the wall time went.
    phases: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Received:
    message: object


@dataclass(frozen=True)
class ServerGone:
    reason: str


@dataclass(frozen=True)
class Exited:
    player: int
    status: int
    description: str  # "status 3", or with a launcher's reason: "status 137, killed: ..."


Event = Received | ServerGone | Exited

# Sees every state the observer receives (e.g. to draw the board).
Watcher = Callable[[GameSpec, GameState], None]


def refusal(packet: ErrorPacket, server: ServerAddress) -> MatchError:
    """The MatchError for a refused admin request."""
    if isinstance(packet.original_request, Authenticate):
        return MatchError(
            f"wrong password: the server at {server.host}:{server.port} refused the admin "
            f"login (password from {server.password_source})"
        )
    return MatchError(f"the server refused a request: {packet.message}")


def file_safe(name: str) -> str:
    """A player name usable in a file name."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def log_path(log_dir: Path, name: str, number: int) -> Path:
    """Where player `name`'s output of game `number` goes."""
    return log_dir / f"{file_safe(name)}_game{number}.log"


def left_the_game(reason: str, name: str) -> bool:
    """Whether the result's reason is the official LEFT violation of player `name`
    (`%s hat das Spiel verlassen: CAUSE`, protocol §6.4)."""
    return reason.startswith(f"{name} hat das Spiel verlassen: ")


async def play_game(
    spec: GameSpec,
    launchers: tuple[PlayerLauncher, PlayerLauncher],
    admin: ClientSession,
    server: ServerAddress,
    log_dir: Path,
    game_limit: float,
    watch: Watcher | None = None,
) -> Observation:
    """Prepare a room, start both players, observe the game to its end and make sure both
    players are gone afterwards. Raises MatchError when a player dies during the game, the
    game hangs longer than `game_limit` s, or the server refuses or goes away. A player
    whose process dies during the game (the server ends it: the player left) is no error:
    it lost, and `Observation.crashed` says so."""
    began = trio.current_time()
    slot_players = (spec.one, 1 - spec.one)
    slots = tuple(
        SlotDescriptor(spec.names[player], spec.can_timeout[player], True)
        for player in slot_players
    )
    try:
        prepared = await admin.prepare(slots, seed=spec.seed, timeout=ANSWER_TIMEOUT)
        room = prepared.room_id
        await admin.observe(room, timeout=ANSWER_TIMEOUT)
    except ServerRefused as error:
        raise refusal(error.packet, server) from None
    except ConnectionClosed as error:
        raise MatchError(f"the server closed the connection ({error.reason})") from None
    except trio.TooSlowError:
        raise MatchError(f"the server did not answer within {ANSWER_TIMEOUT:g} s") from None

    prepared_at = trio.current_time()
    launched_at = ended_at = exited_at = math.nan
    players: dict[int, RunningPlayer] = {}
    killed: set[int] = set()
    observed: Observation | None = None
    send_events, events = trio.open_memory_channel[Event](math.inf)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_read, admin, send_events)
        try:
            for slot, player in enumerate(slot_players):
                name = spec.names[player]
                players[player] = await launchers[player].launch(
                    name,
                    server.host,
                    server.port,
                    prepared.reservations[slot],
                    log_path(log_dir, name, spec.number),
                )
                nursery.start_soon(_watch, players[player], player, send_events)
            launched_at = trio.current_time()
            observed = await _observe(spec, server, room, log_dir, events, game_limit, watch)
            ended_at = trio.current_time()
            with trio.move_on_after(PROCESS_EXIT_WAIT):
                for running in players.values():
                    await running.wait()
            exited_at = trio.current_time()
        finally:
            if observed is None:
                # A crash, a hang or Ctrl+C: the room must not wait for players that are gone.
                # Best effort: a lost connection must not hide what ended the game.
                with (
                    trio.CancelScope(shield=True),
                    trio.move_on_after(2),
                    contextlib.suppress(ConnectionClosed),
                ):
                    await admin.cancel(room)
            for player, running in players.items():
                if await running.stop():
                    killed.add(player)
            nursery.cancel_scope.cancel()  # the reader and the watchers
    first_state = observed.phases.pop("first_state", launched_at)
    observed.phases = {
        "prepare": prepared_at - began,  # runner: prepare and observe the room
        "launch": launched_at - prepared_at,  # runner: start the bot processes
        "startup": first_state - launched_at,  # bots: connect and join
        "game": ended_at - first_state,  # the game, to the room's <left>
        "exit": exited_at - ended_at,  # bots: exit after the game
        "cleanup": trio.current_time() - exited_at,  # runner: reap, stop leftovers
    }
    summary = observed.summary
    # The server may notice a crashed bot's closed socket (and end the game with a result)
    # before we see the process exit: a bot whose process ended by itself and whose leaving
    # ended the game died during it.
    crashed_players = {
        player: running.returncode
        for player, running in players.items()
        if player not in killed and left_the_game(summary.result.reason, spec.names[player])
    }
    observed.crashed = crashed_players
    for player, running in players.items():
        name = spec.names[player]
        if player in crashed_players:
            summary.notes.append(f"{name} crashed (exit {exit_description(running)})")
        elif player in killed:
            summary.notes.append(f"{name} still running after {PROCESS_EXIT_WAIT:g} s: killed")
        elif running.returncode:
            summary.notes.append(f"{name} exited with {exit_description(running)}")
    return observed


async def _read(admin: ClientSession, events: trio.MemorySendChannel[Event]) -> None:
    """Turn the admin session's messages into events on the channel the players' exits use,
    so one loop can wait for either."""
    while True:
        try:
            message = await admin.receive()
        except ConnectionClosed as error:
            await events.send(ServerGone(error.reason))
            return
        await events.send(Received(message))


async def _watch(
    running: RunningPlayer, player: int, events: trio.MemorySendChannel[Event]
) -> None:
    status = await running.wait()
    await events.send(Exited(player, status, exit_description(running)))


async def _observe(
    spec: GameSpec,
    server: ServerAddress,
    room: str,
    log_dir: Path,
    events: trio.MemoryReceiveChannel[Event],
    game_limit: float,
    watch: Watcher | None = None,
) -> Observation:
    """Read the room's messages until its result and `<left>`. Raises MatchError when a
    player process dies during the game or the game takes longer than `game_limit`."""
    number = spec.number
    hang_deadline = trio.current_time() + game_limit
    crash_deadline = math.inf
    exited_early: dict[int, str] = {}  # player -> exit, for exits before the result
    packets: list[Memento | RoomError | ResultMessage] = []
    result: ResultMessage | None = None
    turn: int | None = None
    seeded_board: bool | None = None
    state_times: list[float] = []
    started = datetime.now(UTC)
    while True:
        event: Event | None = None
        with trio.move_on_at(min(hang_deadline, crash_deadline)):
            event = await events.receive()
        if event is None:
            if trio.current_time() >= crash_deadline:
                _crashed(spec, log_dir, exited_early)
            raise MatchError(
                f"game {number} hangs: no result after {game_limit:g} s "
                "(--game-timeout changes the limit)"
            )
        if isinstance(event, ServerGone):
            raise MatchError(f"the server closed the connection during game {number}")
        if isinstance(event, Exited):
            if result is None:
                exited_early[event.player] = event.description
                crash_deadline = min(crash_deadline, trio.current_time() + CRASH_GRACE)
            continue
        message = event.message
        if isinstance(message, ErrorPacket):
            raise refusal(message, server)
        if getattr(message, "room_id", None) != room:
            continue  # a late message of an earlier room
        if isinstance(message, Memento | RoomError | ResultMessage):
            packets.append(message)
        if isinstance(message, Memento):
            state_times.append(trio.current_time())
            if turn is None and spec.seed is not None:
                seeded_board = message.state.rows() == GameState.initial(spec.seed).rows()
            turn = message.state.turn
            if watch is not None:
                watch(spec, message.state)
        elif isinstance(message, ResultMessage):
            result = message
            # A player whose process ended before the observer saw the result may have had
            # the result already: play_game decides from the reason whether it crashed.
            crash_deadline = math.inf
        elif isinstance(message, Left) and result is not None:
            break
    seed = spec.seed if seeded_board else None
    summary = GameSummary(number, spec.one, room, result.result, turn, seed)
    move_ms = [(b - a) * 1000 for a, b in itertools.pairwise(state_times)]
    observation = Observation(summary, packets, started, seeded_board, move_ms)
    if state_times:
        observation.phases["first_state"] = state_times[0]
    return observation


def _crashed(
    spec: GameSpec,
    log_dir: Path,
    exited: Mapping[int, str],
) -> NoReturn:
    details = ", ".join(f"{spec.names[player]} ({how})" for player, how in sorted(exited.items()))
    logs = ", ".join(
        str(log_path(log_dir, spec.names[player], spec.number)) for player in sorted(exited)
    )
    raise MatchError(
        f"player process exited before game {spec.number} ended: {details}; see {logs}"
    )
