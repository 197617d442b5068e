"""`piranhas-match`: let the server start two bots, play N games between them and count.

The model is the official TestClient (spec §9): one admin connection prepares each game with
two reserved slots, observes it, starts both player commands with the contest options
`--host H --port P --reservation CODE`, and reads the result as an observer. The starting side
alternates: in game k (0-based) player1 holds slot 0 (team ONE, moves first) when k is even.
Scores are aggregated per player like the official client: Siegpunkte summed, Schwarmgröße as
a running mean.

Without --port the server runs in this process (on a free loopback port, with a random admin
password); with --port the games are played on a running server.

Exit status: 0 when every game was played; 2 for bad options, a missing player command, an
unreachable server, a wrong password, a player process that dies during its game or a game
that hangs (as the official client); 130 after Ctrl+C.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import NoReturn, TextIO, TypeVar

import trio

from engine import ROUND_LIMIT, GameResult, Team
from protocol import GAME_TYPE, ClientConnection, NeedData, RemoteProtocolError
from protocol.events import (
    Authenticate,
    CancelRequest,
    ClientPacket,
    CloseRequest,
    Observe,
    Prepare,
    SlotDescriptor,
    StreamEnd,
)
from protocol.messages import (
    ErrorPacket,
    Left,
    Memento,
    Observed,
    Prepared,
    ResultMessage,
    RoomError,
    ServerMessage,
)
from server.config import DEFAULT_PASSWORD, PROPERTIES_FILE, ConfigError, load_settings

PROGRAM = "piranhas-match"
EXIT_OK = 0
EXIT_ERROR = 2  # the official TestClient's status for every failure
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it

DEFAULT_HARD_TIMEOUT = 10.0  # the official hard timeout; assumed for a server we did not start
GAME_MARGIN = 60.0  # seconds on top of "every move takes the hard timeout": start-up, slow CI
PROCESS_EXIT_WAIT = 5.0  # after the result, as the official client
TERMINATE_WAIT = 1.0  # between SIGTERM and SIGKILL for a process that must go
CRASH_GRACE = 3.0  # a player that exits may have seen the result before the observer did
ANSWER_TIMEOUT = 15.0  # for the server's answer to prepare/observe


E = TypeVar("E", bound=BaseException)


class MatchError(Exception):
    """Ends the run with status 2; the message says what happened."""


# ---------------------------------------------------------------------------------------------
# Options


@dataclass(frozen=True)
class Options:
    commands: tuple[list[str], list[str]]
    names: tuple[str, str]
    can_timeout: tuple[bool, bool]
    games: int
    host: str | None  # None: start the server in this process
    port: int | None
    password: str | None
    password_source: str  # for the message when the server refuses it
    log_dir: Path
    results: Path | None
    save_replay: bool
    replay_dir: Path
    game_timeout: float | None  # None: derived from the server's hard timeout


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROGRAM,
        description=(
            "Play GAMES games of Piranhas between two bots and count the scores. Each player "
            "command is started once per game with '--host H --port P --reservation CODE' "
            "appended (the contest convention; socha's Starter and the Java player accept it). "
            "The starting side alternates: player1 moves first in games 1, 3, 5, ..."
        ),
    )
    parser.add_argument("--player1", required=True, metavar="COMMAND", help="first bot command")
    parser.add_argument("--player2", required=True, metavar="COMMAND", help="second bot command")
    parser.add_argument(
        "--games",
        "-t",
        "--tests",
        type=int,
        default=10,
        metavar="N",
        help="number of games (default 10)",
    )
    parser.add_argument(
        "--name1", default="player1", metavar="NAME", help="display name of player1"
    )
    parser.add_argument(
        "--name2", default="player2", metavar="NAME", help="display name of player2"
    )
    parser.add_argument("--no-timeout", action="store_true", help="neither player can time out")
    parser.add_argument("--no-timeout1", action="store_true", help="player1 cannot time out")
    parser.add_argument("--no-timeout2", action="store_true", help="player2 cannot time out")
    parser.add_argument(
        "--host", default=None, help="host of a running server (with --port; default localhost)"
    )
    parser.add_argument(
        "--port",
        "-p",
        type=int,
        default=None,
        help="use the server running on this port instead of starting one",
    )
    parser.add_argument(
        "--password",
        default=None,
        help="admin password of the running server (default: from "
        "./server.properties, else examplepassword)",
    )
    parser.add_argument(
        "--log-dir",
        type=Path,
        metavar="DIR",
        default=Path("log"),
        help="bot output goes to DIR/<name>_game<k>.log, the in-process server's log to "
        "DIR/server.log (default ./log)",
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        metavar="FILE",
        help="append one JSON line per game to FILE",
    )
    parser.add_argument(
        "--save-replay", action="store_true", help="save a replay of every game (official format)"
    )
    parser.add_argument(
        "--replay-dir",
        type=Path,
        metavar="DIR",
        default=Path("replays"),
        help="where replays go (default ./replays)",
    )
    parser.add_argument(
        "--game-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="a game that takes longer is reported as hung and the run ends "
        "(default: 60 moves x the server's hard timeout + 60 s)",
    )
    return parser


def parse_options(argv: Sequence[str]) -> Options:
    """Raises SystemExit (argparse) for unusable options, MatchError for bad values."""
    arguments = build_parser().parse_args(list(argv))
    if arguments.games < 1:
        raise MatchError(f"--games must be at least 1, got {arguments.games}")
    if arguments.port is None and (arguments.host is not None or arguments.password is not None):
        raise MatchError("--host and --password are for a running server: give its --port too")
    if arguments.port is not None and not 0 < arguments.port < 65536:
        raise MatchError(f"--port must be 1..65535, got {arguments.port}")
    if arguments.game_timeout is not None and not arguments.game_timeout > 0:
        raise MatchError(f"--game-timeout must be positive, got {arguments.game_timeout}")
    commands = (
        player_command(arguments.player1, "--player1"),
        player_command(arguments.player2, "--player2"),
    )
    for flag, name in (("--name1", arguments.name1), ("--name2", arguments.name2)):
        if not name.strip():
            raise MatchError(f"{flag} must not be blank")
    password = arguments.password
    password_source = "--password"
    if arguments.port is not None and password is None:
        password, password_source = properties_password()
    return Options(
        commands=commands,
        names=distinct_names(arguments.name1, arguments.name2),
        can_timeout=(
            not (arguments.no_timeout or arguments.no_timeout1),
            not (arguments.no_timeout or arguments.no_timeout2),
        ),
        games=arguments.games,
        host=(arguments.host or "localhost") if arguments.port is not None else None,
        port=arguments.port,
        password=password,
        password_source=password_source,
        log_dir=arguments.log_dir,
        results=arguments.results,
        save_replay=arguments.save_replay,
        replay_dir=arguments.replay_dir,
        game_timeout=arguments.game_timeout,
    )


def player_command(text: str, flag: str) -> list[str]:
    """The argv of a player command, checked now: a typo should fail before any game starts,
    not as a "crashed player" in game 1. A lone `.jar` runs with `java -jar`, as officially."""
    try:
        argv = shlex.split(text)
    except ValueError as error:
        raise MatchError(f"{flag}: cannot parse {text!r}: {error}") from None
    if not argv:
        raise MatchError(f"{flag}: the player command is empty")
    if len(argv) == 1 and argv[0].endswith(".jar"):
        if not Path(argv[0]).is_file():
            raise MatchError(f"{flag}: {argv[0]}: no such file")
        argv = ["java", "-jar", argv[0]]
    if shutil.which(argv[0]) is None:
        what = "not executable" if Path(argv[0]).exists() else "not found"
        raise MatchError(f"{flag}: command {argv[0]!r} {what} (from {text!r})")
    return argv


def distinct_names(name1: str, name2: str) -> tuple[str, str]:
    """Equal names get `-1`/`-2` appended, as the official TestClient does."""
    if name1 == name2:
        return f"{name1}-1", f"{name2}-2"
    return name1, name2


def properties_password() -> tuple[str | None, str]:
    """The password the official TestClient uses: from ./server.properties, else the
    default; and where it came from."""
    try:
        password = load_settings([], Path.cwd()).password
    except ConfigError as error:
        raise MatchError(f"cannot read the password: {error}") from None
    if (Path.cwd() / PROPERTIES_FILE).is_file():
        return password, f"./{PROPERTIES_FILE}"
    return password, f"the default {DEFAULT_PASSWORD!r}; give --password"


# ---------------------------------------------------------------------------------------------
# Scores


@dataclass
class PlayerScore:
    name: str
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    points: int = 0  # Siegpunkte, summed
    swarm: float = 0.0  # Schwarmgröße, running mean (official AVERAGE aggregation)
    violations: int = 0  # irregular games this player lost (the violator loses)

    def add(self, team: Team, result: GameResult, points: int, swarm: int) -> None:
        self.games += 1
        self.points += points
        self.swarm += (swarm - self.swarm) / self.games
        if result.winner is None:
            self.draws += 1
        elif result.winner is team:
            self.wins += 1
        else:
            self.losses += 1
            if not result.regular:
                self.violations += 1


@dataclass
class GameSummary:
    number: int  # 1-based
    one: int  # index of the player holding slot 0 (team ONE)
    room_id: str
    result: GameResult
    turn: int | None
    notes: list[str] = field(default_factory=list)


@dataclass
class Observation:
    """What the observer saw of one game."""

    summary: GameSummary
    packets: list[Memento | RoomError | ResultMessage]
    started: datetime


@dataclass
class Match:
    options: Options
    scores: tuple[PlayerScore, PlayerScore]
    played: list[GameSummary] = field(default_factory=list)
    # Looked up at run time, not import time: tests and callers may replace sys.stdout.
    out: TextIO = field(default_factory=lambda: sys.stdout)

    @property
    def irregular(self) -> int:
        return sum(not game.result.regular for game in self.played)

    def record(self, game: GameSummary) -> None:
        """Count a finished game and print its line."""
        for slot, (entry, (points, swarm)) in enumerate(game.result.scores[:2]):
            self.scores[player_at(slot, game.one)].add(entry.team, game.result, points, swarm)
        self.played.append(game)
        self.out.write(game_line(game, self.options) + "\n")
        self.out.flush()

    def print_table(self) -> None:
        header = ("player", "games", "wins", "draws", "losses", "Siegpunkte", "∅Schwarmgröße")
        rows = [
            (
                score.name,
                str(score.games),
                str(score.wins),
                str(score.draws),
                str(score.losses),
                str(score.points),
                f"{score.swarm:.2f}",
            )
            for score in self.scores
        ]
        widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

        def line(cells: Sequence[str]) -> str:
            first = cells[0].ljust(widths[0])
            rest = [cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True)]
            return "  ".join([first, *rest])

        self.out.write("=============== SCORES ================\n")
        for row in (header, *rows):
            self.out.write(line(row) + "\n")
        irregular = [
            f"{score.name} {score.violations}" for score in self.scores if score.violations
        ]
        detail = f" (lost by violation: {', '.join(irregular)})" if irregular else ""
        self.out.write(f"{self.irregular} of {len(self.played)} games ended irregularly{detail}\n")
        self.out.flush()


def player_at(slot: int, one: int) -> int:
    """The player (0 = player1) holding `slot` in a game where player `one` holds slot 0."""
    return one if slot == 0 else 1 - one


def first_player(game_index: int) -> int:
    """Who holds slot 0 in game `game_index` (0-based): player1 in even games (official)."""
    return game_index % 2


def game_line(game: GameSummary, options: Options) -> str:
    names = options.names
    one, two = names[game.one], names[1 - game.one]
    result = game.result
    if result.winner is None:
        outcome = "draw"
    else:
        outcome = f"winner {names[player_at(0 if result.winner is Team.ONE else 1, game.one)]}"
    points = ":".join(str(points) for _, (points, _swarm) in result.scores)
    regular = "" if result.regular else " IRREGULAR"
    notes = "".join(f"; {note}" for note in game.notes)
    width = len(str(options.games))
    return (
        f"game {game.number:>{width}}/{options.games}: {one} (ONE) vs {two} (TWO) {points}, "
        f"{outcome}{regular} — {result.reason}{notes}"
    )


# ---------------------------------------------------------------------------------------------
# Talking to the server


@dataclass(frozen=True)
class Received:
    message: ServerMessage


@dataclass(frozen=True)
class ServerGone:
    reason: str


@dataclass(frozen=True)
class Exited:
    game: int
    player: int
    status: int


Event = Received | ServerGone | Exited


class Admin:
    """The admin/observer connection. A reader task turns the server's stream into events on
    the same channel as the player processes' exits, so one loop can wait for either."""

    def __init__(self, stream: trio.SocketStream, events: trio.MemorySendChannel[Event]) -> None:
        self.stream = stream
        self.connection = ClientConnection()
        self.events = events

    async def send(self, packet: ClientPacket) -> None:
        try:
            await self.stream.send_all(self.connection.send(packet))
        except (trio.BrokenResourceError, trio.ClosedResourceError) as error:
            raise MatchError(f"lost the connection to the server: {error}") from None

    async def read(self) -> None:
        while True:
            try:
                event = self.connection.next_event()
            except RemoteProtocolError as error:
                await self.events.send(ServerGone(error.message if not error.eof else "closed"))
                return
            if isinstance(event, NeedData):
                try:
                    data = await self.stream.receive_some(65536)
                except (trio.BrokenResourceError, trio.ClosedResourceError) as error:
                    await self.events.send(ServerGone(str(error) or type(error).__name__))
                    return
                self.connection.receive_data(data)
            else:
                await self.events.send(Received(event))


