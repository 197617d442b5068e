"""How `bench.match` splits a run into parts and says where the CPU it left went."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.match import (
    SAMPLE_EVERY,
    SAMPLE_STEADY,
    Progress,
    compile_checkout,
    split_run,
    summary_lines,
    wait_for_exit,
)

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


def game_end_line(number: int) -> str:
    return json.dumps({"event": "game_end", "time": "2026-12-07T00:00:00+00:00", "game": number})


def test_the_sampling_is_dense_in_the_ramp_and_the_tail_and_sparse_between(
    tmp_path: Path,
) -> None:
    # 6 games at K = 2: the ramp lasts until the runner has 4 children alive (the bots of
    # both slots, or all but one beside the reaper); the tail begins with the 5th game end.
    stream = tmp_path / "events.jsonl"
    progress = Progress(stream, games=6, concurrency=2)
    assert progress.interval() == SAMPLE_EVERY  # no stream yet: the runner is starting
    progress.saw_children(3)
    assert progress.interval() == SAMPLE_EVERY
    progress.saw_children(4)
    assert progress.interval() == SAMPLE_STEADY
    progress.saw_children(1)  # slots between games do not start the ramp again
    assert progress.interval() == SAMPLE_STEADY
    with stream.open("w") as file:
        file.write(json.dumps({"event": "run_start"}) + "\n")
        for number in range(4):
            file.write(game_end_line(number) + "\n")
        file.write(json.dumps({"event": "stats"}) + "\n")
        file.write(game_end_line(4)[:20])  # the 5th end, half written
        file.flush()
        assert progress.interval() == SAMPLE_STEADY
        assert progress.ended == 4
        file.write(game_end_line(4)[20:] + "\n")
        file.flush()
        assert progress.interval() == SAMPLE_EVERY
        assert progress.ended == 5


def test_a_run_of_fewer_games_than_slots_has_no_steady_pace(tmp_path: Path) -> None:
    progress = Progress(tmp_path / "events.jsonl", games=2, concurrency=8)
    progress.saw_children(4)  # both games' bots: all slots that will play
    # The tail begins with the first end: until then the sparse pace applies.
    assert progress.interval() == SAMPLE_STEADY
    (tmp_path / "events.jsonl").write_text(game_end_line(0) + "\n")
    assert progress.interval() == SAMPLE_EVERY


def test_the_checkout_is_compiled_even_where_python_writes_no_bytecode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # as PYTHONDONTWRITEBYTECODE sets
    package = tmp_path / "somepackage"
    (package / "inner").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "inner" / "module.py").write_text("VALUE = 1\n")
    (tmp_path / "loose.py").write_text("")  # not a package: the runner imports none such
    (tmp_path / "notapackage").mkdir()
    (tmp_path / "notapackage" / "script.py").write_text("")
    compile_checkout(tmp_path)
    tag = sys.implementation.cache_tag
    assert (package / "__pycache__" / f"__init__.{tag}.pyc").is_file()
    assert (package / "inner" / "__pycache__" / f"module.{tag}.pyc").is_file()
    assert not (tmp_path / "__pycache__").exists()
    assert not (tmp_path / "notapackage" / "__pycache__").exists()
