"""Recording benchmark: what finishing many games and loading a hostile replay cost.

- names: N games of the same two players ending in the same second each get a replay name
  (`ReplayFiles.reserve`, one instance for the run as in the server), against probing from
  `-0` every time as the server did before (a fresh `ReplayFiles` per game), in a temporary
  directory.
- bomb: peak memory (max RSS of a child process) of `load_start_state` on a gzip file that
  expands to 1 GiB, which is refused at the 16 MiB limit.

Run:  .venv/bin/python -m bench.recording [--games 4000]
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
import tempfile
import time
import zlib
from datetime import datetime
from pathlib import Path

from server.replays import ReplayFiles

WHEN = datetime(2026, 4, 2, 11, 38, 21)
NAMES = ["alpha", "beta"]


def pick_names(games: int, *, remember: bool) -> float:
    with tempfile.TemporaryDirectory() as directory:
        files = ReplayFiles(Path(directory))
        start = time.perf_counter()
        for _ in range(games):
            (files if remember else ReplayFiles(Path(directory))).reserve(NAMES, WHEN)
        return time.perf_counter() - start


def write_bomb(path: Path, expanded: int) -> None:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b" " * (1 << 20)
    with path.open("wb") as file:
        file.write(compressor.compress(b"<protocol>"))
        for _ in range(expanded // len(block)):
            file.write(compressor.compress(block))
        file.write(compressor.flush())


_CHILD = """
import resource, sys
from pathlib import Path
from server.replays import ReplayLoadError, load_start_state
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    load_start_state(Path(sys.argv[1]), 0)
    print("loaded?!")
except ReplayLoadError as error:
    print(error)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"max RSS before {before / 1024:.0f} MiB, after {after / 1024:.0f} MiB")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=4000)
    parser.add_argument("--old-games", type=int, default=1000, help="games for the old way")
    arguments = parser.parse_args()

    seconds = pick_names(arguments.games, remember=True)
    print(f"names, remembered suffixes: {arguments.games} games in {seconds:.2f} s")
    seconds = pick_names(arguments.old_games, remember=False)
    print(f"names, probing from 0:      {arguments.old_games} games in {seconds:.2f} s")

    with tempfile.TemporaryDirectory() as directory:
        bomb = Path(directory) / "bomb.xml.gz"
        write_bomb(bomb, 1 << 30)
        print(f"bomb: {bomb.stat().st_size / 1e6:.1f} MB of gzip, 1 GiB expanded")
        with gzip.open(bomb) as check:
            assert check.read(10) == b"<protocol>"
        child = subprocess.run(
            [sys.executable, "-c", _CHILD, str(bomb)], capture_output=True, text=True, check=True
        )
        print(child.stdout.strip())


if __name__ == "__main__":
    main()