def refusal(packet: ErrorPacket, server: Server) -> MatchError:
    if isinstance(packet.original_request, Authenticate):
        return MatchError(
            f"wrong password: the server at {server.host}:{server.port} refused the admin "
            f"login (password from {server.password_source})"
        )
    return MatchError(f"the server refused a request: {packet.message}")


# ---------------------------------------------------------------------------------------------
# Player processes


@dataclass
class PlayerProcess:
    player: int
    process: trio.Process
    log_path: Path


async def start_player(
    options: Options, player: int, game_number: int, host: str, port: int, code: str
) -> PlayerProcess:
    name = options.names[player]
    log_path = options.log_dir / f"{file_safe(name)}_game{game_number}.log"
    argv = [*options.commands[player], "--host", host, "--port", str(port), "--reservation", code]
    env = dict(os.environ)
    # Python bots: output reaches the log as it happens, also when the bot is killed.
    env.setdefault("PYTHONUNBUFFERED", "1")
    with log_path.open("wb") as log_file:
        try:
            process = await trio.lowlevel.open_process(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=env,
                # Own process group: Ctrl+C in the terminal reaches only us (the bots do not
                # die first and look crashed), and killing the group also gets a wrapper's
                # children (start.sh -> java).
                start_new_session=True,
            )
        except OSError as error:
            raise MatchError(f"cannot start {name} ({shlex.join(argv)}): {error}") from None
    return PlayerProcess(player, process, log_path)


