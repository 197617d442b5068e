"""The ladder's work (issue 22): checking an upload and playing ladder matches, on one machine
(`run_workers`: a scheduler and W workers in one trio run) or across machines (ladder.actors:
the same bodies as Dramatiq actors).

Rules this module keeps:

- An upload is hostile code. It is unpacked only by `check.upload` (zip-slip, size, bombs) and
  run only through `sandbox.ContainerLauncher` (one contest-limited container per bot and game,
  its own relay: it sees `lo` and the game server, nothing of the host or of another team) or,
  with `docker=False` (laptops, tests), through check's process jail (`check.isolation`:
  cgroup, network namespace, a fresh copy per run); the card says which.
- A game is played by the match core (`runner.game.play_game` on `runner.inprocess`'s server),
  as piranhas-match, the league and the check play theirs.
- A bot's failure is a loss for that bot, never a lost result: the server scores a crash, a
  timeout or a bad move; a bot whose process ends before the server saw the game end (the
  match core's MatchError for it) forfeits that game here. The server's own failure (no
  result, a hang past the game limit, a refused request) is charged to nobody: the claim is
  given back and the match is played again by a later attempt.
- Exactly once: every result goes through `record_match` under the claim's attempt (the
  league store's fencing); a heartbeat that finds a newer attempt stops the games at once.

Files (LADDER.md): DIR/uploads/<team>/<version>.zip in, DIR/cards/<version>.json,
DIR/replays/<match>-<game>.xml.gz, DIR/logs/<team>/<match>-<game>.log (bounded,
launching.botlog) out; a match's server log goes to DIR/logs/server/<match>.log.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import json
import math
import os
import secrets
import signal
import socket
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import structlog
import trio

from check.card import Card, Item, Status
from check.containers import bot_image
from check.isolation import JailLauncher, detect
from check.run import Options as CheckOptions
from check.run import check
from check.upload import BadInput, BotSource, Unrunnable, resolve
from engine import ROUND_LIMIT, GameResult, Team
from ladder.pairing import top_up
from ladder.store import CheckClaim, GameResultRow, LadderStore, MatchClaim, RecordStatus
from launching import MatchError, PlayerLauncher, RunningPlayer, exit_description
from league.asyncstore import StoreThread
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
    "CHECK_GAMES",
    "MAX_MATCH_ATTEMPTS",
    "LadderDb",
    "MatchReport",
    "ServerFailure",
    "WorkSettings",
    "cancel_on_signal",
    "card_path",
    "check_version",
    "game_log_path",
    "play_match",
    "private_directories",
    "replay_path",
    "run_workers",
    "schedule_matches",
    "upload_path",
    "work_once",
]

log = structlog.get_logger("ladder.work")

LadderDb = StoreThread[LadderStore]
"""The ladder store on its own thread (league.asyncstore): trio code calls `db.call(...)`."""

CHECK_SECTIONS = frozenset({1, 4})  # the upload's static items and the contest's test games
CHECK_GAMES = 2  # the contest's test before activation: 2 games against the random player
UPLOAD_WAIT = 10.0  # s: the site renames the upload into place just after add_version
NO_DOCKER_NOTE = (
    "checked WITHOUT containers (the worker runs with --no-docker): the bot ran as a process "
    "in check's jail, not in the contest's container"
)
SERVER_LOGS = "server"  # DIR/logs/server/: the game server's own logs, not a team's
MAX_MATCH_ATTEMPTS = 3  # a match unplayable for no bot's fault this often is given up


def upload_path(data_dir: Path, team_id: int, version_id: int) -> Path:
    """Where the site keeps a version's upload (names from ids only)."""
    return data_dir / "uploads" / str(team_id) / f"{version_id}.zip"


def card_path(data_dir: Path, version_id: int) -> Path:
    """A version's check card (team-private)."""
    return data_dir / "cards" / f"{version_id}.json"


def replay_path(data_dir: Path, match_id: int, game: int) -> Path:
    """The official replay of a ladder game (public once the game is played)."""
    return data_dir / "replays" / f"{match_id}-{game}.xml.gz"


def game_log_path(data_dir: Path, team_id: int, match_id: int, game: int) -> Path:
    """A bot's stdout/stderr in one game (served to its own team only)."""
    return data_dir / "logs" / str(team_id) / f"{match_id}-{game}.log"


