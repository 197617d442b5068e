"""piranhas-check end to end in process mode (cgroup, network namespace, fresh copy), with
bots of our own: the good ones are ready, each broken one fails the item that names its
fault. Kept short for the default run: each test asks only for the items it is about
(--only, --cases); the whole card of every good bot is in the slow group."""

from __future__ import annotations

import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from check.contest import MEMORY_MIB
from check.isolation import Cgroup, CpuDemand, detect, run_queue_waits
from check.run import IDLE_CPU_FAIL, IDLE_CPU_WARN
from tests.check.helpers import (
    BOTS,
    SHELL_BOT,
    failed,
    faulty,
    java_jar,
    require_isolation,
    run_check,
    shell_variant,
    statuses,
    zip_folder,
)

pytestmark = pytest.mark.timeout(240)


def test_the_shell_bot_is_ready_in_every_argument_form_and_stress_case(tmp_path: Path) -> None:
    require_isolation()
    status, card = run_check(
        tmp_path, str(SHELL_BOT), "--only", "1,2,5,7", "--cases", "one-segment,split-utf8,join"
    )
    assert status == 0, failed(card)
    found = statuses(card)
    for style in ("short", "long", "reordered", "equals"):
        assert found[f"run.args-{style}"] == "PASS"
    assert found["run.network"] == "PASS"
    assert found["stress.one-segment"] == found["stress.split-utf8"] == "PASS"
    assert "network namespace" in card["isolation"]
    # An upload runs unprivileged (the command bots of the other tests keep root: their
    # interpreter is in a virtual environment under /root).
    assert "as uid 65534 (nobody)" in card["isolation"]


def test_a_zip_upload_runs_from_its_unpacked_files(tmp_path: Path) -> None:
    require_isolation()
    archive = zip_folder(SHELL_BOT, tmp_path / "bot.zip")
    status, card = run_check(tmp_path, str(archive), "--only", "1,2")
    assert status == 0, failed(card)
    assert statuses(card)["upload.zip"] == statuses(card)["run.args-short"] == "PASS"


def test_the_contest_test_and_clock_through_the_match_core(tmp_path: Path) -> None:
    """Items 3 and 4: real games on the in-process server; the move times are the server's,
    at this machine's speed and throttled to the contest's (a factor given by hand)."""
    require_isolation()
    status, card = run_check(
        tmp_path,
        str(SHELL_BOT),
        "--only",
        "3,4",
        "--random-games",
        "2",
        "--match-games",
        "2",
        "--clock-games",
        "1",
        "--speed-factor",
        "2",
        "--opponent",
        "random",
    )
    assert status == 0, failed(card)
    items = {item["key"]: item for item in card["items"]}
    assert (
        items["test.random"]["figures"]["won"]
        + items["test.random"]["figures"]["lost"]
        + items["test.random"]["figures"]["drawn"]
        == 2
    )
    here, contest = items["clock.here"]["figures"], items["clock.contest"]["figures"]
    assert here["moves"] >= 4 and contest["moves"] >= 2
    assert 0 < here["p50"] <= here["p95"] <= here["p99"] <= here["max"] < 2000
    assert items["clock.calibration"]["figures"]["factor"] == 2


@pytest.mark.parametrize(
    ("fault", "key"),
    [("crlf", "upload.crlf"), ("no-run-bit", "upload.run-bit"), ("no-args", "upload.args")],
)
def test_a_broken_start_file_is_caught_and_does_not_run(
    tmp_path: Path, fault: str, key: str
) -> None:
    require_isolation()
    status, card = run_check(tmp_path, str(shell_variant(tmp_path, fault)), "--only", "1,2")
    assert status == 1
    assert key in failed(card)
    # Run as the contest runs it, the bot does not get into a game either.
    assert failed(card) >= {"run.args-short", "run.args-long"}