def file_safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def signal_group(process: trio.Process, signum: signal.Signals) -> None:
    # ProcessLookupError: the group is gone (the bot and its children exited).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


async def stop_player(process: trio.Process) -> bool:
    """Terminate, then kill the player's process group; True if the bot was still running.
    Shielded: this runs in cleanups after Ctrl+C, and a bot must never outlive the run."""
    running = process.returncode is None
    with trio.CancelScope(shield=True):
        if running:
            signal_group(process, signal.SIGTERM)
            with trio.move_on_after(TERMINATE_WAIT):
                await process.wait()
        # Also after a clean exit: a wrapper script may leave children behind.
        signal_group(process, signal.SIGKILL)
        await process.wait()
    return running


# ---------------------------------------------------------------------------------------------
# The run


@dataclass
class Server:
    host: str  # where the bots connect
    port: int
    password: str | None
    password_source: str
    hard_timeout: float


async def run(options: Options, match: Match) -> int:
    """Play the games; returns the exit status. Raises MatchError for the status-2 ends."""
    try:
        options.log_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise MatchError(f"cannot create the log directory {options.log_dir}: {error}") from None
    interrupted = trio.Event()
    stop_server = trio.Event()
    with contextlib.ExitStack() as files:
        async with trio.open_nursery() as server_nursery:
            try:
                async with trio.open_nursery() as match_nursery:
                    match_nursery.start_soon(
                        cancel_on_signal, match_nursery.cancel_scope, interrupted
                    )
                    if options.port is None:
                        server = await start_server(
                            server_nursery, files, options, match, stop_server
                        )
                    else:
                        assert options.host is not None
                        server = Server(
                            options.host,
                            options.port,
                            options.password,
                            options.password_source,
                            DEFAULT_HARD_TIMEOUT,
                        )
                        match.out.write(f"server: {server.host}:{server.port}\n")
                    await play(options, match, server)
                    match_nursery.cancel_scope.cancel()  # the signal watcher
            finally:
                # The in-process server shuts down gracefully (it returns at once without
                # rooms); a MatchError cancels it instead, which is as good after the bots
                # are gone.
                stop_server.set()
    return EXIT_INTERRUPTED if interrupted.is_set() else EXIT_OK


