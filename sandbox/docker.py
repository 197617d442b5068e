"""The Docker command line, from trio: simplest and fast enough (about half a second per
`docker run` here, docs/tournament.md §4); the `docker` SDK is synchronous and aiodocker is
asyncio-only."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence

import trio

# Debian's client matches Debian's daemon (20.10) and its classic builder; a newer client
# earlier on PATH may insist on buildx for `docker build`.
DEBIAN_DOCKER = "/usr/bin/docker"
COMMAND_TIMEOUT = 120.0  # any single docker command but a build


class DockerError(Exception):
    """A docker command failed; the message has its output."""


def docker_cli() -> str:
    """The docker client to use: $PIRANHAS_DOCKER, else Debian's, else `docker` on PATH."""
    configured = os.environ.get("PIRANHAS_DOCKER")
    if configured:
        return configured
    if os.access(DEBIAN_DOCKER, os.X_OK):
        return DEBIAN_DOCKER
    return shutil.which("docker") or "docker"


async def docker(
    *arguments: str,
    cli: str | None = None,
    timeout: float = COMMAND_TIMEOUT,
    env: dict[str, str] | None = None,
) -> str:
    """Run `docker ARGUMENTS`; its standard output, stripped. Raises DockerError when it
    fails, cannot be started or takes longer than `timeout` s."""
    argv = [cli or docker_cli(), *arguments]
    try:
        with trio.fail_after(timeout):
            done = await trio.run_process(
                argv, capture_stdout=True, capture_stderr=True, check=False, env=env
            )
    except OSError as error:
        raise DockerError(f"cannot run {argv[0]}: {error}") from None
    except trio.TooSlowError:
        raise DockerError(f"docker {arguments[0]} took longer than {timeout:g} s") from None
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip() or f"status {done.returncode}"
        raise DockerError(f"docker {arguments[0]} failed: {message}")
    return done.stdout.decode(errors="replace").strip()


async def docker_available(cli: str | None = None) -> bool:
    """Whether a Docker daemon answers (at $DOCKER_HOST or the default socket)."""
    try:
        await docker("version", "--format", "{{.Server.Version}}", cli=cli, timeout=10)
    except DockerError:
        return False
    return True


async def remove_containers(ids: Sequence[str], cli: str | None = None) -> None:
    """Remove containers, running or not; ones already gone are no error."""
    if not ids:
        return
    try:
        await docker("rm", "--force", *ids, cli=cli)
    except DockerError as error:
        if "No such container" not in str(error):
            raise
