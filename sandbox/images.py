"""Bot images: the base image (debootstrapped Debian + python3) and images built from a folder
with a `start.sh` (docs/sandbox.md). No registry is needed: the base's `debian:bookworm-slim`
may come from `docker import` of a debootstrapped rootfs (.ci/docker-env.sh)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from sandbox.docker import DockerError, docker
from sandbox.launcher import BOT_BASE_IMAGE

DOCKERFILES = Path(__file__).with_name("dockerfiles")
BOT_BASE_DOCKERFILE = DOCKERFILES / "bot-base.Dockerfile"
BOT_DOCKERFILE = DOCKERFILES / "bot.Dockerfile"
BUILD_TIMEOUT = 900.0


def _build_env() -> dict[str, str]:
    # The classic builder: Debian's daemon 20.10 has no buildx; it also reads a Dockerfile
    # from outside the context.
    return {**os.environ, "DOCKER_BUILDKIT": "0"}


async def image_exists(tag: str, cli: str | None = None) -> bool:
    """Whether the daemon has an image `tag`."""
    try:
        await docker("image", "inspect", "--format", "{{.Id}}", tag, cli=cli)
    except DockerError:
        return False
    return True


async def build_base_image(
    tag: str = BOT_BASE_IMAGE, base_image: str = "debian:bookworm-slim", cli: str | None = None
) -> str:
    """Build the bot base image (python3, python3-lxml, iproute2, user `bot`) from
    `base_image`; the image id. Raises DockerError."""
    with tempfile.TemporaryDirectory() as empty_context:
        return await _build(
            ["--file", str(BOT_BASE_DOCKERFILE), "--build-arg", f"BASE_IMAGE={base_image}"],
            tag,
            Path(empty_context),
            cli,
        )


async def build_bot_image(
    folder: Path, tag: str, base: str = BOT_BASE_IMAGE, cli: str | None = None
) -> str:
    """Build a bot image from `folder`, which must hold a `start.sh`: the folder becomes
    /bot and `start.sh` the entrypoint, run as user `bot` on `base`. The image id. Raises
    DockerError (also for a folder without start.sh)."""
    if not (folder / "start.sh").is_file():
        raise DockerError(f"{folder} has no start.sh: a bot folder starts with start.sh")
    # The classic builder would try a registry for a missing base.
    if not await image_exists(base, cli):
        raise DockerError(f"no base image {base}: build it with build_base_image() first")
    return await _build(
        ["--file", str(BOT_DOCKERFILE), "--build-arg", f"BOT_BASE={base}"], tag, folder, cli
    )


async def _build(arguments: list[str], tag: str, context: Path, cli: str | None) -> str:
    return await docker(
        "build",
        "--quiet",
        "--tag",
        tag,
        *arguments,
        str(context),
        cli=cli,
        timeout=BUILD_TIMEOUT,
        env=_build_env(),
    )
