"""Engine speed: seeded random playouts (legal moves + apply + game-end check every ply).

Also runs the same kind of playouts with the official client's compiled rules (socha 4.3.9)
when it is installed, and prints the ratio.

    python -m bench.engine [--games N] [--repeat R] [--cpu]
"""

from __future__ import annotations

import argparse
import importlib
import os
import random
import sys
import time
from typing import Any

from engine import FieldState, GameState

# The clock of both playouts; --cpu makes it this process's CPU time (on a loaded machine the
# wall clock also counts the time the other jobs run).
_clock = time.perf_counter


def playouts_engine(seeds: range) -> tuple[int, float]:
    """Play one random game per seed to its end; returns (plies, seconds)."""
    starts = [GameState.initial(seed) for seed in seeds]
    plies = 0
    began = _clock()
    for seed, state in zip(seeds, starts, strict=True):
        choose = random.Random(seed).choice
        while not state.is_over:
            state = state.apply(choose(state.legal_moves()))
            plies += 1
    return plies, _clock() - began


# socha names the fields in CamelCase: ONE_S → OneS, SQUID → Squid.
_SOCHA_FIELDS = {field: field.name.title().replace("_", "") for field in FieldState}


def socha_starts(socha: Any, seeds: range) -> list[Any]:
    """socha's start states of the engine's boards for `seeds`."""
    starts = []
    for seed in seeds:
        rows = GameState.initial(seed).rows()
        fields = [[getattr(socha.FieldType, _SOCHA_FIELDS[f]) for f in row] for row in rows]
        starts.append(socha.GameState(socha.Board(fields), 0, None))
    return starts


def playouts_socha(socha: Any, seeds: range) -> tuple[int, float]:
    """The same with socha: possible_moves + perform_move, stopping only at the turn limit or
    when no move is left (socha has no game-end check of its own)."""
    starts = socha_starts(socha, seeds)
    plies = 0
    began = _clock()
    for seed, state in zip(seeds, starts, strict=True):
        choose = random.Random(seed).choice
        while state.turn < 60:
            moves = state.possible_moves()
            if not moves:
                break
            state = state.perform_move(choose(moves))
            plies += 1
    return plies, _clock() - began


def interpreter() -> str:
    """Which Python runs the playouts: the ratio depends on it. The engine executes about the
    same instructions per ply on any CPython 3.11, but a python whose interpreter is linked
    into its executable (Debian's /usr/bin/python3.11, what the project's Docker image runs)
    runs them faster than one that calls a shared libpython (pyenv's default build), while
    socha's compiled rules do not change (figures: docs/performance.md)."""
    try:
        with open("/proc/self/maps", encoding="ascii", errors="replace") as maps:
            shared = "libpython" in maps.read()
    except OSError:
        shared_text = "unknown"
    else:
        shared_text = "shared libpython" if shared else "interpreter in the executable"
    version = sys.version.split()[0]
    return f"{os.path.realpath(sys.executable)} {version} ({shared_text})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3, help="runs; the fastest counts")
    parser.add_argument("--cpu", action="store_true", help="time CPU seconds, not the wall clock")
    args = parser.parse_args()
    if args.cpu:
        global _clock
        _clock = time.process_time
    seeds = range(args.games)
    socha: Any
    try:
        socha = importlib.import_module("socha")
    except ImportError:
        socha = None

    # Engine and socha runs alternate, so a load change on the machine hits both alike.
    ours: list[tuple[int, float]] = []
    theirs: list[tuple[int, float]] = []
    for _ in range(args.repeat):
        ours.append(playouts_engine(seeds))
        if socha is not None:
            theirs.append(playouts_socha(socha, seeds))

    print(f"python: {interpreter()}")
    plies, seconds = min(ours, key=lambda run: run[1])
    ours_us = seconds / plies * 1e6
    print(f"engine: {args.games} games, {plies} plies, {seconds:.3f} s (best of {args.repeat})")
    print(f"engine: {plies / seconds:,.0f} positions/s, {ours_us:.1f} µs/ply (with end checks)")
    if socha is None:
        print("socha: not installed, no comparison")
        return
    plies, seconds = min(theirs, key=lambda run: run[1])
    theirs_us = seconds / plies * 1e6
    print(f"socha:  {args.games} games, {plies} plies, {seconds:.3f} s (best of {args.repeat})")
    print(f"socha:  {plies / seconds:,.0f} positions/s, {theirs_us:.1f} µs/ply (no end checks)")
    print(f"ratio:  engine is {theirs_us / ours_us:.2f}× as fast as socha per ply")


if __name__ == "__main__":
    main()
