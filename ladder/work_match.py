"""Playing one claimed ladder match (ladder.work_pool's match jobs): its seats (the uploads,
unpacked by check.upload and run in containers or check's jail), its games on the match core,
each game's row (a bot's failure is its loss, the server's is nobody's: `ServerFailure`), the
replays, and the result recorded under the claim's attempt. The rules are ladder.work's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import secrets
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import structlog
import trio

from check.containers import bot_image
from check.isolation import JailLauncher, detect
from check.upload import BadInput, BotSource, Unrunnable, resolve
from engine import ROUND_LIMIT, GameResult, Team
from ladder.store import GameResultRow, MatchClaim, RecordStatus
from ladder.work import (
    LadderDb,
    WorkSettings,
    beat_until_stale,
    game_log_path,
    replay_path,
    upload_path,
    write_atomically,
)
from launching import MatchError, PlayerLauncher, RunningPlayer, exit_description
from league.store import StaleAttemptError
from protocol.replay import write_replay
from runner.game import GAME_MARGIN, GameSpec, Observation, ServerAddress, admin_session, play_game
from runner.inprocess import in_process_server, server_settings
from runner.reaper import BotReaper, reaped
from runner.schedule import board_seed
from runner.timing import irregular_loss, movers
from server.exits import first_leaf
from server.recorder import FinishedGame

__all__ = [
    "SERVER_LOGS",
    "MatchReport",
    "ServerFailure",
    "forfeit_row",
    "game_server",
    "match_error",
    "play_claimed_match",
    "play_match",
    "scored_row",
    "seat_times",
]

log = structlog.get_logger("ladder.work")  # the same log as ladder.work's

SERVER_LOGS = "server"  # DIR/logs/server/: the game server's own logs, not a team's


class ServerFailure(Exception):
    """A game could not be scored for a reason no bot is to blame for (the game server, this
    machine): the match is given back, not recorded."""


@dataclass
class _Seat:
    """One version at the table: its team, display name and launcher."""

    version_id: int
    team_id: int
    name: str
    launcher: PlayerLauncher
    source: BotSource


class _Tracked:
    """A running player that remembers whether it ended by itself (a crash) before the match
    core stopped it."""

    def __init__(self, inner: RunningPlayer) -> None:
        self.inner = inner
        self.ended_by_itself = False

    @property
    def returncode(self) -> int | None:
        return self.inner.returncode

    @property
    def exit_reason(self) -> str | None:
        reason: str | None = getattr(self.inner, "exit_reason", None)
        return reason

    async def wait(self) -> int:
        return await self.inner.wait()

    async def stop(self) -> bool:
        if self.inner.returncode is not None:
            self.ended_by_itself = True
        return await self.inner.stop()


class _GameLauncher:
    """One seat's launcher for one game: its output goes to the team's log of that game
    (whatever name the match core picked), and the player is kept for the verdict."""

    def __init__(self, inner: PlayerLauncher, log_path: Path) -> None:
        self.inner = inner
        self.log_path = log_path
        self.player: _Tracked | None = None
        self.failed: str | None = None  # why it could not be started

    async def launch(
        self, name: str, host: str, port: int, reservation: str, log_path: Path
    ) -> _Tracked:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            started = await self.inner.launch(name, host, port, reservation, self.log_path)
        except MatchError as error:
            self.failed = str(error)
            raise
        self.player = _Tracked(started)
        return self.player


@dataclass(frozen=True)
class MatchReport:
    """What `play_match` did with a claim."""

    claim: MatchClaim
    status: RecordStatus
    rows: tuple[GameResultRow, ...]
    seconds: float


def _points(result: GameResult, team: Team) -> int:
    return next((score[0] for entry, score in result.scores if entry.team is team), 0)


def scored_row(
    number: int, seats: tuple[_Seat, _Seat], one: int, result: GameResult, crashed: list[int]
) -> GameResultRow:
    """The row of a game the server scored. `one` is the seat (0: version a) holding team
    ONE, `crashed` the seats whose process died during the game."""
    team_of = (Team.ONE, Team.TWO) if one == 0 else (Team.TWO, Team.ONE)
    names = (seats[0].name, seats[1].name)
    reasons = [result.reason, result.reason]
    # Without a winner nobody lost irregularly (a draw, an aborted game).
    loss = None if result.winner is None else irregular_loss(result, names, one, crashed)
    if loss is not None:
        loser, kind = loss
        reasons[loser] = f"{kind}: {result.reason}"
        reasons[1 - loser] = f"won: the opponent lost by {kind}"
    return GameResultRow(
        number,
        seats[one].version_id,
        _points(result, team_of[0]),
        _points(result, team_of[1]),
        reasons[0],
        reasons[1],
        None,
    )


def forfeit_row(
    number: int, seats: tuple[_Seat, _Seat], one: int, losers: dict[int, str]
) -> GameResultRow:
    """The row of a game a bot forfeited by ending before the server scored the game: the
    winner's 2 points (the official irregular win), none for the loser; both lose when both
    ended."""
    points = [0 if seat in losers else 2 for seat in (0, 1)]
    reasons = [
        f"CRASH: {losers[seat]}"
        if seat in losers
        else "won: the opponent ended before the game did"
        for seat in (0, 1)
    ]
    return GameResultRow(
        number, seats[one].version_id, points[0], points[1], reasons[0], reasons[1], None
    )


async def _play_one(
    number: int,
    seats: tuple[_Seat, _Seat],
    seed: int | None,
    admin_server: ServerAddress,
    settings: WorkSettings,
    match_id: int,
) -> tuple[GameResultRow, bytes | None]:
    """Play game `number` (odd: version a moves first); its row and replay."""
    one = 0 if number % 2 == 1 else 1
    launchers = tuple(
        _GameLauncher(
            seat.launcher, game_log_path(settings.data_dir, seat.team_id, match_id, number)
        )
        for seat in seats
    )
    spec = GameSpec(number, one, (seats[0].name, seats[1].name), (True, True), seed)
    limit = settings.game_limit or 2 * ROUND_LIMIT * admin_server.hard_timeout + GAME_MARGIN
    server_log_dir = settings.data_dir / "logs" / SERVER_LOGS
    games = admin_server.games
    try:
        async with admin_session(admin_server) as admin:
            observation = await play_game(
                spec, (launchers[0], launchers[1]), admin, admin_server, server_log_dir, limit
            )
    except (MatchError, BaseExceptionGroup) as raised:
        error = match_error(raised)
        if error is None:
            raise
        if games is not None:
            games.take_any()
        ended = {
            seat: exit_description(launcher.player)
            for seat, launcher in enumerate(launchers)
            if launcher.player is not None and launcher.player.ended_by_itself
        }
        if ended and not any(launcher.failed for launcher in launchers):
            log.info("a bot ended before the game", match=match_id, game=number, error=str(error))
            return forfeit_row(number, seats, one, ended), None
        raise ServerFailure(f"game {number}: {error}") from None
    finished = _server_game(observation, number, admin_server)
    result = finished.result
    if not result.regular and result.winner is None:
        # Nobody won an irregular game: both seats counted as gone (e.g. one bot ended after
        # joining, before the other had joined). A bot whose process failed by itself in
        # it is the one to blame.
        failed = {
            seat: exit_description(launcher.player)
            for seat, launcher in enumerate(launchers)
            if launcher.player is not None
            and launcher.player.ended_by_itself
            and launcher.player.returncode not in (0, None)
        }
        if len(failed) == 1:
            return forfeit_row(number, seats, one, failed), _replay(observation)
    row = scored_row(number, seats, one, result, list(observation.crashed))
    # The server's own move times (its lobby's clock), each seat's: the team page's profile.
    times_a, times_b = seat_times(finished.move_ms, one)
    return dataclasses.replace(row, move_ms_a=times_a, move_ms_b=times_b), _replay(observation)


def seat_times(move_ms: Sequence[float], one: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Each seat's move times (seat 0: version a) from a game's move times in move order;
    `one` is the seat holding team ONE, which moves on the even turns."""
    seats: tuple[list[float], list[float]] = ([], [])
    for slot, ms in zip(movers(len(move_ms)), move_ms, strict=True):
        seats[one if slot == 0 else 1 - one].append(round(float(ms), 1))
    return tuple(seats[0]), tuple(seats[1])


