"""Shared pieces of the Docker tests (tests/sandbox, tests/league): the docker CLI, the
containers our runs left, and the test bot folders and images of tests/sandbox/sandbox_bot.py.

Needs a Docker daemon ($DOCKER_HOST; `.ci/docker-env.sh start` gives a private one) that has
`debian:bookworm-slim` (the same script imports it); `require_docker` skips otherwise."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import trio

from sandbox.docker import docker_cli
from sandbox.images import build_base_image, build_bot_image, image_exists
from sandbox.launcher import BOT_BASE_IMAGE

REPO = Path(__file__).resolve().parents[2]
SANDBOX_BOT = REPO / "tests" / "sandbox" / "sandbox_bot.py"
MODES = ("play", "crash", "oom", "probe", "hang")


def cli(*arguments: str) -> str:
    """A docker command, synchronously (fixtures outside trio); its stdout."""
    done = subprocess.run(
        [docker_cli(), *arguments], capture_output=True, text=True, timeout=120, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"docker {arguments[0]}: {done.stderr.strip()}")
    return done.stdout.strip()


def labelled_containers() -> list[str]:
    """Every container (running or not) of any piranhas run."""
    return cli("ps", "--all", "--quiet", "--filter", "label=piranhas.role").split()


def require_docker() -> None:
    """Skip unless a daemon answers and the bot base image is there (built from
    debian:bookworm-slim when only that is)."""
    try:
        cli("version", "--format", "{{.Server.Version}}")
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as error:
        pytest.skip(f"no Docker daemon ({error}); .ci/docker-env.sh start gives one")
    if not trio.run(image_exists, BOT_BASE_IMAGE):
        if not trio.run(image_exists, "debian:bookworm-slim"):
            pytest.skip("no debian:bookworm-slim image: .ci/docker-env.sh start imports one")
        trio.run(build_base_image)


def bot_folder(root: Path, mode: str) -> Path:
    """A bot folder (start.sh and what it runs) in `root`/`mode` that plays as sandbox_bot.py's
    `mode`: the project's engine and protocol, tests/bots/fast_bot.py and sandbox_bot.py."""
    folder = root / mode
    no_caches = shutil.ignore_patterns("__pycache__")
    for package in ("engine", "protocol"):
        shutil.copytree(REPO / package, folder / package, ignore=no_caches)
    (folder / "tests" / "bots").mkdir(parents=True)
    shutil.copy(REPO / "tests" / "bots" / "fast_bot.py", folder / "tests" / "bots")
    shutil.copy(SANDBOX_BOT, folder)
    (folder / "start.sh").write_text(
        f'#!/bin/sh\nexec python3 /bot/sandbox_bot.py {mode} "$@"\n', encoding="utf-8"
    )
    return folder


def build_mode_images(root: Path) -> dict[str, str]:
    """One bot image per mode (tag by mode), built from `bot_folder`s under `root`."""
    tags = {}
    for mode in MODES:
        tags[mode] = f"piranhas-test/sandbox-bot:{mode}"
        trio.run(build_bot_image, bot_folder(root, mode), tags[mode])
    return tags
