"""Scheduling: which game is played when, by whom, on which board; K games at once.

Games are numbered 1..N. Game k (0-based) puts player1 on team ONE when k is even (the
official alternation). With a seed, games 2p and 2p+1 share the start board of pair p
(`GameState.initial(board_seed(S, p))`), sides swapped: the board's luck cancels out. With
--boards the pairs take the list's seeds in turn instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

import trio

from client import ClientSession
from engine import ROUND_LIMIT
from launching import MatchError, PlayerLauncher
from runner.game import (
    GAME_MARGIN,
    GameSpec,
    Observation,
    ServerAddress,
    Watcher,
    admin_session,
    play_game,
)
from runner.launchers import launcher_for
from runner.options import Options
from runner.reaper import BotReaper, reaped
from runner.scores import Scoreboard, first_player
from runner.stats import SprtStatus
from server.exits import first_leaf

T = TypeVar("T")


async def worker_pool(
    server: ServerAddress,
    workers: int,
    take: Callable[[int], Awaitable[T | None]],
    play: Callable[[ClientSession, T], Awaitable[None]],
) -> None:
    """`workers` tasks at once, each on an admin connection of its own: worker `index` plays
    what `take(index)` hands it until that is None. The first failure cancels the others (trio
    raises it in an exception group). The one pool of piranhas-match and the league."""

    async def worker(index: int) -> None:
        async with admin_session(server) as admin:
            while (item := await take(index)) is not None:
                await play(admin, item)

    async with trio.open_nursery() as nursery:
        for index in range(workers):
            nursery.start_soon(worker, index)


def board_seed(seed: int, pair: int) -> int:
    """The board seed of pair `pair` in a run with `--seed seed`: a hash, so runs with
    neighbouring seeds share no boards."""
    digest = hashlib.sha256(f"piranhas-match:{seed}:{pair}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1  # fits a Java long, like official seeds


def game_spec(options: Options, index: int, *, paired: bool = True) -> GameSpec:
    """Game `index` (0-based) of the run."""
    seed = None
    if paired and options.boards is not None:
        seed = options.boards[index // 2 % len(options.boards)]
    elif paired and options.seed is not None:
        seed = board_seed(options.seed, index // 2)
    return GameSpec(index + 1, first_player(index), options.names, options.can_timeout, seed)


class Schedule:
    """Plays the run's games, `options.concurrency` at a time, each on its own admin
    connection; `record` is awaited for every finished game before it is counted."""

    def __init__(
        self,
        options: Options,
        match: Scoreboard,
        server: ServerAddress,
        record: Callable[[Observation], Awaitable[None]],
        launchers: tuple[PlayerLauncher, PlayerLauncher] | None = None,
        *,
        done: frozenset[int] = frozenset(),
        counted: Callable[[Scoreboard], None] | None = None,
        watch: Watcher | None = None,
        reaper: BotReaper | None = None,
    ) -> None:
        """`record` is awaited for each finished game before it is counted, `counted` is
        called after; game numbers in `done` were played by an earlier run (--resume).
        With a `reaper`, no process a local bot started outlives its game (runner.reaper)."""
        self.options = options
        self.match = match
        self.server = server
        self.record = record
        one, two = launchers or (
            launcher_for(options.commands[0], server.unix_socket),
            launcher_for(options.commands[1], server.unix_socket),
        )
        self.launchers = (reaped(one, reaper), reaped(two, reaper))
        self.counted = counted
        self.watch = watch
        self.pending = [index for index in range(options.games) if index + 1 not in done]
        self.paired = options.paired  # until the server shows it ignores seeds
        self.decided: SprtStatus | None = None  # the SPRT's decision, once made
        self._scope: trio.CancelScope | None = None
        # A game has at most 2 * ROUND_LIMIT moves, each at most a hard timeout long.
        self.game_limit = (
            options.game_timeout or 2 * ROUND_LIMIT * server.hard_timeout + GAME_MARGIN
        )

    async def play(self) -> None:
        """Play every game; raises MatchError on the first failure (the other games are
        cancelled and their players stopped)."""
        decision = self.match.sprt_status()
        if decision is not None and decision is not SprtStatus.CONTINUE:
            self.match.say(f"SPRT: {decision.value} accepted already by the resumed games")
            self.decided = decision
            return
        try:
            with trio.CancelScope() as self._scope:
                await worker_pool(
                    self.server,
                    min(self.options.concurrency, len(self.pending)),
                    self._take,
                    self._play,
                )
        except BaseExceptionGroup as group:
            # The first failure cancels the other games; report it, not the group.
            failures, others = group.split(MatchError)
            if failures is None or others is not None:
                raise
            raise first_leaf(failures) from None

    def _stop_early(self, decision: SprtStatus) -> None:
        """The SPRT accepted a hypothesis: no more games; games still running are cancelled
        (their rooms and bots cleaned up), uncounted."""
        if self.decided is not None:
            return
        self.decided = decision
        running = len(self.match.played)
        self.match.say(
            f"SPRT: {decision.value} accepted after {running} games; stopping "
            f"({len(self.pending)} games not played)"
        )
        self.pending.clear()
        if self._scope is not None:
            self._scope.cancel()

    async def _take(self, _worker: int) -> int | None:
        return self.pending.pop(0) if self.pending else None

    async def _play(self, admin: ClientSession, index: int) -> None:
        server = self.server
        spec = game_spec(self.options, index, paired=self.paired)
        observation = await play_game(
            spec,
            self.launchers,
            admin,
            server,
            self.options.log_dir,
            self.game_limit,
            self.watch,
        )
        if observation.seeded_board is False and self.paired:
            self.paired = False
            self.match.say(
                "note: the server ignores the board seed of <prepare> (not this "
                "project's server?): boards are random, games are not paired"
            )
        if server.games is not None:
            observation.server_game = server.games.take(observation.summary.room_id)
        await self.record(observation)
        self.match.record(observation.summary)
        if self.counted is not None:
            self.counted(self.match)
        decision = self.match.sprt_status()
        if decision is not None and decision is not SprtStatus.CONTINUE:
            self._stop_early(decision)
