"""Items 3 and 4: real games on the real game server, through the match core
(`runner.game.play_game`, the in-process server, the bot launchers) — the same code that plays
piranhas-match and the league, never a copy. The move times are the server's own (the
lobby's measurement of each move, from the request leaving to the move arriving).
"""

from __future__ import annotations

import contextlib
import statistics
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from engine import Team
from launching import MatchError, PlayerLauncher
from runner.game import GameSpec, Observation, ServerAddress, admin_session, play_game
from runner.inprocess import in_process_server
from runner.processes import ProcessLauncher
from runner.reaper import BotReaper, reaped
from runner.timing import ServerGames, irregular_loss
from server.config import load_settings
from server.exits import find_exception

GAME_LIMIT = 600.0  # a whole game at 2 s a move is 120 s; a hang ends long before


@contextlib.asynccontextmanager
async def game_server(log_path: Path) -> AsyncIterator[ServerAddress]:
    """The game server in this process (runner.inprocess, as piranhas-match starts it) with
    the official timeouts, also on a private Unix socket (bots behind a relay reach it
    there), its results and replays not written."""
    settings = replace(load_settings([], Path.cwd()), results_file=None, save_replay=False)
    async with in_process_server(settings, log_path, unix_socket=True) as server:
        yield server


def builtin(name: str, reaper: BotReaper | None) -> PlayerLauncher:
    """A built-in bot as the opponent (piranhas-bot, with this interpreter)."""
    return reaped(ProcessLauncher([sys.executable, "-m", "cli.bot", "--bot", name]), reaper)


@dataclass
class GameRecord:
    """One game of the bot: its outcome and the server's times of its moves."""

    number: int
    opponent: str
    bot_first: bool
    outcome: str  # "win", "draw", "loss"
    reason: str
    irregular: str | None  # the kind of an irregular loss of the bot (SOFT_TIMEOUT, CRASH, ...)
    move_ms: list[float] = field(default_factory=list)
    turn: int | None = None
    error: str | None = None  # the match core refused the game (crash before the end, hang)
    log_path: Path | None = None


async def play_games(
    server: ServerAddress,
    bot: PlayerLauncher,
    opponent: str,
    games: int,
    log_dir: Path,
    *,
    first_number: int = 1,
    label: str = "",
    reaper: BotReaper | None = None,
) -> list[GameRecord]:
    """`games` games of the bot against built-in `opponent`, the first move alternating
    (the bot first in odd games), one after the other."""
    records = []
    names = ("bot", opponent)
    async with admin_session(server) as admin:
        for index in range(games):
            number = first_number + index
            one = index % 2  # 0: the bot holds slot 0 (team ONE, moves first)
            spec = GameSpec(number, one, names, (True, True), seed=None)
            launchers: tuple[PlayerLauncher, PlayerLauncher] = (bot, builtin(opponent, reaper))
            game_dir = log_dir / f"{label or 'game'}{number}"
            game_dir.mkdir(parents=True, exist_ok=True)
            record = GameRecord(
                number,
                opponent,
                one == 0,
                "loss",
                "",
                None,
                log_path=game_dir / f"bot_game{number}.log",
            )
            try:
                observation = await play_game(spec, launchers, admin, server, game_dir, GAME_LIMIT)
            except (MatchError, BaseExceptionGroup) as raised:
                # play_game raises from inside its nursery: the error may come in a group.
                error = find_exception(raised, MatchError)
                if error is None:
                    raise
                record.error = str(error)
                record.irregular = "CRASH" if "exited" in str(error) else "HANG"
                record.reason = str(error)
                if server.games is not None:
                    server.games.take_any()
                records.append(record)
                continue
            fill(record, observation, server.games, names)
            records.append(record)
    return records


def fill(
    record: GameRecord,
    observation: Observation,
    games: ServerGames | None,
    names: tuple[str, str],
) -> None:
    summary = observation.summary
    result = summary.result
    finished = games.take(summary.room_id) if games is not None else None
    if finished is not None:
        result = finished.result
        slot = summary.one  # the bot's slot: 0 when it holds team ONE
        record.move_ms = list(finished.move_ms[slot::2])
    record.turn = summary.turn
    record.reason = result.reason
    bot_team = Team.ONE if summary.one == 0 else Team.TWO
    record.outcome = (
        "draw" if result.winner is None else "win" if result.winner is bot_team else "loss"
    )
    loss = irregular_loss(result, names, summary.one, list(observation.crashed))
    if loss is not None and loss[0] == 0:
        record.irregular = loss[1]


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """p50, p95, p99 and max (nearest rank), in the unit given."""
    if not values:
        return {}
    ordered = sorted(values)

    def rank(p: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]

    return {
        "p50": statistics.median(ordered),
        "p95": rank(95),
        "p99": rank(99),
        "max": ordered[-1],
        "moves": float(len(ordered)),
    }
