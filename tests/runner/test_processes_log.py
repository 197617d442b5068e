"""Bounded bot logs (runner/botlog.py): the head as it comes, the tail at the end, and a line
saying what was left out (issue 17 item 16: 525 MB in one game's log)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import trio

from launching.botlog import LOG_HEAD_BYTES, LOG_TAIL_BYTES, BoundedLog
from runner.processes import start_process

# Numbered lines, so what is kept can be checked exactly.
WRITER = "import sys\nfor i in range({n}):\n    sys.stdout.write(f'line {{i:07d}}\\n')\n"


async def test_a_bot_printing_30_mb_leaves_a_log_of_its_head_and_tail(tmp_path: Path) -> None:
    log_path = tmp_path / "bot_game1.log"
    lines = 2_500_000  # 13 bytes each: 32.5 MB
    with trio.fail_after(60):
        player = await start_process(
            [sys.executable, "-c", WRITER.format(n=lines)], log_path, what="printer"
        )
        assert await player.wait() == 0
        await player.stop()
    data = log_path.read_bytes()
    total = 13 * lines
    assert len(data) < LOG_HEAD_BYTES + LOG_TAIL_BYTES + 400
    assert data.startswith(b"line 0000000\nline 0000001\n")
    assert data.endswith(f"line {lines - 1:07d}\n".encode())
    left_out = total - LOG_HEAD_BYTES - LOG_TAIL_BYTES
    said = f"[piranhas: {left_out} bytes left out of {total}; the last {LOG_TAIL_BYTES} follow]"
    assert said.encode() in data
    assert f"output beyond {LOG_HEAD_BYTES} bytes is left out here".encode() in data


def test_a_small_log_is_kept_whole(tmp_path: Path) -> None:
    log = BoundedLog(tmp_path / "small.log", head=100, tail=50)
    subprocess.run([sys.executable, "-c", "print('hello')"], stdout=log.writer, check=True)
    assert log.finish(10)
    assert (tmp_path / "small.log").read_bytes() == b"hello\n"


def test_head_and_tail_are_exact(tmp_path: Path) -> None:
    log = BoundedLog(tmp_path / "cut.log", head=30, tail=26)
    script = "import sys\nfor i in range(1000): sys.stdout.write(f'{i:04d}\\n'); sys.stdout.flush()"
    subprocess.run([sys.executable, "-c", script], stdout=log.writer, check=True)
    assert log.finish(10)
    text = (tmp_path / "cut.log").read_text()
    head, rest = text[:30], text[30:]
    assert head == "".join(f"{i:04d}\n" for i in range(6))
    assert rest.endswith("0995\n0996\n0997\n0998\n0999\n"[-26:])
    assert "[piranhas: 4944 bytes left out of 5000; the last 26 follow]" in rest
