"""Engine speed as instructions per ply (callgrind): `bench.engine`'s playouts, counted
instead of timed, so that a loaded machine does not move the figure (times on a shared
2-core machine vary by ±30 %; the counts by well under 1 %).

    python -m bench.engine_instructions [--games N]

Runs `bench.engine.playouts_engine` and `playouts_socha` under `valgrind --tool=callgrind`
(PYTHONHASHSEED=0), each minus a run that only makes the start states, and prints
instructions per ply and their ratio. Instructions are not time (socha's compiled code does
more per instruction): see docs/engine.md for how the two compared before.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

# The playouts make their start states first: counted alone too ("-starts") and subtracted.
_RUN = """
import sys
from bench.engine import playouts_engine, playouts_socha, socha_starts
from engine import GameState
mode, games = sys.argv[1], int(sys.argv[2])
if mode == "engine":
    print("plies", playouts_engine(range(games))[0])
elif mode == "engine-starts":
    [GameState.initial(seed) for seed in range(games)]
elif mode == "socha":
    import socha
    print("plies", playouts_socha(socha, range(games))[0])
elif mode == "socha-starts":
    import socha
    socha_starts(socha, range(games))
"""


def instructions(mode: str, games: int) -> tuple[int, int]:
    """(instructions, plies) of one run of `mode`."""
    result = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            "-c",
            _RUN,
            mode,
            str(games),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        check=True,
    )
    collected = re.search(r"Collected : (\d+)", result.stderr)
    if collected is None:
        raise RuntimeError(f"no instruction count from callgrind:\n{result.stderr[-2000:]}")
    plies = re.search(r"plies (\d+)", result.stdout)
    return int(collected.group(1)), int(plies.group(1)) if plies else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=30)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)")
        return 1
    base, _ = instructions("engine-starts", args.games)
    ours, plies = instructions("engine", args.games)
    ours_per_ply = (ours - base) / plies
    print(f"engine: {args.games} games, {plies} plies, {ours_per_ply:,.0f} instructions/ply")
    try:
        base, _ = instructions("socha-starts", args.games)
        theirs, their_plies = instructions("socha", args.games)
    except subprocess.CalledProcessError:
        print("socha: not installed, no comparison")
        return 0
    theirs_per_ply = (theirs - base) / their_plies
    print(
        f"socha:  {args.games} games, {their_plies} plies, {theirs_per_ply:,.0f} instructions/ply"
    )
    print(f"ratio:  engine needs {theirs_per_ply / ours_per_ply:.2f}× fewer instructions per ply")
    return 0


if __name__ == "__main__":
    sys.exit(main())
