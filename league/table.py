"""A league's table: the game server in this process (runner.inprocess) with the league's
timeouts, the teams' launchers (league.teams) and the schedule; `open_table` yields it, and no
bot outlives it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from launching import PlayerLauncher
from league.config import LeagueConfig
from league.schedule import Match, build_schedule
from league.teams import (
    check_mode,
    container_label,
    container_launchers,
    display_names,
    process_launchers,
)
from runner.game import GAME_MARGIN, ServerAddress
from runner.inprocess import in_process_server
from runner.reaper import BotReaper
from runner.timing import ServerGames

__all__ = ["LeagueTable", "open_table"]


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
    check_mode(config, mode, programs=False)
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
