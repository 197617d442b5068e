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

`play_and_record` (league.play) is the unit both the local runner and a distributed worker
call: one claimed game, played and recorded under its attempt, on a table (league.table: the
server in this process, the teams' launchers from league.teams). This module is the local
runner, and the names a runner of league games needs, in one place.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path

from client import ClientSession
from launching import MatchError
from league.asyncstore import AsyncStore
from league.config import LeagueConfig
from league.play import GameReport, play_and_record, play_by_id
from league.store import Claim, RecordStatus, StaleAttemptError
from league.table import LeagueTable, open_table
from league.teams import (
    BUILTIN,
    MODES,
    LeagueRunError,
    check_mode,
    container_label,
    default_mode,
    display_names,
)
from runner.game import admin_session
from runner.schedule import worker_pool
from server.exits import first_leaf

__all__ = [
    "BUILTIN",
    "MODES",
    "AsyncStore",
    "GameReport",
    "LeagueRunError",
    "LeagueTable",
    "admin_session",
    "check_mode",
    "container_label",
    "default_mode",
    "describe",
    "display_names",
    "open_table",
    "play_and_record",
    "play_by_id",
    "run_league",
    "worker_name",
]

MAX_FAILURES = 3  # failed attempts of one game in one run before the run stops


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

        async def take(index: int) -> Claim | None:
            return await store.call(store.store.claim_next, worker_name(index))

        async def play(admin: ClientSession, claim: Claim) -> None:
            nonlocal recorded
            key = (claim.match_id, claim.number)
            try:
                report = await play_and_record(table, admin, store, claim)
            except (MatchError, StaleAttemptError) as error:
                await store.call(store.store.abandon, claim)
                failures.setdefault(key, []).append(str(error))
                if len(failures[key]) >= MAX_FAILURES:
                    raise LeagueRunError(
                        f"match {key[0]} game {key[1]} failed {MAX_FAILURES} times; last: {error}"
                    ) from None
                if admin.closed:
                    raise
                return
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
            await worker_pool(table.server, max(1, concurrency), take, play)
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
