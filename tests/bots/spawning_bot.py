"""fast_bot.py with children that must not outlive it: before it plays it starts `--children N`
processes (`sleep`), and writes their process ids, one a line, to a file in `--pid-dir`.

  --own-group   each child moves to a process group of its own (setpgid)
  --setsid      each child calls setsid (a session and process group of its own)
  (default)     the children stay in the bot's process group

Killing the bot's process group misses the children of the first two.

For the tests that no command leaves a bot's children behind (runner.reaper).
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path


def main() -> None:
    argv = sys.argv[1:]
    count, setsid, own_group, pid_dir = 0, False, False, None
    rest: list[str] = []
    words = iter(argv)
    for word in words:
        if word == "--children":
            count = int(next(words))
        elif word == "--setsid":
            setsid = True
        elif word == "--own-group":
            own_group = True
        elif word == "--pid-dir":
            pid_dir = Path(next(words))
        else:
            rest.append(word)
    pids = [
        subprocess.Popen(
            ["sleep", "300"],
            start_new_session=setsid,
            process_group=0 if own_group else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ).pid
        for _ in range(count)
    ]
    if pid_dir is not None:
        pid_dir.mkdir(parents=True, exist_ok=True)
        (pid_dir / f"{os.getpid()}.pids").write_text("".join(f"{pid}\n" for pid in pids))
    sys.argv = [str(Path(__file__).with_name("fast_bot.py")), *rest]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