def match_error(raised: BaseException) -> MatchError | None:
    """The MatchError that ended a game (the match core raises it from inside its nursery, so
    it may come in an exception group); None when anything else went wrong too."""
    if isinstance(raised, MatchError):
        return raised
    if isinstance(raised, BaseExceptionGroup):
        matched, rest = raised.split(MatchError)
        if matched is not None and rest is None:
            leaf = first_leaf(matched)
            assert isinstance(leaf, MatchError)
            return leaf
    return None


def _server_game(observation: Observation, number: int, server: ServerAddress) -> FinishedGame:
    """The server's own record of the game (its result, its move times); ServerFailure when
    it has none."""
    finished = None if server.games is None else server.games.take(observation.summary.room_id)
    if finished is None:
        raise ServerFailure(f"game {number}: the server did not record the room")
    if finished.end not in ("over", "expired"):
        raise ServerFailure(f"game {number} ended without a result ({finished.end})")
    return finished


def _replay(observation: Observation) -> bytes:
    return gzip.compress(write_replay(observation.summary.room_id, observation.packets))


@contextlib.contextmanager
def _unpacked(zip_path: Path) -> Iterator[BotSource]:
    """The upload's files in a private temporary folder (check.upload's ZIP rules)."""
    try:
        source = resolve(str(zip_path), main=None, python="python3", items=[])
    except (BadInput, Unrunnable) as error:
        raise ServerFailure(f"{zip_path.name} cannot be unpacked: {error}") from None
    try:
        yield source
    finally:
        source.cleanup()


