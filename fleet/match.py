"""Playing one match of a league on this machine: the games of the match, one after the other,
on a game server inside this process, bots started here (moves never cross the network), every
game committed to the store with its record under its attempt number.

While the match runs it polls its run every `poll_interval` seconds: a cancel request, a newer
attempt that took over (this one was presumed dead), or the worker shutting down end it at once
(trio cancel scopes, so every `finally` runs and no bot is left behind).

Store calls are synchronous and may wait for a restarting PostgreSQL: they run on one dedicated
thread (`StoreThread`), never on the thread of the game server.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import enum
import secrets
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC
from functools import partial
from pathlib import Path
from typing import TypeVar

import trio

from client import ClientSession, open_session
from fleet.postgres import retrying
from fleet.runs import MatchRun, Runs, RunStatus
from league.config import BotKind, LeagueConfig
from league.records import record_game, write_record
from league.schedule import Match, ScheduledGame
from league.store import Claim, GameOutcome, LeagueStore, StaleAttemptError
from protocol.messages import Memento
from runner.game import GameSpec, Observation, Server, play_game
from runner.options import MatchError
from runner.players import PlayerLauncher, ProcessLauncher
from runner.timing import ServerGames

__all__ = [
    "MatchEnd",
    "StoreThread",
    "launcher_for",
    "needs_containers",
    "outcome_of",
    "play_match",
]

T = TypeVar("T")

POLL_INTERVAL = 1.0


class StoreThread:
    """The store and the match runs, used from one thread only (SQLite connections belong to
    their thread); calls wait for PostgreSQL to come back after a restart (`retrying`)."""

    def __init__(self, open_store: Callable[[], tuple[LeagueStore, Runs]]) -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="store")
        self.store, self.runs = self._executor.submit(open_store).result()

    def call_sync(self, operation: Callable[[], T]) -> T:
        """Run `operation` on the store's thread (retrying connection errors) and wait."""
        return self._executor.submit(retrying, operation).result()

    async def call(self, operation: Callable[[], T]) -> T:
        """The same from trio, without blocking the game server's thread."""
        return await trio.to_thread.run_sync(self.call_sync, operation, abandon_on_cancel=False)

    def close(self) -> None:
        """Close the store's connection and the thread."""
        self._executor.submit(self.store.close).result()
        self._executor.shutdown()


class MatchEnd(enum.Enum):
    """How `play_match` ended."""

    DONE = "done"  # every game recorded (also: nothing left to play)
    CANCELLED = "cancelled"  # the cancel flag was set
    SUPERSEDED = "superseded"  # a newer attempt took over: nothing of ours was recorded since
    STOPPING = "stopping"  # the worker is shutting down: the match was given back


def needs_containers(config: LeagueConfig) -> bool:
    """Whether some team's bot runs in a container (it reaches the server by a Unix socket)."""
    return any(team.bot.kind is not BotKind.COMMAND for team in config.teams)


