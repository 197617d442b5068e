"""One league game: `play_and_record(table, admin, store, claim)`, the unit both the local runner
(league.run) and a distributed worker (fleet.match) call: the claimed game played on the
runner's core (`runner.game.play_game`) and recorded under the claim's attempt, its record
built from the server's own record of the game."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path

import trio

from client import ClientSession
from engine import Direction, Move
from launching import MatchError
from league.asyncstore import AsyncStore
from league.records import record_game, refused_move, write_record
from league.store import Claim, GameOutcome, RecordStatus, StaleAttemptError
from league.table import LeagueTable
from league.teams import LeagueRunError
from runner.game import GameSpec, play_game
from server.recorder import FinishedGame as ServerGame

__all__ = ["GameReport", "play_and_record", "play_by_id", "record_path"]

HEARTBEAT_EVERY = 60.0  # seconds; the lease is DEFAULT_LEASE_SECONDS (300)
RECORDED_ENDS = ("over", "expired")  # a game over, or a bot that never connected (it lost)


@dataclass(frozen=True)
class GameReport:
    """What `play_and_record` did with one claim."""

    claim: Claim
    outcome: GameOutcome
    status: RecordStatus
    seconds: float
    notes: tuple[str, ...] = ()


def _moves(game: ServerGame, refused: Move | None) -> list[Move]:
    applied = [Move(x, y, Direction[direction]) for x, y, direction in game.moves]
    return applied if refused is None else [*applied, refused]


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
        moves=_moves(finished, refused_move(finished.result, observation.packets)),
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
