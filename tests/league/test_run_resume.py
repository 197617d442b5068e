"""Resuming: the real `piranhas-league run` killed at random points (SIGKILL mostly, SIGTERM
once; seeded, so a failure replays with LEAGUE_KILL_SEED) and started again until the league
is complete. Every scheduled game ends with exactly one result, a recorded result is never
changed by a later run, and no bot process outlives the league process that started it.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import trio

from tests.helpers.process import BIN, TEST_BOTS, environment
from tests.league.test_run import league_file

FAST_BOT = [sys.executable, str(TEST_BOTS / "fast_bot.py")]
KILL_SEED = int(os.environ.get("LEAGUE_KILL_SEED", "20261130"))
KILLS = 4


def processes_with(marker: str) -> list[int]:
    """Process ids whose environment holds `marker` (the league's bots inherit it)."""
    found = []
    needle = marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue  # gone, or not ours
    return found


def results(database: Path) -> dict[tuple[int, int], tuple[object, ...]]:
    """The stored results by (match, game)."""
    if not database.exists():
        return {}
    with sqlite3.connect(database) as connection:
        rows = connection.execute("SELECT * FROM results").fetchall()
    return {(row[0], row[1]): tuple(row) for row in rows}


async def wait_until_gone(marker: str, seconds: float = 30.0) -> None:
    """Poll until no process carries `marker`; fail with the survivors' command lines."""
    with trio.move_on_after(seconds):
        while processes_with(marker):
            await trio.sleep(0.05)
    survivors = processes_with(marker)
    lines = [Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ") for pid in survivors]
    assert not survivors, f"left behind: {lines}"


def running_games(database: Path) -> int:
    """Games the current run has started (a run gives back the others' when it starts)."""
    if not database.exists():
        return 0
    try:
        with sqlite3.connect(database, timeout=5) as connection:
            row = connection.execute("SELECT COUNT(*) FROM games WHERE status = 'running'")
            return int(row.fetchone()[0])
    except sqlite3.OperationalError:  # being created, or locked by the league for a moment
        return 0


async def playing(process: trio.Process, log: Path, database: Path, *, last: bool) -> None:
    """Until the run plays: its first line printed (by then its signal handling is in place, and
    a loaded machine can take seconds to get there) and a game of it running; before the last
    kill also a result recorded (or the kills would test nothing). Or until it has ended."""
    with trio.fail_after(120):  # a guard against a hang only
        while process.returncode is None and process.poll() is None:
            started = b"games played" in log.read_bytes()
            if started and running_games(database) and (not last or results(database)):
                return
            await trio.sleep(0.05)


async def test_killed_at_random_points_the_league_resumes_to_exactly_one_result_per_game(
    tmp_path: Path,
) -> None:
    # 20 ms a move: a game lasts about a second, so the league (24 games) outlasts the first
    # kills even on an idle machine (without it, it once finished before the first signal).
    # Each kill comes at a random moment of a run's play, not of its start-up: a loaded
    # machine once spent the whole random delay importing, and the SIGTERM came before the
    # league could catch it (-15, not 130).
    teams: dict[str, list[str] | str] = {
        f"bot{index}": [*FAST_BOT, "--seed", str(index), "--delay", "0.02"] for index in range(4)
    }
    path = league_file(tmp_path, teams, games=4)
    database = tmp_path / "league.sqlite"
    marker = f"LEAGUE_TEST_MARKER={uuid.uuid4()}"
    env = environment()
    env["LEAGUE_TEST_MARKER"] = marker.partition("=")[2]
    command = [str(BIN / "piranhas-league"), "run", str(path)]
    chooser = random.Random(KILL_SEED)
    seen: dict[tuple[int, int], tuple[object, ...]] = {}
    for kill in range(KILLS):
        log = (tmp_path / f"run{kill}.log").open("wb")
        with log:
            process = await trio.lowlevel.open_process(
                command, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT
            )
            await playing(process, tmp_path / f"run{kill}.log", database, last=kill == KILLS - 1)
            await trio.sleep(chooser.uniform(0.0, 1.5))
            signum = signal.SIGTERM if kill == 1 else signal.SIGKILL
            process.send_signal(signum)
            with trio.fail_after(30):
                status = await process.wait()
        if status == 0:  # finished before the signal came: nothing left to interrupt
            break
        expected = -signal.SIGKILL if signum is signal.SIGKILL else 130
        assert status == expected, (tmp_path / f"run{kill}.log").read_text()
        await wait_until_gone(marker)
        now = results(database)
        # A result, once recorded, is never changed or lost by a later run.
        assert {key: now[key] for key in seen} == seen
        seen = now
    assert seen, "no game was recorded before the last kill: the kills tested nothing"

    with trio.fail_after(120):
        finished = await trio.run_process(
            command, cwd=tmp_path, env=env, capture_stdout=True, capture_stderr=True, check=False
        )
    assert finished.returncode == 0, finished.stderr.decode()
    await wait_until_gone(marker)

    now = results(database)
    assert {key: now[key] for key in seen} == seen
    with sqlite3.connect(database) as connection:
        games = connection.execute(
            "SELECT match_id, game_number, status, attempt FROM games"
        ).fetchall()
        attempts = connection.execute(
            "SELECT match_id, game_number, attempt, outcome FROM attempts"
        ).fetchall()
    assert len(games) == 6 * 4
    assert all(status == "finished" for _, _, status, _ in games)
    assert set(now) == {(match, number) for match, number, _, _ in games}
    finished_attempts: dict[tuple[int, int], list[int]] = {}
    for match, number, attempt, outcome in attempts:
        if outcome == "finished":
            finished_attempts.setdefault((match, number), []).append(attempt)
        else:
            assert outcome == "abandoned", (match, number, attempt, outcome)
    # Exactly one attempt of every game finished, and it is the one whose result is stored.
    assert {key: [row[2]] for key, row in now.items()} == finished_attempts
    # The kills hit running games (their attempts were given back at the next start).
    assert any(outcome == "abandoned" for *_, outcome in attempts)
