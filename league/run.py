"""`piranhas-league run`: play every unfinished game of a league on the match runner's core.

A league game is a match-runner game (`runner.game.play_game`: prepare a room, launch both
players, observe to the end, stop the players) whose players are the teams' bots: local
processes in `process` mode, containers in `docker` mode. The game server runs in this process
with a recorder sink (`runner.timing.ServerGames`) that hands over every finished game with the
server's own move times, so the record needs nothing from the observer but the room id.

The store (`league.store`) decides what is played: `claim_next` hands out a game under a new
attempt, `record` writes its result fenced by that attempt, in one transaction. So a run that
is stopped in any way (Ctrl+C, SIGTERM, SIGKILL, a power cut) continues with the same command:
`reset_running` gives back the dead run's games, finished games are never played again.

`play_and_record` is the unit both the local runner and a distributed worker call: one claimed
game, played and recorded under its attempt.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC
from functools import partial
from pathlib import Path
from typing import ParamSpec, TypeVar

import trio

from client import ClientSession
from engine import Direction, Move
from launching import MatchError, PlayerLauncher
from league.config import BotKind, LeagueConfig, TeamSpec
from league.records import record_game, write_record
from league.schedule import Match, build_schedule
from league.store import (
    Claim,
    GameOutcome,
    LeagueStore,
    RecordStatus,
    StaleAttemptError,
)
from runner.game import GameSpec, ServerAddress, admin_session, play_game
from runner.inprocess import in_process_server
from runner.players import ProcessLauncher
from runner.reaper import BotReaper, ReapedLauncher
from runner.timing import ServerGames
from server.exits import first_leaf
from server.recorder import FinishedGame as ServerGame

__all__ = [
    "BUILTIN",
    "MODES",
    "AsyncStore",
    "GameReport",
    "LeagueRunError",
    "LeagueTable",
    "admin_session",
    "open_table",
    "play_and_record",
    "play_by_id",
    "run_league",
]

BUILTIN = "builtin:"
MODES = ("process", "docker")
GAME_MARGIN = 60.0  # seconds on top of the league's game limit before the runner gives up
MAX_FAILURES = 3  # failed attempts of one game in one run before the run stops
HEARTBEAT_EVERY = 60.0  # seconds; the lease is DEFAULT_LEASE_SECONDS (300)
RECORDED_ENDS = ("over", "expired")  # a game over, or a bot that never connected (it lost)

P = ParamSpec("P")
T = TypeVar("T")


class LeagueRunError(Exception):
    """Ends `piranhas-league run` with an error; the message says what and where."""


# ---- the store from trio -----------------------------------------------------------------


class AsyncStore:
    """A `LeagueStore` used from trio: every call runs on one dedicated thread (an SQLite
    connection belongs to its thread), so a commit's fsync never stalls the game server that
    measures the bots' move times in this event loop."""

    def __init__(self, open_store: Callable[[], LeagueStore]) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="league-store")
        self.store: LeagueStore = self._executor.submit(open_store).result()

    def attempt(self, operation: Callable[[], T]) -> T:
        """Run one store operation on the store's thread. A distributed worker's store
        overrides it to wait for a restarting database server (fleet.postgres.retrying)."""
        return operation()

    def call_sync(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`call` from outside trio: run `function` on the store's thread and wait for it."""
        return self._executor.submit(self.attempt, partial(function, *args, **kwargs)).result()

    async def call(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run `function` on the store's thread and wait for it. Shielded: a write that started
        is waited for, so a cancelled run knows whether it committed."""
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()
        future = self._executor.submit(self.attempt, partial(function, *args, **kwargs))
        future.add_done_callback(lambda _: token.run_sync_soon(done.set))
        with trio.CancelScope(shield=True):
            await done.wait()
        return future.result()

    def close(self) -> None:
        """Close the store on its thread and end the thread."""
        self._executor.submit(self.store.close).result()
        self._executor.shutdown()


# ---- teams -------------------------------------------------------------------------------


def bot_command(team: TeamSpec) -> list[str]:
    """The process-mode command of a team: its `command`, or `builtin:NAME [OPTIONS]` as the
    built-in bot NAME (`python -m cli.bot --bot NAME OPTIONS`, with this interpreter)."""
    if team.bot.kind is not BotKind.COMMAND:
        raise LeagueRunError(
            f"team {team.id}: process mode needs a `command`; "
            f"an `{team.bot.kind.value}` team needs --mode docker"
        )
    argv = list(team.bot.command)
    if argv[0].startswith(BUILTIN):
        from bots.players import BOT_NAMES

        name = argv[0].removeprefix(BUILTIN)
        if name not in BOT_NAMES:
            raise LeagueRunError(
                f"team {team.id}: unknown built-in bot {name!r} (known: {', '.join(BOT_NAMES)})"
            )
        if importlib.util.find_spec("cli.bot") is None:
            raise LeagueRunError(
                f"team {team.id}: built-in bots as players need piranhas-bot (cli.bot), "
                "which this installation lacks"
            )
        return [sys.executable, "-m", "cli.bot", "--bot", name, *argv[1:]]
    return argv


def check_mode(config: LeagueConfig, mode: str) -> None:
    """Raise LeagueRunError if the league's teams cannot be started in `mode` (before any
    game is claimed)."""
    if mode not in MODES:
        raise LeagueRunError(f"unknown mode {mode!r} (known: {', '.join(MODES)})")
    # The container launcher (bots in containers, a relay so they see only the game server)
    # comes from the sandbox package.
    if mode == "docker" and importlib.util.find_spec("sandbox") is None:
        raise LeagueRunError("docker mode needs the sandbox package")
    for team in config.teams:
        if mode == "process" or team.bot.kind is BotKind.COMMAND:
            bot_command(team)


def container_label(config: LeagueConfig) -> str:
    """The `piranhas.run` label of the league's containers: stable for one store, so a run
    started after a killed one removes what that one left behind."""
    digest = hashlib.sha256(str(config.database.resolve()).encode()).hexdigest()
    return f"league-{digest[:12]}"


async def container_launchers(
    config: LeagueConfig, server_socket: Path, reaper: BotReaper
) -> dict[str, PlayerLauncher]:
    """Docker mode: `image` and `folder` teams in sandboxed containers (folders built into
    images first, on the league's `base_image`), `command` teams as local processes."""
    from sandbox import (
        BOT_BASE_IMAGE,
        ContainerLauncher,
        DockerError,
        Limits,
        docker_available,
        sweep,
    )
    from sandbox.images import build_base_image, build_bot_image, image_exists

    if not await docker_available():
        raise LeagueRunError("docker mode: no Docker daemon answers (is DOCKER_HOST set?)")
    label = container_label(config)
    await sweep(f"piranhas.run={label}")  # a killed run's containers
    limits = Limits(
        cpus=max(1, round(config.limits.cpus)),
        memory_mib=config.limits.memory_bytes // (1024 * 1024),
        pids=config.limits.pids,
    )
    launchers: dict[str, PlayerLauncher] = {}
    try:
        for team in config.teams:
            if team.bot.kind is BotKind.COMMAND:
                launchers[team.id] = ReapedLauncher(ProcessLauncher(bot_command(team)), reaper)
                continue
            if not await image_exists(BOT_BASE_IMAGE):
                # The relays run on it, and folder bots are built on it.
                await build_base_image(base_image=config.base_image)
            image = team.bot.image
            if team.bot.kind is BotKind.FOLDER:
                assert team.bot.folder is not None
                image = f"piranhas-league/{team.id.lower()}:{label}"
                await build_bot_image(team.bot.folder, image)
            assert image is not None
            launchers[team.id] = ContainerLauncher(
                image, server_socket, limits=limits, run_id=label
            )
    except DockerError as error:
        raise LeagueRunError(f"docker mode: {error}") from None
    return launchers


def process_launchers(config: LeagueConfig, reaper: BotReaper) -> dict[str, PlayerLauncher]:
    """Process mode: every team's command as a local process."""
    check_mode(config, "process")
    return {
        team.id: ReapedLauncher(ProcessLauncher(bot_command(team)), reaper) for team in config.teams
    }


def display_names(config: LeagueConfig) -> dict[str, str]:
    """The name each team plays under: its display name, or its id when two teams share a
    display name (the server's reasons name players, so names must tell them apart)."""
    names = [team.name for team in config.teams]
    if len(set(names)) == len(names):
        return {team.id: team.name for team in config.teams}
    return {team.id: team.id for team in config.teams}


# ---- one game ----------------------------------------------------------------------------


@dataclass
class LeagueTable:
    """Everything needed to play a league's games on a running server: the league, its
    schedule, the server (with its `ServerGames` sink), one launcher per team."""

    config: LeagueConfig
    matches: tuple[Match, ...]
    server: ServerAddress
    games: ServerGames
    launchers: dict[str, PlayerLauncher]
    log_dir: Path
    records_dir: Path | None = None  # also write each record here as a file
    names: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.names:
            self.names = display_names(self.config)

    @property
    def game_limit(self) -> float:
        """Seconds after which the runner gives a game up as hung."""
        return self.config.timeouts.game + GAME_MARGIN


@dataclass(frozen=True)
class GameReport:
    """What `play_and_record` did with one claim."""

    claim: Claim
    outcome: GameOutcome
    status: RecordStatus
    seconds: float
    notes: tuple[str, ...] = ()


def _moves(game: ServerGame) -> list[Move]:
    return [Move(x, y, Direction[direction]) for x, y, direction in game.moves]


def record_path(records_dir: Path, match_id: int, number: int) -> Path:
    """Where the record of a game goes when records are also written as files."""
    return records_dir / f"match{match_id:03d}-game{number}.xml"


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with temporary.open("wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    temporary.replace(path)


async def _heartbeats(store: AsyncStore, claim: Claim, stale: trio.CancelScope) -> None:
    while True:
        await trio.sleep(HEARTBEAT_EVERY)
        try:
            await store.call(store.store.heartbeat, claim)
        except StaleAttemptError:
            stale.cancel()  # the game was handed to a newer attempt: stop playing it
            return


async def play_and_record(
    table: LeagueTable, admin: ClientSession, store: AsyncStore, claim: Claim
) -> GameReport:
    """Play the claimed game on the runner's core and record it under the claim's attempt.

    Raises MatchError when the game could not be played (a bot that cannot start, a hang, the
    server gone) and StaleAttemptError when the attempt lost the game to a newer one; the
    caller abandons the claim then. A recorded result is final: recording it again is a
    harmless duplicate, a stale attempt's result is rejected by the store."""
    game = claim.game
    team_ids = (game.team_one, game.team_two)
    spec = GameSpec(
        number=game.number,
        one=0,  # player 0 is team_one, who holds slot 0 (team ONE) and moves first
        names=(table.names[game.team_one], table.names[game.team_two]),
        can_timeout=(True, True),
        seed=game.board_seed,
    )
    launchers = (table.launchers[game.team_one], table.launchers[game.team_two])
    log_dir = table.log_dir / f"match{game.match_id:03d}"
    log_dir.mkdir(parents=True, exist_ok=True)
    began = trio.current_time()
    with trio.CancelScope() as stale:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_heartbeats, store, claim, stale)
            observation = await play_game(
                spec, launchers, admin, table.server, log_dir, table.game_limit
            )
            nursery.cancel_scope.cancel()
    if stale.cancelled_caught:
        raise StaleAttemptError(
            f"match {game.match_id} game {game.number}: attempt {claim.attempt} was "
            "handed to a newer attempt during the game"
        )
    room = observation.summary.room_id
    if observation.seeded_board is False:
        raise MatchError(f"match {game.match_id} game {game.number}: the board seed was ignored")
    finished = table.games.take(room)
    if finished is None:
        raise MatchError(f"the server did not record room {room}")
    if finished.end not in RECORDED_ENDS:
        raise MatchError(
            f"match {game.match_id} game {game.number} ended without a result ({finished.end})"
        )
    match = table.matches[game.match_id - 1]
    record = record_game(
        league=table.config.name,
        round=match.round,
        match=game.match_id,
        number=game.number,
        date=(finished.started or finished.created).astimezone(UTC).isoformat(),
        seed=game.board_seed,
        team_ids=team_ids,
        moves=_moves(finished),
        move_ms=finished.move_ms,
        result=finished.result,
    )
    xml = write_record(record)
    outcome = GameOutcome.from_result(game, finished.result, xml.decode())
    if table.records_dir is not None:
        # Before the store: a file without a result is overwritten by the next attempt; a
        # result without its file cannot happen.
        path = record_path(table.records_dir, game.match_id, game.number)
        await trio.to_thread.run_sync(_write_atomically, path, xml)
    status = await store.call(
        store.store.record, claim.match_id, claim.number, claim.attempt, outcome
    )
    return GameReport(
        claim,
        outcome,
        status,
        trio.current_time() - began,
        tuple(observation.summary.notes),
    )


async def play_by_id(
    table: LeagueTable,
    admin: ClientSession,
    store: AsyncStore,
    match_id: int,
    number: int,
    attempt: int,
    worker: str,
) -> GameReport:
    """`play_and_record` for a game named by its match, number and attempt (e.g. a message to
    a distributed worker from a dispatcher that called `claim_next`)."""
    try:
        game = table.matches[match_id - 1].games[number - 1]
    except IndexError:
        raise LeagueRunError(f"match {match_id} game {number} is not in the schedule") from None
    return await play_and_record(table, admin, store, Claim(game, attempt, worker))


# ---- the server --------------------------------------------------------------------------


@asynccontextmanager
async def open_table(
    config: LeagueConfig,
    *,
    mode: str,
    log_dir: Path,
    records_dir: Path | None = None,
) -> AsyncIterator[LeagueTable]:
    """Start the game server in this process (loopback, free port, random admin password,
    the league's timeouts) and yield the table to play on; the server stops afterwards, and
    no bot outlives the table (`runner.reaper.BotReaper`)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    check_mode(config, mode)
    containers = None
    if mode == "docker":
        from sandbox.docker import docker_cli

        containers = (docker_cli(), f"piranhas.run={container_label(config)}")
    reaper = BotReaper(containers)
    try:
        async with _serve_table(config, mode, log_dir, records_dir, reaper) as table:
            yield table
    finally:
        reaper.close()


@asynccontextmanager
async def _serve_table(
    config: LeagueConfig,
    mode: str,
    log_dir: Path,
    records_dir: Path | None,
    reaper: BotReaper,
) -> AsyncIterator[LeagueTable]:
    from server.config import Settings

    timeouts = config.timeouts
    settings = replace(
        Settings(),
        soft_timeout=timeouts.soft,
        hard_timeout=timeouts.hard,
        # A bot that does not connect within the start-up time loses (the room expires).
        reservation_ttl=timeouts.startup,
        game_wall_clock_limit=timeouts.game,
        results_file=None,  # the league's store and records are the results
        save_replay=False,  # a record converts to the official replay (league.records)
        # Every game is at least two connections; concurrency games at once plus admins.
        max_connections_per_address=max(64, 4 * config.concurrency + 8),
        max_rooms_per_connection=4,
    )
    async with in_process_server(
        settings, log_dir / "server.log", unix_socket=mode == "docker"
    ) as server:
        if mode == "docker":
            # Container bots reach the server through a relay on its socket (docs/sandbox.md).
            assert server.unix_socket is not None
            launchers = await container_launchers(config, server.unix_socket, reaper)
        else:
            launchers = process_launchers(config, reaper)
        assert server.games is not None
        yield LeagueTable(
            config,
            build_schedule(config),
            server,
            server.games,
            launchers,
            log_dir,
            records_dir,
        )


# ---- the local runner --------------------------------------------------------------------


def worker_name(index: int) -> str:
    """This host's worker `index`, as the store's attempts name it."""
    return f"{socket.gethostname()}:{os.getpid()}:{index}"


async def run_league(
    config: LeagueConfig,
    store: AsyncStore,
    *,
    mode: str,
    log_dir: Path,
    records_dir: Path | None = None,
    on_game: Callable[[GameReport], Awaitable[None] | None] | None = None,
    concurrency: int | None = None,
) -> int:
    """Play every unfinished game, `concurrency` (default: the league's) at once; returns how
    many games this run recorded. The caller has called `store.initialize` and, as the
    store's only user, `reset_running`. Raises LeagueRunError when a game failed
    MAX_FAILURES times in this run (its log files are named). Cancelling stops the bots and
    gives the running games back to the store."""
    concurrency = concurrency or config.concurrency
    failures: dict[tuple[int, int], list[str]] = {}
    recorded = 0
    async with open_table(config, mode=mode, log_dir=log_dir, records_dir=records_dir) as table:

        async def worker(index: int) -> None:
            nonlocal recorded
            name = worker_name(index)
            async with admin_session(table.server) as admin:
                while True:
                    claim = await store.call(store.store.claim_next, name)
                    if claim is None:
                        return
                    key = (claim.match_id, claim.number)
                    try:
                        report = await play_and_record(table, admin, store, claim)
                    except (MatchError, StaleAttemptError) as error:
                        await store.call(store.store.abandon, claim)
                        failures.setdefault(key, []).append(str(error))
                        if len(failures[key]) >= MAX_FAILURES:
                            raise LeagueRunError(
                                f"match {key[0]} game {key[1]} failed {MAX_FAILURES} times; "
                                f"last: {error}"
                            ) from None
                        if admin.closed:
                            raise
                        continue
                    except BaseException:
                        # Cancelled (Ctrl+C, SIGTERM, another worker's failure): the bots are
                        # stopped by play_game; the game goes back for the next run.
                        await store.call(store.store.abandon, claim)
                        raise
                    if report.status is RecordStatus.RECORDED:
                        recorded += 1
                    if on_game is not None:
                        maybe = on_game(report)
                        if maybe is not None:
                            await maybe

        try:
            async with trio.open_nursery() as nursery:
                for index in range(max(1, concurrency)):
                    nursery.start_soon(worker, index)
        except BaseExceptionGroup as group:
            first = first_leaf(group)
            if isinstance(first, LeagueRunError | MatchError):
                raise LeagueRunError(str(first)) from None
            raise
    return recorded


def describe(report: GameReport, names: dict[str, str]) -> str:
    """One line for a finished game: `match 3 game 2: A - B  2:0 (A)  41 moves  3.2 s`."""
    game = report.claim.game
    outcome = report.outcome
    winner = names.get(outcome.winner, outcome.winner) if outcome.winner else "draw"
    how = "" if outcome.regular else f", {outcome.reason}"
    notes = f"  [{'; '.join(report.notes)}]" if report.notes else ""
    return (
        f"match {game.match_id} game {game.number}: {names[game.team_one]} - "
        f"{names[game.team_two]}  {outcome.siegpunkte[0]}:{outcome.siegpunkte[1]} "
        f"({winner}{how})  {report.seconds:.1f} s{notes}"
    )
