"""Which launcher starts a player: a command (a local process), or `docker:IMAGE` (the image
in a sandboxed container, sandbox.ContainerLauncher; docs/sandbox.md)."""

from __future__ import annotations

from pathlib import Path

from launching import MatchError, PlayerLauncher
from runner.processes import ProcessLauncher

DOCKER_PREFIX = "docker:"


def docker_image(command: list[str]) -> str | None:
    """The image of a `docker:IMAGE` player, else None."""
    if len(command) == 1 and command[0].startswith(DOCKER_PREFIX):
        return command[0].removeprefix(DOCKER_PREFIX)
    return None


def launcher_for(command: list[str], server_socket: Path | None) -> PlayerLauncher:
    """The launcher of a player command; a container player needs the in-process server's
    Unix socket."""
    image = docker_image(command)
    if image is None:
        return ProcessLauncher(command)
    if server_socket is None:
        raise MatchError(f"{command[0]}: container players need the in-process server (no --port)")
    from sandbox import ContainerLauncher  # only with Docker players

    return ContainerLauncher(image, server_socket)
