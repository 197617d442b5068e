"""The speed calibration of item 3 (docs/check.md, "The contest machine's speed").

    python -m check.calibrate      # prints the seconds of the workload on one CPU

The workload is what a bot does: the engine's move generation and moves on seeded random
games (CPython, branchy integer code). `REFERENCE_SECONDS` is its estimated time on one thread
of the contest's Xeon E5-2620 v4 (2.1 GHz base, 3.0 GHz turbo, Broadwell-EP): this machine's
idle time (bench/check_calibration.py) times the estimated ratio of the two CPUs' single-thread
speeds; the docs give the derivation and its uncertainty. The throttle factor is that
reference over the workload's time now (so a busy machine, already slower, is throttled
less); below 1 nothing is throttled.
"""

from __future__ import annotations

import os
import random
import sys
import time

from engine import GameState

# This machine kind, the least disturbed of 9 best-of-3 runs (bench/check_calibration.py:
# 0.218 s at load 9.5); times the estimated single-thread speed ratio of its AMD EPYC (Zen 5,
# 2.6 GHz and more) over one thread of the contest's E5-2620 v4.
IDLE_SECONDS = 0.22
SPEED_RATIO = 2.0  # estimate, 1.5 to 2.7 (docs/check.md)
REFERENCE_SECONDS = IDLE_SECONDS * SPEED_RATIO
GAMES = 240


def workload() -> float:
    """Seconds for the fixed workload, in this process."""
    started = time.perf_counter()
    for seed in range(GAMES):
        rng = random.Random(seed)
        state = GameState.initial(seed)
        while not state.is_over:
            moves = state.legal_moves()
            if not moves:
                break
            state = state.apply(rng.choice(moves))
    return time.perf_counter() - started


def measure(repeats: int = 3) -> float:
    """The best of `repeats` runs on one CPU (the least disturbed one)."""
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[-1]})
    return min(workload() for _ in range(repeats))


def factor(seconds_now: float) -> float:
    """How much slower the contest's thread is than this machine now (at least 1)."""
    return max(1.0, REFERENCE_SECONDS / seconds_now)


if __name__ == "__main__":
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    print(f"{measure(repeats):.4f}")