async def cancel_on_signal(scope: trio.CancelScope, interrupted: trio.Event) -> None:
    """Ctrl+C (or SIGTERM) cancels the match: the cleanups kill the bots, then the score so
    far is printed."""
    try:
        receiver = trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM)
    except RuntimeError:
        return  # not the main thread (embedded in a test): trio's KeyboardInterrupt applies
    with receiver as signals:
        async for _signum in signals:
            interrupted.set()
            scope.cancel()
            return


async def start_server(
    nursery: trio.Nursery,
    files: contextlib.ExitStack,
    options: Options,
    match: Match,
    stop: trio.Event,
) -> Server:
    from server.app import serve
    from server.logs import configure_logging

    try:
        settings = load_settings([], Path.cwd())
    except ConfigError as error:
        raise MatchError(f"server settings: {error}") from None
    settings = replace(
        settings,
        host="127.0.0.1",
        port=0,
        password=secrets.token_urlsafe(18),
        # The match writes its own results and replays (the same for a server it did not
        # start); the server's would be duplicates.
        results_file=None,
        save_replay=False,
    )
    log_path = options.log_dir / "server.log"
    log_file = files.enter_context(log_path.open("a", encoding="utf-8"))
    # The server logs every move: to a file, not between the match's lines.
    configure_logging("console", settings.log_level, stream=log_file, cache=False)
    try:
        port: int = await nursery.start(partial(serve, settings, stop=stop, handle_signals=False))
    except OSError as error:
        raise MatchError(f"cannot start the server: {error}") from None
    match.out.write(f"server: 127.0.0.1:{port} in this process, log {log_path}\n")
    match.out.flush()
    return Server("127.0.0.1", port, settings.password, "random", settings.hard_timeout)


