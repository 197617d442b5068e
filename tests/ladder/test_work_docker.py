"""The ladder's workers with Docker (marker `docker`): an upload checked in the contest's
container; hostile uploads (a fork bomb, a network probe, a bot reading outside its folder,
2 GB of output) contained, each with a verdict; a worker killed mid-match, whose match is
played again once by another worker. Needs a daemon with the bot base image or
debian:bookworm-slim (`.ci/docker-env.sh start`)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from ladder.store import LadderStore
from ladder.work import LadderDb, WorkSettings, check_version, game_log_path
from ladder.work_pool import work_once
from league.asyncstore import StoreThread
from tests.helpers.docker import REPO, labelled_containers, require_docker
from tests.ladder.helpers import Ladder, open_ladder, zip_bytes

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

HOSTILE_BOT = Path(__file__).with_name("hostile_bot.py")
SECRET = "SECRET-good-team.txt"  # in the good team's upload only
JOIN_SECONDS = 12.0  # a bot that has not joined by then loses (the fork bomb, the spammer);
# the good bot must make it under a loaded CI machine (at load 24 here 5 s were too few)


def folder_zip(mode: str, extra: dict[str, str] | None = None) -> bytes:
    """An upload that runs hostile_bot.py in `mode` in the bot image (stdlib, python3-lxml
    and this project's engine/protocol copied into the upload)."""
    files: dict[str, str | bytes] = {}
    for package in ("engine", "protocol"):
        for path in sorted((REPO / package).rglob("*.py")):
            files[str(path.relative_to(REPO))] = path.read_bytes()
    files["tests/bots/fast_bot.py"] = (REPO / "tests" / "bots" / "fast_bot.py").read_bytes()
    files["hostile_bot.py"] = HOSTILE_BOT.read_bytes()
    files["start.sh"] = f'#!/bin/sh\nexec python3 /bot/hostile_bot.py {mode} "$@"\n'
    files.update(extra or {})
    return zip_bytes(files)


@pytest.fixture
def ladder(tmp_path: Path) -> Iterator[Ladder]:
    require_docker()
    opened = open_ladder(tmp_path)
    yield opened
    opened.store.close()
    assert not labelled_containers()  # nothing of any game is left


def real_clock_db(ladder: Ladder) -> LadderDb:
    return StoreThread(lambda: LadderStore.open(ladder.database))


async def test_an_upload_is_checked_in_the_contest_container(ladder: Ladder) -> None:
    team = ladder.store.create_team("Boxed")
    version = ladder.upload(team, folder_zip("play"))
    db = real_clock_db(ladder)
    try:
        card = await check_version(db, ladder.data_dir, version, docker=True)
    finally:
        db.close()
    assert card.ready, card.plain()
    assert card.isolation.startswith("Docker container")
    item = card.item("test.random")
    assert item is not None and "all regular" in item.detail
    stored = ladder.store.version(version)
    assert stored is not None and stored.state == "passed"


def bot_log(ladder: Ladder, version: int, match_id: int) -> str:
    path = game_log_path(ladder.data_dir, ladder.team_of(version), match_id, 1)
    return path.read_text(errors="replace")


async def test_hostile_uploads_are_contained_with_a_verdict(ladder: Ladder) -> None:
    good = ladder.active("Good", folder_zip("play", {SECRET: "the good team's secret"}))
    host_path = {"host-path.txt": str(ladder.data_dir)}
    hostile = {
        mode: ladder.active(mode.title(), folder_zip(mode, host_path if mode == "reader" else {}))
        for mode in ("forkbomb", "probe", "reader", "spam")
    }
    matches = {mode: ladder.store.create_match(good, v, games=2) for mode, v in hostile.items()}
    settings = WorkSettings(ladder.data_dir, docker=True, worker="w", join_seconds=JOIN_SECONDS)
    db = real_clock_db(ladder)
    try:
        for mode in matches:
            with trio.fail_after(120):
                assert await work_once(db, settings) == f"match {matches[mode]}"
    finally:
        db.close()

    rows = {}
    for mode, match_id in matches.items():
        match = ladder.store.match(match_id)
        assert match is not None and match.status == "finished", mode
        rows[mode] = match.results

    # The fork bomb: stopped at the pids limit, never joined, lost; the next games ran.
    bomb = bot_log(ladder, hostile["forkbomb"], matches["forkbomb"])
    forks = int(bomb.split(" forks, then refused")[0].rsplit(" ", 1)[1])
    assert forks < 256, bomb[:500]
    assert [(r.points_a, r.points_b) for r in rows["forkbomb"]] == [(2, 0), (2, 0)]

    # The probe saw loopback only (the relay shares its namespace): no route, gameserver local.
    probe = bot_log(ladder, hostile["probe"], matches["probe"])
    assert "probe: interfaces=lo\n" in probe and "probe: routes=0\n" in probe, probe[:500]
    assert "probe: gameserver=127.0.0.1" in probe

    # The reader found nothing of the host or of another team's upload.
    reader = bot_log(ladder, hostile["reader"], matches["reader"])
    assert "reader: host data dir visible=False" in reader, reader[:800]
    assert "reader: foreign files=[]" in reader
    assert "reader: /etc/shadow refused" in reader

    # 2 GB of output: the log keeps its head and tail (launching.botlog), the bot lost.
    spam_log = game_log_path(ladder.data_dir, ladder.team_of(hostile["spam"]), matches["spam"], 1)
    assert spam_log.stat().st_size < 3 << 20
    assert "bytes left out of" in spam_log.read_text(errors="replace")
    assert [(r.points_a, r.points_b) for r in rows["spam"]] == [(2, 0), (2, 0)]


def start_worker(ladder: Ladder, name: str) -> subprocess.Popen[bytes]:
    """`piranhas-ladder worker` (ladder.workercli's subcommand) in a process of its own."""
    program = (
        "import argparse, sys\n"
        "from ladder.workercli import add_worker_command\n"
        "parser = argparse.ArgumentParser()\n"
        "add_worker_command(parser.add_subparsers())\n"
        "args = parser.parse_args(sys.argv[1:])\n"
        "sys.exit(args.run(args))\n"
    )
    command = [sys.executable, "-c", program, "worker", "--data", str(ladder.data_dir)]
    command += ["--name", name, "--lease", "4", "--heartbeat", "1", "--no-schedule"]
    return subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL)


