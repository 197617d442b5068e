"""Fixtures of the distributed league tests (Redis and PostgreSQL come from tests/conftest.py):
league files with deterministic test bots, and worker processes to kill, stop and signal.

The tests are marked `distributed` and deselected unless asked for (`pytest -m distributed`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fleet import coordinator
from fleet.stores import open_store
from league.config import load_league
from league.store import LeagueStore

ROOT = Path(__file__).resolve().parents[2]
# The deploy example bot (seeded: deterministic games; --delay makes a match last).
PACED_BOT = ROOT / "deploy" / "bots" / "seeded_bot.py"


def league_text(
    name: str = "Distributed", teams: int = 3, delay: float = 0.0, broken: str | None = None
) -> str:
    """A round robin of `teams` paced test bots (seeded: deterministic games), two games per
    match. `broken` names a team whose bot cannot start (every match of it fails)."""
    lines = [f'name = "{name}"', "games_per_match = 2", "seed = 11", ""]
    for index in range(teams):
        team = f"t{index + 1}"
        command = [sys.executable, str(PACED_BOT), "--seed", str(index + 1), "--delay", str(delay)]
        if team == broken:
            command = [str(ROOT / "no-such-bot")]
        quoted = ", ".join(f'"{part}"' for part in command)
        lines += ["[[teams]]", f'id = "{team}"', f"command = [{quoted}]", ""]
    return "\n".join(lines)


Outcomes = list[tuple[int, int, tuple[int, int], tuple[int, int], str | None, bool, str]]


def outcomes(store: LeagueStore) -> Outcomes:
    """Every recorded game's outcome without its record (dates and times differ)."""
    return [
        (
            game.game.match_id,
            game.game.number,
            game.outcome.siegpunkte,
            game.outcome.schwarm,
            game.outcome.winner,
            game.outcome.regular,
            game.outcome.reason,
        )
        for game in store.finished_games()
    ]


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Outcomes, dict[str, object]]:
    """The league of `league_text()` played on one machine (SQLite, no queue, no delay):
    outcomes and table."""
    folder = tmp_path_factory.mktemp("reference")
    league = folder / "league.toml"
    league.write_text(league_text(delay=0.0))
    config = load_league(league)
    coordinator.play_local(config, str(folder / "league.sqlite"), folder / "logs")
    store, _ = open_store(str(folder / "league.sqlite"))
    try:
        return outcomes(store), coordinator.standings(config, store).to_dict()
    finally:
        store.close()


@dataclass
class WorkerProcess:
    """A `piranhas-league worker` process (own process group: its bots die with the group)."""

    name: str
    process: subprocess.Popen[bytes]
    stderr: Path

    @property
    def pid(self) -> int:
        """Its process id."""
        return self.process.pid

    def output(self) -> str:
        """What it wrote to stderr so far."""
        return self.stderr.read_text(errors="replace")

    def wait_for(self, text: str, timeout: float = 30.0) -> None:
        """Wait until its stderr shows `text`."""
        deadline = time.monotonic() + timeout
        while text not in self.output():
            if self.process.poll() is not None and text not in self.output():
                raise AssertionError(f"{self.name} exited: {self.output()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name} never said {text!r}: {self.output()}")
            time.sleep(0.05)

    def signal(self, signum: signal.Signals) -> None:
        """Send `signum` to the worker process itself."""
        os.kill(self.pid, signum)

    def kill_group(self) -> None:
        """SIGKILL the worker and every process it started (its bots)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)
        self.process.wait()


StartWorker = Callable[..., WorkerProcess]


@pytest.fixture
def start_worker(tmp_path: Path) -> Iterator[StartWorker]:
    """start_worker(league_file, database, redis_url, name) -> a ready worker; every worker a
    test started is killed (with its bots) at its end, by process group id."""
    started: list[WorkerProcess] = []

    def start(league: Path, database: str, redis_url: str, name: str) -> WorkerProcess:
        stderr = tmp_path / f"{name}.stderr"
        argv = [
            sys.executable,
            "-m",
            "cli.league",
            "worker",
            str(league),
            "--database",
            database,
            "--redis",
            redis_url,
            "--name",
            name,
            "--log-dir",
            str(tmp_path / "{name}-logs"),  # the worker fills in its name
            "--poll",
            "0.2",
        ]
        with stderr.open("wb") as err:
            process = subprocess.Popen(
                argv,
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=err,
                start_new_session=True,
            )
        worker = WorkerProcess(name, process, stderr)
        started.append(worker)
        worker.wait_for("ready")
        return worker

    yield start
    for worker in started:
        worker.kill_group()