async def play(options: Options, match: Match, server: Server) -> None:
    try:
        stream = await trio.open_tcp_stream(server.host, server.port)
    except OSError as error:
        where = f"{server.host}:{server.port}"
        raise MatchError(f"cannot connect to the server at {where}: {error}") from None
    send_events, events = trio.open_memory_channel[Event](math.inf)
    # A game has at most 2 * ROUND_LIMIT moves, each at most a hard timeout long.
    game_limit = options.game_timeout or 2 * ROUND_LIMIT * server.hard_timeout + GAME_MARGIN
    async with stream, trio.open_nursery() as nursery:
        admin = Admin(stream, send_events)
        nursery.start_soon(admin.read)
        await admin.send(Authenticate(server.password))
        for index in range(options.games):
            summary = await play_game(options, server, admin, events, index, game_limit)
            match.record(summary)
        # Say goodbye like the Java client (<close/>, then </protocol>), so the server logs
        # a disconnect rather than a lost connection.
        with contextlib.suppress(MatchError):
            await admin.send(CloseRequest())
            await admin.send(StreamEnd())
        nursery.cancel_scope.cancel()


async def next_event(events: trio.MemoryReceiveChannel[Event], deadline: float) -> Event | None:
    with trio.move_on_at(deadline):
        return await events.receive()
    return None


