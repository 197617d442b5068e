"""piranhas-check in Docker mode (marker `docker`): the upload as an image, every run a
container through sandbox.ContainerLauncher, as the contest runs it. Needs a daemon with the
bot base image or debian:bookworm-slim (`.ci/docker-env.sh start`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli.check import main
from tests.check.helpers import SHELL_BOT, failed, shell_variant, statuses
from tests.helpers.docker import labelled_containers, require_docker

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]


def run_docker_check(tmp_path: Path, bot: Path, *arguments: str) -> tuple[int, dict[str, Any]]:
    require_docker()
    report = tmp_path / "card.json"
    status = main([str(bot), "--mode", "docker", "--json", str(report), "--plain", *arguments])
    return status, json.loads(report.read_text())


def test_the_shell_bot_in_a_container_is_ready(tmp_path: Path) -> None:
    status, card = run_docker_check(
        tmp_path, SHELL_BOT, "--only", "1,2,5,6,7", "--cases", "one-segment,split-utf8,join"
    )
    assert status == 0, failed(card)
    assert card["isolation"].startswith("Docker container")
    found = statuses(card)
    assert found["run.args-long"] == found["run.network"] == found["stress.one-segment"] == "PASS"
    assert found["robust.cleanup"] == "PASS"
    memory = next(item for item in card["items"] if item["key"] == "resources.memory")
    assert memory["status"] == "PASS" and memory["figures"]["peak_mib"] < 1536
    assert not [c for c in labelled_containers() if c]  # nothing of the check left


def test_games_and_the_throttled_clock_in_containers(tmp_path: Path) -> None:
    status, card = run_docker_check(
        tmp_path,
        SHELL_BOT,
        "--only",
        "3,4",
        "--random-games",
        "2",
        "--match-games",
        "2",
        "--clock-games",
        "1",
        "--speed-factor",
        "2",
        "--opponent",
        "random",
    )
    assert status == 0, failed(card)
    contest = next(item for item in card["items"] if item["key"] == "clock.contest")
    assert contest["figures"]["moves"] >= 2
    assert "throttled to 50% of one CPU" in next(
        item["detail"] for item in card["items"] if item["key"] == "clock.calibration"
    )


def test_a_bot_ignoring_the_long_options_fails_them_in_a_container(tmp_path: Path) -> None:
    folder = shell_variant(tmp_path, "short-only")
    status, card = run_docker_check(tmp_path, folder, "--only", "2")
    assert status == 1
    assert failed(card) == {"run.args-long", "run.args-reordered", "run.args-equals"}


def test_crlf_start_file_does_not_start_in_a_container(tmp_path: Path) -> None:
    folder = shell_variant(tmp_path, "crlf")
    status, card = run_docker_check(tmp_path, folder, "--only", "1,2")
    assert status == 1
    assert {"upload.crlf", "run.args-short"} <= failed(card)
