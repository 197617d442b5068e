"""The import contracts of pyproject.toml ([tool.importlinter], checked by `lint-imports` in
.ci/run) really catch a wrong arrow: a copy of the packages in which the game server imports
the match runner must fail them, naming the import."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.process import REPO

pytest.importorskip("importlinter")  # in the dev extra

PACKAGES = ["engine", "protocol", "server", "client", "bots", "runner"]


def test_the_game_server_importing_the_runner_breaks_a_contract(tmp_path: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("*.pyc"))
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    with (tmp_path / "server" / "lobby.py").open("a", encoding="utf-8") as lobby:
        lobby.write("\nimport runner  # the wrong arrow\n")
    lint = Path(sys.executable).parent / "lint-imports"
    completed = subprocess.run(
        [str(lint), "--no-cache"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert "server.lobby -> runner" in completed.stdout, completed.stdout
    assert "the game server never imports its clients" in completed.stdout