async def answer(
    server: Server, events: trio.MemoryReceiveChannel[Event], kind: type[Prepared] | type[Observed]
) -> Prepared | Observed:
    """The server's answer to prepare/observe (stale messages of earlier rooms are skipped)."""
    deadline = trio.current_time() + ANSWER_TIMEOUT
    while True:
        event = await next_event(events, deadline)
        if event is None:
            raise MatchError(f"the server did not answer within {ANSWER_TIMEOUT:g} s")
        if isinstance(event, ServerGone):
            raise MatchError(f"the server closed the connection ({event.reason})")
        if isinstance(event, Received):
            if isinstance(event.message, ErrorPacket):
                raise refusal(event.message, server)
            if isinstance(event.message, kind):
                return event.message


async def play_game(
    options: Options,
    server: Server,
    admin: Admin,
    events: trio.MemoryReceiveChannel[Event],
    index: int,
    game_limit: float,
) -> GameSummary:
    one = first_player(index)
    slot_players = (one, 1 - one)
    slots = tuple(
        SlotDescriptor(options.names[player], options.can_timeout[player], True)
        for player in slot_players
    )
    await admin.send(Prepare(GAME_TYPE, False, slots))
    prepared = await answer(server, events, Prepared)
    assert isinstance(prepared, Prepared)
    room = prepared.room_id
    await admin.send(Observe(room))
    await answer(server, events, Observed)

    number = index + 1
    processes: list[PlayerProcess] = []
    killed: set[int] = set()
    observed: Observation | None = None
    async with trio.open_nursery() as nursery:
        try:
            for slot, player in enumerate(slot_players):
                started = await start_player(
                    options, player, number, server.host, server.port, prepared.reservations[slot]
                )
                processes.append(started)
                nursery.start_soon(watch, started, number, admin.events)
            observed = await observe_game(options, server, room, number, one, events, game_limit)
            with trio.move_on_after(PROCESS_EXIT_WAIT):
                for running in processes:
                    await running.process.wait()
        finally:
            if observed is None:
                # A crash, a hang or Ctrl+C: the room must not wait for players that are gone.
                # Best effort: a lost connection must not hide what ended the game.
                with (
                    trio.CancelScope(shield=True),
                    trio.move_on_after(2),
                    contextlib.suppress(MatchError),
                ):
                    await admin.send(CancelRequest(room))
            for running in processes:
                if await stop_player(running.process):
                    killed.add(running.player)
    summary = observed.summary
    # The server may notice a crashed bot's closed socket (and end the game with a result)
    # before we see the process exit: a bot whose process ended by itself and whose leaving
    # ended the game died during it.
    crashed_players = {
        running.player: running.process.returncode
        for running in processes
        if running.player not in killed
        and left_the_game(summary.result.reason, options.names[running.player])
    }
    if crashed_players:
        crashed(options, number, crashed_players, summary.result.reason)
    for running in processes:
        name = options.names[running.player]
        if running.player in killed:
            summary.notes.append(f"{name} still running after {PROCESS_EXIT_WAIT:g} s: killed")
        elif running.process.returncode:
            summary.notes.append(f"{name} exited with status {running.process.returncode}")
    replay = None
    if options.save_replay:
        replay = await save(options, one, room, observed.packets)
        if replay is None:
            summary.notes.append("replay not saved (see the log)")
    if options.results is not None:
        await write_result(options, summary, observed.started, replay)
    return summary


def left_the_game(reason: str, name: str) -> bool:
    """Whether the result's reason is the official LEFT violation of player `name`
    (`%s hat das Spiel verlassen: CAUSE`, spec §6.4)."""
    return reason.startswith(f"{name} hat das Spiel verlassen: ")


async def watch(running: PlayerProcess, game: int, events: trio.MemorySendChannel[Event]) -> None:
    status = await running.process.wait()
    await events.send(Exited(game, running.player, status))