@dataclass(frozen=True)
class WorkSettings:
    """How a worker works. `lease_seconds` is how long a claim lives without a heartbeat (a
    killed worker's match is played again after it); heartbeats come every
    `heartbeat_every` seconds."""

    data_dir: Path
    docker: bool = True
    worker: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    lease_seconds: float = 300.0
    heartbeat_every: float = 30.0
    poll_interval: float = 1.0
    game_limit: float | None = None  # s per game; None: every move at the hard timeout
    # A bot that has not joined its game this long after the room was prepared loses it (the
    # server's reservation time; its default of an hour would let a bot that never starts
    # hold a worker).
    join_seconds: float = 60.0


PRIVATE_DIRECTORIES = ("uploads", "logs", "cards")


def private_directories(data_dir: Path) -> None:
    """Make the team-private folders of the data directory this user's alone (0700): a bot
    run as a process (--no-docker: as `nobody` when the worker is root) cannot read another
    team's uploads, logs or cards there. Containers see none of the host's files anyway."""
    for name in PRIVATE_DIRECTORIES:
        folder = data_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o700)


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(3)}.tmp")
    with temporary.open("wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    temporary.replace(path)


async def _wait_for_file(path: Path, seconds: float) -> bool:
    deadline = trio.current_time() + seconds
    while not path.is_file():
        if trio.current_time() >= deadline:
            return False
        await trio.sleep(0.2)
    return True


# ---- check jobs ------------------------------------------------------------------------------


def card_summary(card: Card) -> str:
    """One line for the version list: ready, or the failed items."""
    failed = card.failed()
    if not failed and not card.items:
        return "not checked: " + ("; ".join(card.notes) or "nothing to check")
    if not failed:
        return f"ready: {len(card.items)} items, none failed"
    keys = ", ".join(item.key for item in failed[:6])
    more = f" and {len(failed) - 6} more" if len(failed) > 6 else ""
    return f"{len(failed)} failed: {keys}{more}"


async def check_version(
    db: LadderDb,
    data_dir: Path,
    version_id: int,
    *,
    docker: bool,
    claim: CheckClaim | None = None,
    heartbeat_every: float = 30.0,
    lease_seconds: float = 300.0,
) -> Card:
    """Check a version's upload: check.upload's static items (the ZIP read safely) and the
    contest's 2 test games, the bot in the contest's container (`docker`) or check's process
    jail. Writes DIR/cards/<id>.json and the version's result (fenced by `claim`'s attempt
    when a worker claimed the check); the card.

    A broken upload is a failed check with the reason on its card, never an exception; an
    error of this machine (no Docker daemon, a full disk) propagates and leaves the check to a
    later attempt (the claim's lease runs out). StaleAttemptError: a newer attempt took the
    check over."""
    version = await db.call(db.store.version, version_id)
    if version is None:
        raise ValueError(f"no version {version_id}")
    label = f"version {version.number} of team {version.team_id}"
    upload = upload_path(data_dir, version.team_id, version_id)
    card = Card(label)
    with trio.CancelScope() as stale:
        async with trio.open_nursery() as nursery:
            if claim is not None:
                beat = partial(db.store.heartbeat_check, claim, lease_seconds=lease_seconds)
                nursery.start_soon(_beat, db, beat, heartbeat_every, stale)
            if not await _wait_for_file(upload, UPLOAD_WAIT):
                card.notes.append("the upload's file is missing")
            else:
                card = await _run_check(upload, docker)
                card.bot = label
            nursery.cancel_scope.cancel()
    if stale.cancelled_caught:
        raise StaleAttemptError(f"version {version_id}: the check went to a newer attempt")
    if not docker:
        card.notes.insert(0, NO_DOCKER_NOTE)
    if not any(item.section == 4 for item in card.items):
        # Nothing was played (an upload that cannot run): the card must not read as ready.
        card.add(Item(4, "test.random", "The contest's test games", Status.FAIL, "not played"))
    data = json.dumps(card.to_json(), indent=2).encode()
    await trio.to_thread.run_sync(_write_atomically, card_path(data_dir, version_id), data)
    summary = card_summary(card)
    await db.call(
        db.store.set_check_result,
        version_id,
        card.ready,
        summary,
        attempt=None if claim is None else claim.attempt,
    )
    log.info("version checked", version=version_id, ready=card.ready, summary=summary)
    return card


async def _run_check(upload: Path, docker: bool) -> Card:
    options = CheckOptions(
        bot=str(upload),
        mode="docker" if docker else "process",
        sections=CHECK_SECTIONS,
        random_games=CHECK_GAMES,
        match_games=0,
    )
    try:
        card = await check(options)
    except BadInput as error:
        card = Card(str(upload))
        card.notes.append(str(error))
    # The contest's test is the 2 games against random; check's 0-game match says nothing.
    card.items = [item for item in card.items if item.key != "test.match"]
    return card


async def _beat(
    db: LadderDb, beat: Callable[[], None], every: float, stale: trio.CancelScope
) -> None:
    """Extend a claim's lease every `every` s; cancel `stale` when a newer attempt has it."""
    while True:
        await trio.sleep(every)
        try:
            await db.call(beat)
        except StaleAttemptError:
            log.warning("job handed to a newer attempt")
            stale.cancel()
            return


# ---- match jobs ------------------------------------------------------------------------------


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
    return await _play_match(db, claim, work)


@contextlib.asynccontextmanager
async def game_server(settings: WorkSettings, log_path: Path) -> AsyncIterator[ServerAddress]:
    """The game server in this process (runner.inprocess) for ladder games: official
    timeouts, the join deadline, a Unix socket for the containers' relays, no results or
    replays of its own (the worker writes them). One per trio run: the workers of a pool
    share it (its logging set-up is the process's)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    game_settings = server_settings(
        results_file=None, save_replay=False, reservation_ttl=settings.join_seconds
    )
    async with in_process_server(game_settings, log_path, unix_socket=True) as server:
        yield server


async def _play_match(
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
                nursery.start_soon(_beat, db, beat, settings.heartbeat_every, stale)
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
        await trio.to_thread.run_sync(_write_atomically, path, data)
        staged.append((path, final))
        rows[number - 1] = _with_replay(rows[number - 1], final.name)
    status = await db.call(db.store.record_match, claim, rows)
    for path, final in staged:
        path.replace(final)
    log.info("match recorded", match=claim.match_id, attempt=claim.attempt, status=status.value)
    return MatchReport(claim, status, tuple(rows), trio.current_time() - began)


def _with_replay(row: GameResultRow, name: str) -> GameResultRow:
    return dataclasses.replace(row, replay=name)


# ---- workers and the scheduler ---------------------------------------------------------------


async def work_once(
    db: LadderDb, settings: WorkSettings, server: ServerAddress | None = None
) -> str | None:
    """Claim one job, check jobs first, and do it; what was done ("check 3", "match 7"), None
    when there was nothing to claim. A match that failed for no bot's fault (or lost to a
    newer attempt) is given back."""
    check_claim = await db.call(
        db.store.claim_check, settings.worker, lease_seconds=settings.lease_seconds
    )
    if check_claim is not None:
        await check_version(
            db,
            settings.data_dir,
            check_claim.version_id,
            docker=settings.docker,
            claim=check_claim,
            heartbeat_every=settings.heartbeat_every,
            lease_seconds=settings.lease_seconds,
        )
        return f"check {check_claim.version_id}"
    claim = await db.call(
        db.store.claim_match, settings.worker, lease_seconds=settings.lease_seconds
    )
    if claim is None:
        return None
    try:
        await _play_match(db, claim, settings, server)
    except StaleAttemptError as error:
        log.warning("match taken over", match=claim.match_id, error=str(error))
        await db.call(db.store.abandon_match, claim)
        return f"match {claim.match_id} given back"
    except ServerFailure as error:
        attempts = await db.call(db.store.attempts, "match", claim.match_id)
        if len(attempts) >= MAX_MATCH_ATTEMPTS:
            # Unplayable for no bot's fault every time (an upload's file gone, an image that
            # does not build): claimed forever it would stall the ladder's oldest-first queue.
            await db.call(db.store.give_up_match, claim, str(error))
            log.error("match given up", match=claim.match_id, error=str(error))
            return f"match {claim.match_id} given up"
        log.warning("match given back", match=claim.match_id, error=str(error))
        await db.call(db.store.abandon_match, claim)
        return f"match {claim.match_id} given back"
    except BaseException:
        # Cancelled (shutdown) or an error of this machine: the match goes back.
        with trio.CancelScope(shield=True):
            await db.call(db.store.abandon_match, claim)
        raise
    return f"match {claim.match_id}"


def schedule_matches(store: LadderStore, workers: int) -> list[int]:
    """The scheduler's step (ladder.pairing.top_up: enough matches waiting that a worker
    that finishes claims the next at once); the new match ids. Synchronous: runs on the
    store's thread."""
    return top_up(store, workers=workers)


