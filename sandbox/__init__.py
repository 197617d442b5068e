"""Bots sandboxed like the contest: each in its own Docker container with one CPU, 1.5 GB
without swap, no network but the game server (docs/sandbox.md). The game server never imports
this package; the match core uses it through runner.processes' launcher interface."""

from sandbox.docker import DockerError, docker_available
from sandbox.launcher import (
    BOT_BASE_IMAGE,
    ContainerLauncher,
    ContainerPlayer,
    CpuRotation,
    Limits,
    sweep,
)

__all__ = [
    "BOT_BASE_IMAGE",
    "ContainerLauncher",
    "ContainerPlayer",
    "CpuRotation",
    "DockerError",
    "Limits",
    "docker_available",
    "sweep",
]
