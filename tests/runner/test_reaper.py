"""No bot left behind, for every command that starts bots (runner.reaper): real bots that start
children the bot's process group does not hold (each in a group of its own, or in a session of
its own after setsid), played through `piranhas-match` and `piranhas-league run` as commands.
After each run, none of the children is alive; also not after the command was killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from runner.processes import ProcessLauncher
from runner.reaper import BotReaper, ReapedLauncher
from tests.helpers.process import TEST_BOTS, environment

pytestmark = pytest.mark.timeout(120)

SPAWNING_BOT = [sys.executable, str(TEST_BOTS / "spawning_bot.py")]
FAST_BOT = [sys.executable, str(TEST_BOTS / "fast_bot.py")]


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie is dead: it only waits to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def children_of_the_bots(pid_dir: Path) -> list[int]:
    return [int(pid) for path in pid_dir.glob("*.pids") for pid in path.read_text().split()]


def kill_leftovers(pids: list[int]) -> None:
    """So that a failing test leaves nothing behind either."""
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


async def command(cwd: Path, *argv: str, limit: float = 90) -> subprocess.CompletedProcess[bytes]:
    with trio.fail_after(limit):
        return await trio.run_process(
            [sys.executable, "-m", *argv],
            cwd=cwd,
            env=environment(),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )


@pytest.mark.parametrize(("how", "count"), [("--own-group", 50), ("--setsid", 10)])
async def test_piranhas_match_leaves_no_child_of_a_bot_alive(
    tmp_path: Path, how: str, count: int
) -> None:
    pid_dir = tmp_path / "pids"
    bot = [*SPAWNING_BOT, "--children", str(count), how, "--pid-dir", str(pid_dir)]
    completed = await command(
        tmp_path,
        "cli.match",
        *("--player1", " ".join(bot), "--player2", " ".join(FAST_BOT)),
        *("--games", "3", "--concurrency", "1"),
    )
    pids = children_of_the_bots(pid_dir)
    try:
        assert completed.returncode == 0, completed.stderr.decode()
        assert len(pids) == 3 * count  # every game's bot started its children
        assert [pid for pid in pids if alive(pid)] == []
    finally:
        kill_leftovers(pids)


async def test_piranhas_league_run_leaves_no_child_of_a_bot_alive(tmp_path: Path) -> None:
    pid_dir = tmp_path / "pids"
    teams = {
        "a": [*SPAWNING_BOT, "--children", "5", "--setsid", "--pid-dir", str(pid_dir)],
        "b": [*SPAWNING_BOT, "--children", "5", "--own-group", "--pid-dir", str(pid_dir)],
    }
    lines = ['name = "Reaped"', "games_per_match = 2", "concurrency = 2"]
    for team, argv in teams.items():
        lines += ["[[teams]]", f'id = "{team}"', f"command = {json.dumps(argv)}"]
    league = tmp_path / "liga.toml"
    league.write_text("\n".join(lines) + "\n", encoding="utf-8")
    completed = await command(tmp_path, "cli.league", "run", str(league))
    pids = children_of_the_bots(pid_dir)
    try:
        assert completed.returncode == 0, completed.stderr.decode()
        assert len(pids) == 2 * 2 * 5  # two games, two bots each
        assert [pid for pid in pids if alive(pid)] == []
    finally:
        kill_leftovers(pids)


async def test_a_killed_piranhas_match_leaves_no_child_of_a_bot_alive(tmp_path: Path) -> None:
    """SIGKILL during a game: the companion kills the bots' groups and every process that
    carries a bot's token, the setsid children too."""
    pid_dir = tmp_path / "pids"
    bot = [*SPAWNING_BOT, "--children", "5", "--setsid", "--pid-dir", str(pid_dir)]
    slow = [*FAST_BOT, "--delay", "0.5"]
    process = await trio.lowlevel.open_process(
        [
            sys.executable,
            "-m",
            "cli.match",
            "--player1",
            " ".join(bot),
            "--player2",
            " ".join(slow),
        ],
        cwd=tmp_path,
        env=environment(),
    )
    pids: list[int] = []
    try:
        with trio.fail_after(60):
            while len(pids := children_of_the_bots(pid_dir)) < 5:
                await trio.sleep(0.05)
        process.kill()
        await process.wait()
        with trio.fail_after(10):
            while [pid for pid in pids if alive(pid)]:
                await trio.sleep(0.05)
    finally:
        if process.returncode is None:
            process.kill()
        kill_leftovers(pids)


async def test_a_sweep_takes_its_own_players_children_only(tmp_path: Path) -> None:
    """Two bots at once, each with a setsid child: stopping one kills its child (re-parented
    to this process, the subreaper), not the other's."""
    script = f"setsid sleep 300 & echo $! > {tmp_path}/$$.child; wait"
    with BotReaper() as reaper:
        launcher = ReapedLauncher(ProcessLauncher(["sh", "-c", script]), reaper)
        one = await launcher.launch("one", "127.0.0.1", 1, "-", tmp_path / "one.log")
        two = await launcher.launch("two", "127.0.0.1", 1, "-", tmp_path / "two.log")
        children: dict[str, int] = {}
        try:
            with trio.fail_after(10):
                for name, player in (("one", one), ("two", two)):
                    path = tmp_path / f"{player.player.pid}.child"
                    while not path.exists() or not path.read_text().strip():
                        await trio.sleep(0.01)
                    children[name] = int(path.read_text())
            await one.stop()
            assert not alive(children["one"])
            assert alive(children["two"])
            await two.stop()
            assert not alive(children["two"])
        finally:
            kill_leftovers(list(children.values()))


async def test_a_sweep_skips_only_processes_that_cannot_be_the_players(tmp_path: Path) -> None:
    """The sweep leaves the /proc entries of the companion and of other registered bots that
    still run unread; a bot that has ended (its process id may be reused) or the swept
    player itself are checked as any other child."""
    with BotReaper() as reaper:
        # sh ignores the contest options the launcher appends (sleep would refuse them).
        launcher = ReapedLauncher(ProcessLauncher(["sh", "-c", "sleep 30"]), reaper)
        one = await launcher.launch("one", "127.0.0.1", 1, "-", tmp_path / "one.log")
        two = await launcher.launch("two", "127.0.0.1", 1, "-", tmp_path / "two.log")
        try:
            companion = reaper._process.pid
            assert reaper._other(companion, one.player)
            assert reaper._other(two.player.pid, one.player)
            assert not reaper._other(one.player.pid, one.player)
            assert not reaper._other(os.getpid(), one.player)  # not a registered player
            ended = await ReapedLauncher(ProcessLauncher(["true"]), reaper).launch(
                "ended", "127.0.0.1", 1, "-", tmp_path / "ended.log"
            )
            with trio.fail_after(10):
                await ended.wait()
            assert not reaper._other(ended.player.pid, one.player)  # registered, but ended
            await ended.stop()
            await two.stop()
            assert not reaper._other(two.player.pid, one.player)  # forgotten
        finally:
            await one.stop()
            await two.stop()
