"""The teams of a league as players: each team's launcher in `process` mode (its command, or a
built-in bot) or `docker` mode (images and folders in sandboxed containers, commands as local
processes), every local bot under the table's `runner.reaper.BotReaper`; the names they play
under; the error that ends `piranhas-league run`."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

from launching import PlayerLauncher
from league.config import BotKind, LeagueConfig, TeamSpec, check_command
from runner.processes import ProcessLauncher
from runner.reaper import BotReaper, ReapedLauncher

__all__ = [
    "BUILTIN",
    "MODES",
    "LeagueRunError",
    "bot_command",
    "check_mode",
    "container_label",
    "container_launchers",
    "default_mode",
    "display_names",
    "process_launchers",
]

BUILTIN = "builtin:"
MODES = ("process", "docker")


class LeagueRunError(Exception):
    """Ends `piranhas-league run` with an error; the message says what and where."""


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


def default_mode(config: LeagueConfig) -> str:
    """The mode a league is played in unless told: `docker` as soon as some team's bot runs in
    a container (an image or a folder), else `process`."""
    commands_only = all(team.bot.kind is BotKind.COMMAND for team in config.teams)
    return "process" if commands_only else "docker"


def check_mode(config: LeagueConfig, mode: str, *, programs: bool = True) -> None:
    """Raise LeagueRunError if the league's teams cannot be started in `mode` (before any
    game is claimed); with `programs`, LeagueFileError when a command's program is missing.
    A table checks without `programs`: on a distributed worker a program missing on this
    host fails that team's matches only (its bot cannot start), not every match."""
    if mode not in MODES:
        raise LeagueRunError(f"unknown mode {mode!r} (known: {', '.join(MODES)})")
    # The container launcher (bots in containers, a relay so they see only the game server)
    # comes from the sandbox package.
    if mode == "docker" and importlib.util.find_spec("sandbox") is None:
        raise LeagueRunError("docker mode needs the sandbox package")
    for team in config.teams:
        if mode == "process" or team.bot.kind is BotKind.COMMAND:
            command = bot_command(team)
            if programs:
                check_command(config, team, command)


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
    check_mode(config, "process", programs=False)
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