async def _seats(
    db: LadderDb,
    claim: MatchClaim,
    settings: WorkSettings,
    server: ServerAddress,
    reaper: BotReaper,
    run_id: str,
    stack: contextlib.ExitStack,
) -> tuple[_Seat, _Seat]:
    seats = []
    for version_id in (claim.version_a, claim.version_b):
        version = await db.call(db.store.version, version_id)
        if version is None:
            raise ServerFailure(f"version {version_id} is gone")
        team = await db.call(db.store.team, version.team_id)
        name = f"{team.name if team else version.team_id} v{version.number}"
        zip_path = upload_path(settings.data_dir, version.team_id, version_id)
        source = stack.enter_context(_unpacked(zip_path))
        launcher: PlayerLauncher
        if settings.docker:
            from sandbox import ContainerLauncher, Limits

            assert server.unix_socket is not None
            image = await bot_image(source)
            launcher = ContainerLauncher(
                image,
                server.unix_socket,
                limits=Limits(),
                run_id=run_id,
                match_id=str(claim.match_id),
            )
        else:
            isolation = detect().for_bot(source.command)
            launcher = reaped(
                JailLauncher(source, isolation, server.unix_socket, reaper=reaper), reaper
            )
        seats.append(_Seat(version_id, version.team_id, name, launcher, source))
    return seats[0], seats[1]


async def play_match(
    db: LadderDb,
    data_dir: Path,
    claim: MatchClaim,
    *,
    docker: bool,
    settings: WorkSettings | None = None,
) -> MatchReport:
    """Play the claimed match's games (sides swapped: version a moves first in odd games;
    games 2k-1 and 2k share a board) and record them under the claim's attempt.

    Raises ServerFailure when a game could not be scored for no bot's fault, and
    StaleAttemptError when a newer attempt took the match over; the caller abandons the claim
    then (nothing was recorded)."""
    work = dataclasses.replace(settings or WorkSettings(data_dir), data_dir=data_dir, docker=docker)
    return await play_claimed_match(db, claim, work)


@contextlib.asynccontextmanager
async def game_server(settings: WorkSettings, log_path: Path) -> AsyncIterator[ServerAddress]:
    """The game server in this process (runner.inprocess) for ladder games: official
    timeouts, the join deadline, a Unix socket for the containers' relays, no results or
    replays of its own (the worker writes them). One per trio run: the workers of a pool
    share it. It logs to `log_path` only (`server.logs.ServerLog`): the worker's own lines
    stay the worker's."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    game_settings = server_settings(
        results_file=None, save_replay=False, reservation_ttl=settings.join_seconds
    )
    async with in_process_server(game_settings, log_path, unix_socket=True) as server:
        yield server


async def play_claimed_match(
    db: LadderDb, claim: MatchClaim, settings: WorkSettings, server: ServerAddress | None = None
) -> MatchReport:
    began = trio.current_time()
    run_id = f"ladder-{secrets.token_hex(4)}"
    containers = None
    if settings.docker:
        from sandbox.docker import docker_cli

        containers = (docker_cli(), f"piranhas.run={run_id}")
    rows: list[GameResultRow] = []
    replays: list[tuple[int, bytes]] = []
    async with contextlib.AsyncExitStack() as stack:
        if server is None:
            server_log = settings.data_dir / "logs" / SERVER_LOGS / f"{claim.match_id}.log"
            server = await stack.enter_async_context(game_server(settings, server_log))
        assert server is not None
        reaper = stack.enter_context(BotReaper(containers))
        files = stack.enter_context(contextlib.ExitStack())
        seats = await _seats(db, claim, settings, server, reaper, run_id, files)
        with trio.CancelScope() as stale:
            async with trio.open_nursery() as nursery:
                beat = partial(db.store.heartbeat, claim, lease_seconds=settings.lease_seconds)
                nursery.start_soon(beat_until_stale, db, beat, settings.heartbeat_every, stale)
                for number in range(1, claim.games + 1):
                    seed = board_seed(claim.board_seed, (number - 1) // 2)
                    row, replay = await _play_one(
                        number, seats, seed, server, settings, claim.match_id
                    )
                    rows.append(row)
                    if replay is not None:
                        replays.append((number, replay))
                nursery.cancel_scope.cancel()
    if stale.cancelled_caught:
        raise StaleAttemptError(f"match {claim.match_id}: attempt {claim.attempt} was superseded")
    # The replays under a name of this attempt first; under their public names only once the
    # result is this attempt's (a superseded attempt never overwrites the recorded game).
    staged = []
    for number, data in replays:
        final = replay_path(settings.data_dir, claim.match_id, number)
        path = final.with_name(f".{final.name}.a{claim.attempt}")
        await trio.to_thread.run_sync(write_atomically, path, data)
        staged.append((path, final))
        rows[number - 1] = _with_replay(rows[number - 1], final.name)
    status = await db.call(db.store.record_match, claim, rows)
    for path, final in staged:
        path.replace(final)
    log.info("match recorded", match=claim.match_id, attempt=claim.attempt, status=status.value)
    return MatchReport(claim, status, tuple(rows), trio.current_time() - began)


def _with_replay(row: GameResultRow, name: str) -> GameResultRow:
    return dataclasses.replace(row, replay=name)
