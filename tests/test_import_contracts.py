"""The import contracts of pyproject.toml ([tool.importlinter], checked by `lint-imports` in
.ci/run) really catch a wrong arrow: a copy of the packages in which the game server imports
the match runner must fail them, naming the import."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers.process import REPO

pytest.importorskip("importlinter")  # in the dev extra

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGES: list[str] = PYPROJECT["tool"]["importlinter"]["root_packages"]


def lint_with(tmp_path: Path, module: str, line: str) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on a copy of the packages in which `module` (a path) ends with `line`."""
    for package in PACKAGES:
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("*.pyc"))
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    with (tmp_path / module).open("a", encoding="utf-8") as file:
        file.write(f"\n{line}\n")
    lint = Path(sys.executable).parent / "lint-imports"
    return subprocess.run(
        [str(lint), "--no-cache"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )


def test_the_game_server_importing_the_runner_breaks_a_contract(tmp_path: Path) -> None:
    completed = lint_with(tmp_path, "server/lobby.py", "import runner  # the wrong arrow")
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert "server.lobby -> runner" in completed.stdout, completed.stdout
    assert "the game server never imports its clients" in completed.stdout


def test_the_composition_roots_are_the_only_wiring_of_the_web_viewer() -> None:
    """No contract lets the game server (or anyone below the commands) reach the web viewer
    through an ignore_imports exception: cli/server.py wires it in, and nothing imports cli."""
    contracts = PYPROJECT["tool"]["importlinter"]["contracts"]
    assert len(contracts) >= 12
    assert all("ignore_imports" not in contract for contract in contracts)
    (on_top,) = [contract for contract in contracts if contract["id"] == "cli-on-top"]
    assert set(on_top["source_modules"]) == set(PACKAGES) - {"cli"}


def test_a_library_module_importing_a_command_breaks_a_contract(tmp_path: Path) -> None:
    completed = lint_with(tmp_path, "fleet/worker.py", "import cli.server  # used as a library")
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert "fleet.worker -> cli.server" in completed.stdout, completed.stdout


def test_only_the_command_line_may_import_the_ladder() -> None:
    """The ladder builds on every other package; a contract forbids each of them (but `cli`,
    its composition root) to import it. `lint-imports` in .ci/run enforces the contract."""
    contracts = PYPROJECT["tool"]["importlinter"]["contracts"]
    (on_top,) = [contract for contract in contracts if contract["id"] == "ladder-on-top"]
    assert on_top["forbidden_modules"] == ["ladder"]
    assert set(on_top["source_modules"]) == set(PACKAGES) - {"cli", "ladder"}
