"""The ladder's work (issue 22): checking an upload and playing ladder matches, on one machine
(ladder.work_pool's `run_workers`: a scheduler and W workers in one trio run) or across
machines (ladder.actors: the same bodies as Dramatiq actors). This module holds what every job
shares (settings, files, the heartbeat) and the check jobs; a match is ladder.work_match's.

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

import json
import os
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import structlog
import trio

from check.card import Card, Item, Status
from check.run import Options as CheckOptions
from check.run import check
from check.upload import BadInput
from ladder.store import CheckClaim, LadderStore
from league.asyncstore import StoreThread
from league.store import StaleAttemptError

__all__ = [
    "CHECK_GAMES",
    "NO_DOCKER_NOTE",
    "LadderDb",
    "WorkSettings",
    "beat_until_stale",
    "card_path",
    "card_summary",
    "check_version",
    "game_log_path",
    "private_directories",
    "replay_path",
    "upload_path",
    "write_atomically",
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


def write_atomically(path: Path, data: bytes) -> None:
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
                nursery.start_soon(beat_until_stale, db, beat, heartbeat_every, stale)
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
    await trio.to_thread.run_sync(write_atomically, card_path(data_dir, version_id), data)
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


async def beat_until_stale(
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