def launcher_for(
    config: LeagueConfig, team_id: str, server: Server, match_id: int
) -> PlayerLauncher:
    """How a team's bot is started on this machine: a `command` as a local process, an
    `image` in a container with the league's limits (docs/sandbox.md)."""
    bot = config.team(team_id).bot
    if bot.kind is BotKind.COMMAND:
        return ProcessLauncher(bot.command)
    if bot.kind is BotKind.FOLDER or bot.image is None:
        raise MatchError(
            f"team {team_id}: a folder bot must be built into an image before a distributed "
            "league (give the team an `image`)"
        )
    if server.unix_socket is None:
        raise MatchError("container bots need the game server's Unix socket")
    from sandbox import ContainerLauncher, Limits

    limits = config.limits
    return ContainerLauncher(
        bot.image,
        server.unix_socket,
        limits=Limits(
            cpus=max(1, round(limits.cpus)),
            memory_mib=max(1, limits.memory_bytes // (1024 * 1024)),
            pids=limits.pids,
        ),
        match_id=str(match_id),
    )


def outcome_of(
    config: LeagueConfig, match: Match, game: ScheduledGame, observation: Observation
) -> GameOutcome:
    """The store's outcome of an observed game, with its game record. The in-process server's
    own record of the game is preferred: its result names each player's violation (a bot that
    crashed left the game) and its move times are the server's (docs/game-records.md)."""
    server_game = observation.server_game
    result = observation.summary.result if server_game is None else server_game.result
    move_ms = observation.move_ms if server_game is None else list(server_game.move_ms)
    moves = [
        packet.state.last_move
        for packet in observation.packets
        if isinstance(packet, Memento) and packet.state.last_move is not None
    ]
    record = record_game(
        league=config.name,
        round=match.round,
        match=match.id,
        number=game.number,
        date=observation.started.astimezone(UTC).isoformat(timespec="seconds"),
        seed=game.board_seed,
        team_ids=(game.team_one, game.team_two),
        moves=moves,
        move_ms=move_ms,
        result=result,
    )
    return GameOutcome.from_result(game, result, write_record(record).decode("utf-8"))


@dataclass
class _Stop:
    reason: MatchEnd | None = None


async def _serve(
    config: LeagueConfig, socket_dir: Path | None, nursery: trio.Nursery, stop: trio.Event
) -> Server:
    from server.app import serve
    from server.config import Settings

    settings = replace(
        Settings(),
        host="127.0.0.1",
        port=0,
        password=secrets.token_urlsafe(18),
        results_file=None,
        save_replay=False,
        soft_timeout=config.timeouts.soft,
        hard_timeout=config.timeouts.hard,
        # Container bots reach the server through a relay on this socket (docs/sandbox.md).
        unix_socket=None if socket_dir is None else socket_dir / "server.sock",
    )
    games = ServerGames()
    port: int = await nursery.start(
        partial(serve, settings, stop=stop, handle_signals=False, sinks=[games])
    )
    return Server(
        "127.0.0.1",
        port,
        settings.password,
        "random",
        settings.hard_timeout,
        settings.soft_timeout,
        games,
        settings.unix_socket,
    )


async def play_match(
    config: LeagueConfig,
    match: Match,
    run: MatchRun,
    db: StoreThread,
    log_dir: Path,
    *,
    stopping: threading.Event | None = None,
    poll_interval: float = POLL_INTERVAL,
) -> MatchEnd:
    """Play the run's games and record them; end the run (done or cancelled) unless it was
    superseded or the worker is stopping. Raises MatchError when a game cannot be played (the
    run is left running: the caller requeues or fails it)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    stop = _Stop()
    with contextlib.ExitStack() as files:
        return await _play(config, match, run, db, log_dir, stopping, poll_interval, stop, files)


async def _play(
    config: LeagueConfig,
    match: Match,
    run: MatchRun,
    db: StoreThread,
    log_dir: Path,
    stopping: threading.Event | None,
    poll_interval: float,
    stop: _Stop,
    files: contextlib.ExitStack,
) -> MatchEnd:
    async with trio.open_nursery() as nursery:
        stop_server = trio.Event()
        try:
            with trio.CancelScope() as games_scope:
                nursery.start_soon(_poll, db, run, stop, games_scope, stopping, poll_interval)
                if run.claims:
                    socket_dir = None
                    if needs_containers(config):
                        socket_dir = Path(files.enter_context(tempfile.TemporaryDirectory()))
                    server = await _serve(config, socket_dir, nursery, stop_server)
                    async with open_session(
                        server.host, server.port, password=server.password
                    ) as admin:
                        for claim in run.claims:
                            await _play_one(config, match, claim, admin, server, log_dir, db)
        except StaleAttemptError:
            stop.reason = MatchEnd.SUPERSEDED
        finally:
            stop_server.set()
            nursery.cancel_scope.cancel()
    if stop.reason is None:
        stop.reason = MatchEnd.DONE
    if stop.reason is MatchEnd.DONE:
        await db.call(lambda: db.runs.finish(run, RunStatus.DONE))
    elif stop.reason is MatchEnd.CANCELLED:
        await db.call(lambda: db.runs.finish(run, RunStatus.CANCELLED))
    elif stop.reason is MatchEnd.STOPPING:
        await db.call(lambda: db.runs.requeue(run))
    return stop.reason


async def _play_one(
    config: LeagueConfig,
    match: Match,
    claim: Claim,
    admin: ClientSession,
    server: Server,
    log_dir: Path,
    db: StoreThread,
) -> None:
    game = claim.game
    spec = GameSpec(
        number=game.number,
        one=0,
        names=(game.team_one, game.team_two),
        can_timeout=(True, True),
        seed=game.board_seed,
    )
    launchers = (
        launcher_for(config, game.team_one, server, match.id),
        launcher_for(config, game.team_two, server, match.id),
    )
    game_dir = log_dir / f"match{match.id}"
    game_dir.mkdir(parents=True, exist_ok=True)
    observation = await play_game(spec, launchers, admin, server, game_dir, config.timeouts.game)
    if server.games is not None:  # recorded before the observer saw the room end
        observation.server_game = server.games.take(observation.summary.room_id)
    outcome = outcome_of(config, match, game, observation)
    # Raises StaleAttemptError when a newer attempt owns the game: nothing is overwritten.
    await db.call(lambda: db.store.record(game.match_id, game.number, claim.attempt, outcome))


async def _poll(
    db: StoreThread,
    run: MatchRun,
    stop: _Stop,
    scope: trio.CancelScope,
    stopping: threading.Event | None,
    interval: float,
) -> None:
    """Heartbeat the run; end the games on a cancel request, a newer attempt or shutdown."""
    while True:
        if stopping is not None and stopping.is_set():
            stop.reason = MatchEnd.STOPPING
            break
        try:
            if await db.call(lambda: db.runs.heartbeat(run)):
                stop.reason = MatchEnd.CANCELLED
                break
        except StaleAttemptError:
            stop.reason = MatchEnd.SUPERSEDED
            break
        await trio.sleep(interval)
    scope.cancel()
