"""The container launcher's parts that need no Docker daemon: the flags every bot gets, the
core rotation, the exit reasons, and how piranhas-match picks a launcher for `docker:IMAGE`."""

from __future__ import annotations

from pathlib import Path

import pytest

from launching import MatchError, exit_description
from runner.launchers import launcher_for
from runner.options import parse_options
from runner.processes import ProcessLauncher
from sandbox import ContainerLauncher, CpuRotation, Limits
from sandbox.launcher import exit_reason

SOCKET = Path("/run/piranhas-test/server.sock")


def flag_values(flags: list[str], flag: str) -> list[str]:
    return [flags[i + 1] for i, value in enumerate(flags) if value == flag]


def test_a_bot_gets_the_contest_limits_and_no_way_out() -> None:
    launcher = ContainerLauncher(
        "bot:1", SOCKET, run_id="r1", match_id="m7", cpus=CpuRotation([0, 1])
    )
    flags = launcher.bot_flags("relay-id", "3")
    assert flag_values(flags, "--network") == ["container:relay-id"]
    assert flag_values(flags, "--cpuset-cpus") == ["0"]
    assert flag_values(flags, "--memory") == ["1536m"]
    assert flag_values(flags, "--memory-swap") == ["1536m"]  # no swap
    assert flag_values(flags, "--pids-limit") == ["256"]
    assert flag_values(flags, "--cap-drop") == ["ALL"]
    assert flag_values(flags, "--security-opt") == ["no-new-privileges"]
    assert {"--read-only", "--init"} <= set(flags)
    assert flag_values(flags, "--pull") == ["never"]  # never a registry
    assert flag_values(flags, "--tmpfs")[0].startswith("/tmp:")
    assert sorted(flag_values(flags, "--label")) == [
        "piranhas.game=3",
        "piranhas.match=m7",
        "piranhas.role=bot",
        "piranhas.run=r1",
    ]
    assert "--add-host" not in flags  # refused with --network container:


def test_cores_rotate_and_too_few_cores_fall_back_to_a_cpu_quota() -> None:
    rotation = CpuRotation([0, 1])
    assert [rotation.take(1) for _ in range(3)] == ["0", "1", "0"]
    assert rotation.take(2) == "1,0"
    assert rotation.take(3) is None
    wide = ContainerLauncher("bot:1", SOCKET, limits=Limits(cpus=3), cpus=CpuRotation([0, 1]))
    flags = wide.bot_flags("relay", "1")
    assert flag_values(flags, "--cpus") == ["3"] and "--cpuset-cpus" not in flags
    unpinned = ContainerLauncher("bot:1", SOCKET, limits=Limits(pin_cpus=False, memory_mib=512))
    flags = unpinned.bot_flags("relay", "1")
    assert flag_values(flags, "--cpus") == ["1"]
    assert flag_values(flags, "--memory-swap") == ["512m"]


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="memory_mib"):
        Limits(memory_mib=0)
    with pytest.raises(ValueError, match="pids"):
        Limits(pids=-1)


def test_exit_reasons() -> None:
    limits = Limits(memory_mib=1536)
    assert exit_reason(137, True, limits, False) == "killed: out of memory (1536 MiB)"
    assert exit_reason(137, False, limits, True) == "killed: still running after the game"
    assert exit_reason(137, False, limits, False) == "killed by SIGKILL"
    assert exit_reason(3, False, limits, False) == "exit 3"
    assert exit_reason(0, False, limits, False) is None


def test_the_report_adds_a_launchers_reason_to_the_status() -> None:
    class Plain:
        returncode = 3

    class Contained:
        returncode = 137
        exit_reason = "killed: out of memory (1536 MiB)"

    assert exit_description(Plain()) == "status 3"  # type: ignore[arg-type]
    described = exit_description(Contained())  # type: ignore[arg-type]
    assert described == "status 137, killed: out of memory (1536 MiB)"


def test_docker_players_in_piranhas_match() -> None:
    options = parse_options(["--player1", "docker:mybot:1.0", "--player2", "docker:other"])
    assert options.commands == (["docker:mybot:1.0"], ["docker:other"])
    launcher = launcher_for(options.commands[0], SOCKET)
    assert isinstance(launcher, ContainerLauncher)
    assert launcher.image == "mybot:1.0"
    assert launcher.server_socket == SOCKET
    with pytest.raises(MatchError, match="in-process server"):
        launcher_for(options.commands[0], None)
    assert isinstance(launcher_for(["python3", "bot.py"], None), ProcessLauncher)
    with pytest.raises(MatchError, match="needs an image"):
        parse_options(["--player1", "docker:", "--player2", "docker:x"])