def test_a_bot_that_ignores_the_long_options_fails_them_only(tmp_path: Path) -> None:
    require_isolation()
    status, card = run_check(tmp_path, str(shell_variant(tmp_path, "short-only")), "--only", "2")
    assert status == 1
    # The reordered form has a long option too.
    assert failed(card) == {"run.args-long", "run.args-reordered", "run.args-equals"}
    long = next(item for item in card["items"] if item["key"] == "run.args-long")
    # getopts reads --host as -- and -h with "ost": the bot cannot connect.
    assert "exited with status 1 before connecting" in long["detail"]
    assert "illegal option" in long["log_tail"]
    assert "long forms" in long["fix"]


def test_a_bot_that_needs_the_network(tmp_path: Path) -> None:
    require_isolation()
    status, card = run_check(tmp_path, faulty("network"), "--only", "2")
    assert status == 1
    network = next(item for item in card["items"] if item["key"] == "run.network")
    assert network["status"] == "FAIL" and "pypi.org" in network["detail"]


def test_a_bot_that_spins_while_the_opponent_thinks(tmp_path: Path) -> None:
    require_isolation()
    status, card = run_check(tmp_path, faulty("busy"), "--only", "6")
    assert status == 1
    assert failed(card) == {"resources.idle-cpu"}


def test_a_spinning_process_asks_for_a_whole_cpu_whatever_this_machine_gives_it() -> None:
    """Item 6 judges what a bot asks for, not what a loaded machine lets it have: a spinning
    process held to a tenth of a CPU (by quota here; by other load on a busy machine) still
    asks for all of one (used plus waited for); a sleeping one asks for none."""
    isolation = detect()
    require_isolation()
    assert isolation.cgroup is not None
    shares = {}
    for name, command in (("spins", "while :; do :; done"), ("sleeps", "sleep 30")):
        cgroup = Cgroup(isolation.cgroup, MEMORY_MIB, cpu_quota=0.1)
        process = subprocess.Popen(["sh", "-c", command])
        try:
            for procs in cgroup.procs_files():
                Path(procs).write_text(str(process.pid))
            time.sleep(0.1)
            before, started = (
                CpuDemand(cgroup.cpu_ns(), run_queue_waits([process.pid])),
                time.monotonic(),
            )
            time.sleep(0.6)
            after, ended = (
                CpuDemand(cgroup.cpu_ns(), run_queue_waits([process.pid])),
                time.monotonic(),
            )
        finally:
            process.kill()
            process.wait()
            cgroup.remove()
        wall = (ended - started) * 1e9
        shares[name] = ((after.cpu_ns - before.cpu_ns) / wall, after.wanted_since(before) / wall)
    used, wanted = shares["spins"]
    assert used < IDLE_CPU_FAIL < 0.8 < wanted  # got at most its tenth, asked for a whole CPU
    assert shares["sleeps"][1] < IDLE_CPU_WARN


def test_a_bot_that_allocates_2_gb_is_killed_at_the_contest_limit(tmp_path: Path) -> None:
    require_isolation()
    status, card = run_check(tmp_path, faulty("memory"), "--only", "6,7")
    assert status == 1
    memory = next(item for item in card["items"] if item["key"] == "resources.memory")
    assert memory["status"] == "FAIL" and "1536 MiB" in memory["detail"]
    assert "robust.verdicts" in failed(card)
    assert statuses(card)["robust.cleanup"] == "PASS"


def test_a_bot_that_breaks_on_memento_and_move_request_in_one_packet(tmp_path: Path) -> None:
    require_isolation()
    status, card = run_check(
        tmp_path, faulty("one-per-read"), "--only", "5", "--cases", "one-segment,split-tag"
    )
    assert status == 1
    found = statuses(card)
    assert found["stress.one-segment"] == "FAIL"
    # Cut into pieces (each message alone), the same bot copes.
    assert found["stress.split-tag"] == "PASS"
    item = next(item for item in card["items"] if item["key"] == "stress.one-segment")
    assert "no move within 3 s" in item["detail"]
    assert 'class="move' not in item.get("bot_bytes", "")  # it only joined


