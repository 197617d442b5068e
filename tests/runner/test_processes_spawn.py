"""Players started from a `runner.processes.SpawnThread` (the web viewer's bots): the same
process handling as trio's own (exit status, stop), and the spawning thread's priority."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest
import trio

from runner.processes import SpawnThread, start_process

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pidfd, /proc")


async def test_a_spawned_player_reports_its_exit_and_its_output(tmp_path: Path) -> None:
    spawner = SpawnThread()
    try:
        with trio.fail_after(20):
            player = await start_process(
                ["sh", "-c", "echo hello; exit 3"], tmp_path / "a.log", what="a", spawner=spawner
            )
            assert await player.wait() == 3 and player.returncode == 3
            assert await player.stop() is False  # it had ended
            assert (tmp_path / "a.log").read_text() == "hello\n"
    finally:
        spawner.close()


async def test_a_spawned_player_is_stopped_and_a_threads_nice_value_is_its_own(
    tmp_path: Path,
) -> None:
    spawner = SpawnThread()
    nice_before = os.nice(0)

    def raise_nice() -> None:  # in a thread of its own: on Linux only that thread's value
        os.nice(3)
        raised.append(os.nice(0))

    raised: list[int] = []
    thread = threading.Thread(target=raise_nice)
    thread.start()
    thread.join()
    try:
        with trio.fail_after(20):
            player = await start_process(
                ["sleep", "30"], tmp_path / "b.log", what="b", spawner=spawner
            )
            stat = Path(f"/proc/{player.pid}/stat").read_text()
            assert int(stat[stat.rindex(")") + 2 :].split()[16]) == nice_before
            assert player.returncode is None
            assert await player.stop() is True
            assert player.returncode is not None
    finally:
        spawner.close()
    assert raised == [nice_before + 3] and os.nice(0) == nice_before