async def _scheduler(open_db: Callable[[], LadderDb], want: int, interval: float) -> None:
    db = open_db()
    try:
        while True:
            created = await db.call(schedule_matches, db.store, want)
            if created:
                log.info("matches scheduled", matches=created)
            await trio.sleep(interval)
    finally:
        db.close()


async def _worker(open_db: Callable[[], LadderDb], settings: WorkSettings) -> None:
    db = open_db()
    try:
        while True:
            try:
                done = await work_once(db, settings)
            except Exception as error:
                # This machine's trouble (Docker gone, disk full): say so, wait, go on.
                log.error("job failed", worker=settings.worker, error=repr(error))
                done = None
            if done is None:
                await trio.sleep(settings.poll_interval)
    finally:
        db.close()


async def run_workers(
    store_factory: Callable[[], LadderStore],
    data_dir: Path,
    *,
    workers: int,
    docker: bool,
    schedule: bool = True,
    schedule_interval: float = 2.0,
    settings: WorkSettings | None = None,
) -> None:
    """The pool until cancelled: a scheduler keeping enough matches pending for `workers`
    workers (`schedule=False`: another process schedules) and the workers, each claiming
    check jobs first, then matches. One worker runs in this trio run; more run in child
    processes of their own (`store_factory` must then be picklable, e.g. a
    functools.partial of LadderStore.open): a game server's logging and its move clock belong
    to its process, so two servers never share one."""
    if workers < 1:
        raise ValueError("at least one worker")
    base = dataclasses.replace(settings or WorkSettings(data_dir), data_dir=data_dir, docker=docker)
    private_directories(data_dir)

    def open_db() -> LadderDb:
        return StoreThread(store_factory, name="ladder-store")

    async with trio.open_nursery() as nursery:
        if schedule:
            nursery.start_soon(_scheduler, open_db, workers, schedule_interval)
        if workers == 1:
            nursery.start_soon(
                _worker, open_db, dataclasses.replace(base, worker=f"{base.worker}:0")
            )
        else:
            for index in range(workers):
                worker = dataclasses.replace(base, worker=f"{base.worker}:{index}")
                nursery.start_soon(_child_worker, store_factory, worker)
        await trio.sleep(math.inf)


