"""How `bench.match` splits a run into parts and says where the CPU it left went."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from bench.match import split_run, summary_lines, wait_for_exit

# Two CPUs, a run of 10 s: 2 games at K = 2, both launched at 1 s, ending at 8 and 9 s.
SLOTS = [(1.0, 8.0), (1.0, 9.0)]


def sample(at: float, tree: float, idle: float, bench: float) -> tuple[float, ...]:
    # (time, runner's own CPU, tree CPU, machine idle, interrupts, steal, bench's own CPU)
    return (at, 0.0, tree, idle, 0.0, 0.0, bench)


def test_each_part_separates_idle_bench_and_other_jobs() -> None:
    samples = [
        sample(0.0, 0.0, 0.0, 0.0),
        sample(1.0, 1.0, 1.0, 0.0),  # ramp: half the 2 core-s, the other half idle
        sample(8.0, 14.0, 1.0, 0.7),  # steady: 13 of 14 core-s, 0.7 the bench, 0.3 others
        sample(9.0, 15.0, 2.0, 0.7),
        sample(10.0, 15.5, 3.5, 0.7),
    ]
    parts = split_run(SLOTS, 2, 0.0, 10.0, samples, 2)  # type: ignore[arg-type]
    ramp, steady = parts["ramp"], parts["steady"]
    assert ramp["share"] == pytest.approx(0.5)
    assert ramp["machine_idle"] == pytest.approx(0.5)
    assert ramp["bench"] == pytest.approx(0.0)
    assert steady["seconds"] == pytest.approx(7.0)
    assert steady["share"] == pytest.approx(13 / 14)
    assert steady["bench"] == pytest.approx(0.05)
    assert steady["idle_core_s"] == pytest.approx(1.0)
    result = {
        "concurrency": 2,
        "label": "this checkout",
        "cpu_per_game_s": 7.75,
        "runner_cpu_per_game_ms": 0.0,
        "allowed_per_min": 2 * 60 / 7.75,
        "games_per_min": 12.0,
        "parts": parts,
    }
    steady_line = next(line for line in summary_lines(result) if "steady" in line)
    # 1 - 13/14 - 0.05 of the steady state's core-seconds went to other jobs.
    assert "this bench's sampling  5.0 %" in steady_line
    assert f"other jobs {100 * (1 - 13 / 14 - 0.05):5.1f} %" in steady_line


def test_the_wait_between_samples_ends_when_the_run_does() -> None:
    # The run's wall time ends at the process's exit: a process that ends after 0.05 s is seen
    # ended well before the 5 s the wait may last (a sleep between samples saw it only then).
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.05)"])
    try:
        began = time.monotonic()
        assert wait_for_exit(process, 5.0)
        assert time.monotonic() - began < 2.5
        assert process.returncode == 0
    finally:
        process.kill()
        process.wait()


def test_the_wait_between_samples_returns_false_while_the_run_goes_on() -> None:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert not wait_for_exit(process, 0.05)
        assert process.poll() is None
    finally:
        process.kill()
        process.wait()
