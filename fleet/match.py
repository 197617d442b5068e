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
import enum
import secrets
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

__all__ = ["MatchEnd", "StoreThread", "launcher_for", "outcome_of", "play_match"]

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


def launcher_for(config: LeagueConfig, team_id: str) -> PlayerLauncher:
    """How a team's bot is started on this machine."""
    bot = config.team(team_id).bot
    if bot.kind is BotKind.COMMAND:
        return ProcessLauncher(bot.command)
    try:  # bots in containers, where the sandbox is installed
        from sandbox import launcher_for_team  # type: ignore[import-not-found]
    except ImportError:
        raise MatchError(
            f"team {team_id}: {bot.kind.value} bots need the container sandbox on this worker"
        ) from None
    launcher: PlayerLauncher = launcher_for_team(config, team_id)
    return launcher


def outcome_of(
    config: LeagueConfig, match: Match, game: ScheduledGame, observation: Observation
) -> GameOutcome:
    """The store's outcome of an observed game, with its game record."""
    result = observation.summary.result
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
        move_ms=observation.move_ms,
        result=result,
    )
    return GameOutcome.from_result(game, result, write_record(record).decode("utf-8"))


@dataclass
class _Stop:
    reason: MatchEnd | None = None


async def _serve(
    config: LeagueConfig, log_dir: Path, nursery: trio.Nursery, stop: trio.Event
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
    )
    port: int = await nursery.start(partial(serve, settings, stop=stop, handle_signals=False))
    return Server("127.0.0.1", port, settings.password, "random", settings.hard_timeout)


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
    async with trio.open_nursery() as nursery:
        stop_server = trio.Event()
        try:
            with trio.CancelScope() as games_scope:
                nursery.start_soon(_poll, db, run, stop, games_scope, stopping, poll_interval)
                if run.claims:
                    server = await _serve(config, log_dir, nursery, stop_server)
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
    launchers = (launcher_for(config, game.team_one), launcher_for(config, game.team_two))
    game_dir = log_dir / f"match{match.id}"
    game_dir.mkdir(parents=True, exist_ok=True)
    observation = await play_game(spec, launchers, admin, server, game_dir, config.timeouts.game)
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
