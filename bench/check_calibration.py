"""The idle figure of piranhas-check's speed calibration (check/calibrate.py, docs/check.md):
the workload's time on one CPU of this machine, in fresh processes.

    python -m bench.check_calibration [RUNS]

Prints each run's best-of-3 seconds, their median and spread, and the load average before and
after (the figure is only the idle one when the load is near 0).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    before = os.getloadavg()
    times = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-m", "check.calibrate", "3"],
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(float(done.stdout))
    after = os.getloadavg()
    print("runs (s):", " ".join(f"{t:.3f}" for t in times))
    print(
        f"median {statistics.median(times):.3f} s, min {min(times):.3f}, max {max(times):.3f}; "
        f"load average {before[0]:.2f} before, {after[0]:.2f} after"
    )


if __name__ == "__main__":
    main()