def test_a_bot_that_moves_early_and_twice_after_a_slow_server(tmp_path: Path) -> None:
    require_isolation()
    status, card = run_check(
        tmp_path, faulty("early"), "--only", "5", "--cases", "official,slow-server"
    )
    assert status == 1
    assert failed(card) == {"stress.slow-server"}
    item = next(item for item in card["items"] if item["key"] == "stress.slow-server")
    assert "before the moveRequest" in item["detail"]
    assert 'class="move"' in item["bot_bytes"]


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        ("crash", "closed the connection"),
        ("twice", "a move without a request (a second answer?)"),
        ("garbage", "no SC protocol"),
    ],
)
def test_crash_double_answer_and_garbage_get_a_clear_verdict(
    tmp_path: Path, fault: str, words: str
) -> None:
    require_isolation()
    status, card = run_check(tmp_path, faulty(fault), "--only", "5,7", "--cases", "official")
    assert status == 1
    items = {item["key"]: item for item in card["items"]}
    assert items["stress.official"]["status"] == "FAIL"
    assert words in items["stress.official"]["detail"]
    assert items["robust.verdicts"]["status"] == "FAIL"
    assert items["robust.cleanup"]["status"] == "PASS"


def test_a_bot_that_leaves_a_process_behind(tmp_path: Path) -> None:
    """The helper outlives the bot (it moved to a session of its own): item 6 names it, and
    the check kills it (item 7: nothing survives)."""
    require_isolation()
    # A duration of its own: other runs of this test on the machine have their own helpers.
    seconds = f"300.{secrets.randbelow(10**6):06d}"
    status, card = run_check(
        tmp_path, f"{faulty('orphan')} --orphan-seconds {seconds}", "--only", "6,7"
    )
    assert status == 1
    assert failed(card) == {"resources.processes-left"}
    left = next(item for item in card["items"] if item["key"] == "resources.processes-left")
    assert "sleep" in left["detail"]
    assert statuses(card)["robust.cleanup"] == "PASS"
    helper = f"sleep\x00{seconds}\x00".encode()
    assert not [pid for pid in Path("/proc").iterdir() if cmdline(pid) == helper]


def cmdline(process: Path) -> bytes:
    try:
        return (process / "cmdline").read_bytes()
    except OSError:
        return b""


@pytest.mark.socha
def test_the_socha_bot_is_ready(tmp_path: Path) -> None:
    pytest.importorskip("socha")
    require_isolation()
    command = f"{sys.executable} {BOTS / 'socha' / 'logic.py'}"
    status, card = run_check(tmp_path, command, "--only", "5", "--cases", "one-segment")
    assert status == 0, failed(card)
    assert statuses(card)["stress.one-segment"] == "PASS"


def test_the_java_bot_is_ready(tmp_path: Path) -> None:
    require_isolation()
    jar = java_jar(tmp_path)
    status, card = run_check(tmp_path, str(jar), "--only", "1,5", "--cases", "one-segment")
    assert status == 0, failed(card)
    assert statuses(card)["upload.jar"] == "PASS"


@pytest.mark.slow
@pytest.mark.parametrize("bot", ["shell", "java", "socha"])
def test_the_whole_card_of_each_good_bot(tmp_path: Path, bot: str) -> None:
    require_isolation()
    extra: list[str] = []
    if bot == "shell":
        target = str(SHELL_BOT)
    elif bot == "java":
        target = str(java_jar(tmp_path))
    else:
        pytest.importorskip("socha")
        # A folder with requirements.txt but no wheels (item 1 fails on that): the rest.
        target, extra = str(BOTS / "socha"), ["--python", sys.executable, "--only", "2,3,4,5,6,7"]
    status, card = run_check(tmp_path, target, *extra)
    assert status == 0, failed(card)