async def observe_game(
    options: Options,
    server: Server,
    room: str,
    number: int,
    one: int,
    events: trio.MemoryReceiveChannel[Event],
    game_limit: float,
) -> Observation:
    """Read the room's messages until its result and `<left>`. Raises MatchError when a
    player process dies during the game or the game takes longer than `game_limit`."""
    hang_deadline = trio.current_time() + game_limit
    crash_deadline = math.inf
    exited_early: dict[int, int] = {}  # player -> status, for exits before the result
    packets: list[Memento | RoomError | ResultMessage] = []
    result: ResultMessage | None = None
    turn: int | None = None
    started = datetime.now(UTC)
    while True:
        event = await next_event(events, min(hang_deadline, crash_deadline))
        if event is None:
            if trio.current_time() >= crash_deadline:
                crashed(options, number, exited_early)
            raise MatchError(
                f"game {number} hangs: no result after {game_limit:g} s "
                "(--game-timeout changes the limit)"
            )
        if isinstance(event, ServerGone):
            raise MatchError(f"the server closed the connection during game {number}")
        if isinstance(event, Exited):
            if event.game == number and result is None:
                exited_early[event.player] = event.status
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
            turn = message.state.turn
        elif isinstance(message, ResultMessage):
            result = message
            # A player whose process ended before the observer saw the result may have had
            # the result already: play_game decides from the reason whether it crashed.
            crash_deadline = math.inf
        elif isinstance(message, Left) and result is not None:
            break
    return Observation(GameSummary(number, one, room, result.result, turn), packets, started)


def crashed(
    options: Options, number: int, exited: Mapping[int, int | None], reason: str | None = None
) -> NoReturn:
    details = ", ".join(
        f"{options.names[player]} (status {status})" for player, status in sorted(exited.items())
    )
    logs = ", ".join(
        str(options.log_dir / f"{file_safe(options.names[player])}_game{number}.log")
        for player in sorted(exited)
    )
    because = f" ({reason})" if reason else ""
    raise MatchError(
        f"player process exited before game {number} ended: {details}{because}; see {logs}"
    )


async def save(
    options: Options, one: int, room: str, packets: list[Memento | RoomError | ResultMessage]
) -> Path | None:
    from server.replays import save_replay

    names = [options.names[one], options.names[1 - one]]
    return await trio.to_thread.run_sync(
        save_replay, options.replay_dir, names, room, packets, datetime.now()
    )


async def write_result(
    options: Options, summary: GameSummary, started: datetime, replay: Path | None
) -> None:
    from server.results import ResultsLog, game_record

    record = game_record(
        summary.room_id, summary.result, started=started, turn=summary.turn, replay=replay
    )
    record["game"] = summary.number
    record["games"] = options.games
    if summary.notes:
        record["notes"] = summary.notes
    assert options.results is not None
    await trio.to_thread.run_sync(ResultsLog(options.results).append, record)


# ---------------------------------------------------------------------------------------------
# Entry point


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        options = parse_options(arguments)
    except MatchError as error:
        return fail(error)
    except SystemExit as exit_request:  # argparse: --help or a usage error (already printed)
        return exit_request.code if isinstance(exit_request.code, int) else EXIT_ERROR
    match = Match(options, (PlayerScore(options.names[0]), PlayerScore(options.names[1])))
    status = EXIT_ERROR
    try:
        status = trio.run(run, options, match)
    except BaseException as error:
        match_error = find(error, MatchError)
        if match_error is not None:
            status = fail(match_error)
        elif find(error, KeyboardInterrupt) is not None:
            # Ctrl+C outside the graceful window (start-up): the bots are in cleanups already.
            status = EXIT_INTERRUPTED
        else:
            raise
    finally:
        restore_logging(options)
    if match.played or status == EXIT_INTERRUPTED:
        match.print_table()
    if status == EXIT_INTERRUPTED:
        match.out.write(f"interrupted after {len(match.played)} of {options.games} games\n")
        match.out.flush()
    return status


def fail(error: MatchError) -> int:
    print(f"{PROGRAM}: error: {error}", file=sys.stderr)
    return EXIT_ERROR


def restore_logging(options: Options) -> None:
    if options.port is None:
        from server.logs import configure_logging

        # The server's log file is closed now; later log calls must not write to it.
        configure_logging("console", "warning", cache=False)


def find(error: BaseException, kind: type[E]) -> E | None:
    """The first exception of `kind` in `error`, also inside exception groups."""
    if isinstance(error, kind):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = find(inner, kind)
            if found is not None:
                return found
    return None


if __name__ == "__main__":
    raise SystemExit(main())
