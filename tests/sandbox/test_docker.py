"""Bots in containers, for real: games through runner.game.play_game against the in-process
server (TCP for the admin, its Unix socket for the bots' relays) with bots built from a folder
by sandbox.images. A normal bot plays to the end; one that eats memory is OOM-killed and loses
with that reason; one that crashes loses with its exit code; one that looks around sees only
`lo` and no route. No container is left behind.

Needs a Docker daemon ($DOCKER_HOST; `.ci/docker-env.sh start` gives a private one) that has
`debian:bookworm-slim` (the same script imports it); skipped otherwise. Images are built once
per session (the base's layers stay cached in the daemon)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import pytest
import trio

from client import ClientSession
from launching import MatchError
from runner.game import GameSpec, Observation, ServerAddress, log_path, play_game
from sandbox import ContainerLauncher, DockerError, Limits, sweep
from sandbox.images import build_bot_image
from server.app import serve
from server.config import Settings
from server.exits import find_exception
from tests.helpers.docker import build_mode_images, cli, labelled_containers, require_docker

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "sandbox-test"
NAMES = ("one", "two")
GAME_LIMIT = 120.0
RUN_ID = f"pytest{secrets.token_hex(3)}"
TEST_MEMORY_MIB = 160  # the OOM bot reaches it in a fraction of a second


@pytest.fixture(scope="session")
def images(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """One bot image per mode of tests/sandbox/sandbox_bot.py (tag by mode)."""
    require_docker()
    tags = build_mode_images(tmp_path_factory.mktemp("bots"))
    yield tags
    for tag in tags.values():
        cli("rmi", "--force", tag)


@asynccontextmanager
async def game_server(
    socket_dir: Path, hard_timeout: float
) -> AsyncIterator[tuple[ServerAddress, Path]]:
    """The game server in this process, with its Unix socket in `socket_dir` (which the
    relays mount: nothing else in it)."""
    socket_dir.mkdir()
    unix_socket = socket_dir / "server.sock"
    settings = Settings(
        port=0,
        password=PASSWORD,
        unix_socket=unix_socket,
        soft_timeout=hard_timeout,
        hard_timeout=hard_timeout,
    )
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(partial(serve, settings, stop=stop, handle_signals=False))
        yield ServerAddress("127.0.0.1", port, PASSWORD, "test", settings.hard_timeout), unix_socket
        stop.set()


async def play(
    tmp_path: Path,
    images: tuple[str, str],
    limits: Limits | None = None,
    hard_timeout: float = 10.0,
) -> Observation | MatchError:
    """One game, player `one` moving first; the observation, or the MatchError that ended it.
    Afterwards no container of the run is left."""
    outcome: Observation | MatchError
    with trio.fail_after(GAME_LIMIT + 60):
        async with game_server(tmp_path / "sock", hard_timeout) as (server, unix_socket):
            launchers = (
                ContainerLauncher(images[0], unix_socket, limits=limits, run_id=RUN_ID),
                ContainerLauncher(images[1], unix_socket, limits=limits, run_id=RUN_ID),
            )
            stream = await trio.open_tcp_stream(server.host, server.port)
            admin = ClientSession(stream)
            await admin.authenticate(PASSWORD)
            spec = GameSpec(1, 0, NAMES, (True, True), None)
            try:
                outcome = await play_game(spec, launchers, admin, server, tmp_path, GAME_LIMIT)
            except BaseException as error:
                match_error = find_exception(error, MatchError)
                if match_error is None:
                    raise
                outcome = match_error
            await admin.aclose()
    assert labelled_containers() == []
    return outcome


def bot_log(tmp_path: Path, name: str) -> str:
    return log_path(tmp_path, name, 1).read_text(encoding="utf-8", errors="replace")


async def test_a_normal_bot_plays_a_game_to_the_end(tmp_path: Path, images: dict[str, str]) -> None:
    outcome = await play(tmp_path, (images["play"], images["play"]))
    assert isinstance(outcome, Observation), outcome
    assert outcome.summary.result.reason == "" or "verlassen" not in outcome.summary.result.reason
    assert outcome.summary.turn is not None and outcome.summary.turn > 0
    assert outcome.summary.notes == []  # both exited 0 on their own
    for name in NAMES:
        assert "game over after" in bot_log(tmp_path, name)


async def test_a_bot_past_its_memory_limit_is_killed_and_loses_with_that_reason(
    tmp_path: Path, images: dict[str, str]
) -> None:
    limits = Limits(memory_mib=TEST_MEMORY_MIB)
    outcome = await play(tmp_path, (images["oom"], images["play"]), limits)
    killed = f"status 137, killed: out of memory ({TEST_MEMORY_MIB} MiB)"
    # Which comes first is a race: the server's result for the closed connection (a loss,
    # the exit in the notes) or the container's exit (an error naming it).
    if isinstance(outcome, MatchError):
        message = str(outcome)
        assert f"one ({killed})" in message
    else:
        assert outcome.summary.notes == [f"one crashed (exit {killed})"]
        message = outcome.summary.result.reason
        assert outcome.summary.result.winner is not None
        assert outcome.summary.result.winner.name == "TWO"
        assert "one hat das Spiel verlassen" in message  # the server scored it as a loss
    assert "oom: game started, allocating" in bot_log(tmp_path, "one")


async def test_a_crashing_bot_loses_with_its_exit_code(
    tmp_path: Path, images: dict[str, str]
) -> None:
    outcome = await play(tmp_path, (images["play"], images["crash"]))
    # A race as with the OOM bot: the server's result first (a loss), or the exit (an error).
    if isinstance(outcome, MatchError):
        assert "two (status 3, exit 3)" in str(outcome)
    else:
        assert outcome.summary.notes == ["two crashed (exit status 3, exit 3)"]
        assert "two hat das Spiel verlassen" in outcome.summary.result.reason
    assert "crashing on purpose" in bot_log(tmp_path, "two")


async def test_a_hanging_bot_loses_on_time_and_is_stopped(
    tmp_path: Path, images: dict[str, str]
) -> None:
    outcome = await play(tmp_path, (images["hang"], images["play"]), hard_timeout=2.0)
    assert isinstance(outcome, Observation), outcome
    result = outcome.summary.result
    assert result.winner is not None and result.winner.name == "TWO"
    assert result.reason.startswith("one hat innerhalb von") and "keinen Zug" in result.reason
    assert outcome.summary.notes == ["one still running after 5 s: killed"]


async def test_a_bot_sees_no_network_but_the_game_server(
    tmp_path: Path, images: dict[str, str]
) -> None:
    outcome = await play(tmp_path, (images["probe"], images["probe"]))
    assert isinstance(outcome, Observation), outcome  # and still played through the relay
    for name in NAMES:
        log = bot_log(tmp_path, name)
        assert "probe: interfaces=lo\n" in log
        assert "probe: routes=0 default_routes=0" in log
        assert "probe: ip -o route -> ''" in log
        assert "inet " in log and "127.0.0.1/8" in log
        assert "eth0" not in log
        assert "probe: gameserver=127.0.0.1" in log
        assert "probe: uid=10002" in log  # the unprivileged user of the bot image


async def test_sweep_removes_the_leftovers_of_a_dead_run(images: dict[str, str]) -> None:
    dead_run = f"{RUN_ID}dead"
    for _ in range(2):
        cli(
            "run", "--detach", "--label", "piranhas.role=bot", "--label",
            f"piranhas.run={dead_run}", "--network", "none", "--entrypoint", "sleep",
            images["play"], "300",
        )  # fmt: skip
    other = cli(
        "run", "--detach", "--label", "piranhas.role=bot", "--label", "piranhas.run=other",
        "--network", "none", "--entrypoint", "sleep", images["play"], "300",
    )  # fmt: skip
    try:
        assert await sweep(f"piranhas.run={dead_run}") == 2
        assert labelled_containers() == [other[:12]]
        assert await sweep(f"piranhas.run={dead_run}") == 0
    finally:
        cli("rm", "--force", other)
    assert labelled_containers() == []


def piranhas_match(cwd: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """`python -m cli.match ARGUMENTS` in `cwd`, this checkout's code."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "cli.match", *arguments],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_piranhas_match_plays_docker_players(tmp_path: Path, images: dict[str, str]) -> None:
    run = piranhas_match(
        tmp_path,
        "--player1", f"docker:{images['play']}", "--player2", f"docker:{images['play']}",
        "--games", "2", "--concurrency", "1", "--results", "results.jsonl",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = (tmp_path / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["game"] for line in lines] == [1, 2]
    assert "game over after" in (tmp_path / "log" / "player1_game2.log").read_text()
    assert labelled_containers() == []


def test_piranhas_match_reports_a_crashed_container_player(
    tmp_path: Path, images: dict[str, str]
) -> None:
    run = piranhas_match(
        tmp_path,
        "--player1", f"docker:{images['crash']}", "--player2", "docker:" + images["play"],
        "--games", "1",
    )  # fmt: skip
    # Scored as a loss when the server saw the closed connection first, else an error.
    if run.returncode == 0:
        assert "player1 lost irregularly: CRASH 1" in run.stdout
    else:
        assert run.returncode == 2
        assert "player1 (status 3, exit 3)" in run.stderr
    assert labelled_containers() == []


async def test_a_missing_image_is_a_clear_error_and_leaves_nothing_behind(
    tmp_path: Path, images: dict[str, str]
) -> None:
    outcome = await play(tmp_path, ("piranhas-test/no-such-bot:1", images["play"]))
    assert isinstance(outcome, MatchError)
    assert "cannot start one in a container (piranhas-test/no-such-bot:1)" in str(outcome)
    assert "registry" not in str(outcome)  # no pull was tried


async def test_a_bot_folder_needs_a_start_script_and_the_base(tmp_path: Path) -> None:
    with pytest.raises(DockerError, match=r"no start\.sh"):
        await build_bot_image(tmp_path, "piranhas-test/never:1")
    (tmp_path / "start.sh").write_text("#!/bin/sh\n", encoding="utf-8")
    with pytest.raises(DockerError, match="no base image piranhas-test/no-base:1"):
        await build_bot_image(tmp_path, "piranhas-test/never:1", base="piranhas-test/no-base:1")
