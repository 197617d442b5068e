"""Items 3 and 4: real games on the real game server, through the match core
(`runner.game.play_game`, the in-process server, the bot launchers) — the same code that plays
piranhas-match and the league, never a copy. The move times are the server's own (the
lobby's measurement of each move, from the request leaving to the move arriving).
"""

from __future__ import annotations

import contextlib
import secrets
import statistics
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import trio

from engine import Team
from runner.game import GameSpec, Observation, Server, admin_session, play_game
from runner.options import MatchError
from runner.players import PlayerLauncher, ProcessLauncher
from runner.timing import ServerGames, irregular_loss
from server.config import load_settings

GAME_LIMIT = 600.0  # a whole game at 2 s a move is 120 s; a hang ends long before


@contextlib.asynccontextmanager
async def game_server(log_path: Path) -> AsyncIterator[Server]:
    """The game server in this process on a free loopback port and a private Unix socket
    (bots behind a relay reach it there), with the official timeouts."""
    from server.app import serve
    from server.logs import configure_logging

    settings = load_settings([], Path.cwd())
    with tempfile.TemporaryDirectory(prefix="piranhas-check-server-") as socket_dir:
        settings = replace(
            settings,
            host="127.0.0.1",
            port=0,
            password=secrets.token_urlsafe(18),
            results_file=None,
            save_replay=False,
            unix_socket=Path(socket_dir) / "server.sock",
        )
        games = ServerGames()
        stop = trio.Event()
        with log_path.open("a", encoding="utf-8") as log_file:
            configure_logging("console", "info", stream=log_file, cache=False)
            try:
                async with trio.open_nursery() as nursery:
                    port: int = await nursery.start(
                        partial(serve, settings, stop=stop, handle_signals=False, sinks=[games])
                    )
                    try:
                        yield Server(
                            "127.0.0.1",
                            port,
                            settings.password,
                            "random",
                            settings.hard_timeout,
                            settings.soft_timeout,
                            games,
                            settings.unix_socket,
                        )
                    finally:
                        stop.set()
            finally:
                configure_logging("console", "warning", cache=False)


def builtin(name: str) -> ProcessLauncher:
    """A built-in bot as the opponent (piranhas-bot, with this interpreter)."""
    return ProcessLauncher([sys.executable, "-m", "bots.cli", "--bot", name])


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
    server: Server,
    bot: PlayerLauncher,
    opponent: str,
    games: int,
    log_dir: Path,
    *,
    first_number: int = 1,
    label: str = "",
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
            launchers: tuple[PlayerLauncher, PlayerLauncher] = (bot, builtin(opponent))
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
            except MatchError as error:
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