async def test_a_worker_killed_mid_match_is_replayed_once(ladder: Ladder) -> None:
    a = ladder.active("Patient", folder_zip("slow"))
    b = ladder.active("Careful", folder_zip("slow"))
    match_id = ladder.store.create_match(a, b, games=2)
    log = game_log_path(ladder.data_dir, ladder.team_of(a), match_id, 1)
    worker = start_worker(ladder, "doomed")
    try:
        with trio.fail_after(120):
            # Mid-game: the bot has started and made moves.
            while not (log.is_file() and log.read_text().count("\n") >= 2):
                assert worker.poll() is None, "the worker ended by itself"
                await trio.sleep(0.2)
            await trio.sleep(1.0)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    first = ladder.store.match(match_id)
    assert first is not None and first.status == "running" and first.attempt == 1
    with trio.fail_after(30):  # its reaper's companion removes the dead worker's containers
        while labelled_containers():
            await trio.sleep(0.5)

    settings = WorkSettings(ladder.data_dir, docker=True, worker="survivor", lease_seconds=60)
    db = real_clock_db(ladder)
    began = time.monotonic()
    try:
        with trio.fail_after(120):
            while (done := await work_once(db, settings)) is None:
                await trio.sleep(0.5)  # until the dead worker's lease (4 s) has run out
    finally:
        db.close()
    assert done == f"match {match_id}"
    assert time.monotonic() - began < 100
    match = ladder.store.match(match_id)
    assert match is not None and match.status == "finished" and match.attempt == 2
    assert [row.number for row in match.results] == [1, 2]
    attempts = ladder.store.attempts("match", match_id)
    assert [(number, worker_name) for number, worker_name, _ in attempts] == [
        (1, "doomed:0"),
        (2, "survivor"),
    ]
    assert attempts[1][2] == "finished" and attempts[0][2] != "finished"