CHILD_RESTART_DELAY = 5.0  # s before a worker process that ended is started again
CHILD_STOP_WAIT = 30.0  # s for a stopping worker process to give its match back


async def _child_worker(store_factory: Callable[[], LadderStore], settings: WorkSettings) -> None:
    """One worker in a child process, started again when it ends; SIGTERM when cancelled (it
    gives its running match back), SIGKILL if it does not end in time."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # nothing of this process's state
    while True:
        process = context.Process(
            target=_worker_process, args=(store_factory, settings), name=settings.worker
        )
        process.start()
        try:
            while process.is_alive():
                await trio.sleep(0.5)
        finally:
            if process.is_alive():
                with trio.CancelScope(shield=True):
                    process.terminate()
                    with trio.move_on_after(CHILD_STOP_WAIT):
                        while process.is_alive():
                            await trio.sleep(0.1)
                    if process.is_alive():
                        process.kill()
                    process.join()
        log.error("worker process ended", worker=settings.worker, status=process.exitcode)
        await trio.sleep(CHILD_RESTART_DELAY)


def _worker_process(store_factory: Callable[[], LadderStore], settings: WorkSettings) -> None:
    """A child process's body: one worker until SIGTERM, or until its parent is gone (a
    killed pool leaves no worker behind)."""
    parent = os.getppid()

    async def orphaned(scope: trio.CancelScope) -> None:
        while os.getppid() == parent:
            await trio.sleep(1.0)
        scope.cancel()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_on_signal, nursery.cancel_scope)
            nursery.start_soon(orphaned, nursery.cancel_scope)
            await _worker(lambda: StoreThread(store_factory, name="ladder-store"), settings)

    trio.run(main)


async def cancel_on_signal(scope: trio.CancelScope) -> None:
    """Cancel `scope` at the first SIGINT or SIGTERM (a worker's way to stop)."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            scope.cancel()
            return
