"""`--boards FILE`: the pairs' start boards from a list of board seeds (runner.options,
runner.schedule), read as strictly as every file a person hands the runner."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from launching import MatchError
from runner.ndjson import EventLog, read_resume
from runner.options import MAX_BOARDS_BYTES, Options, parse_options
from runner.schedule import game_spec

PLAYER = sys.executable  # these tests never start the commands


def options(tmp_path: Path, *extra: str) -> Options:
    argv = ["--player1", PLAYER, "--player2", PLAYER, "--log-dir", str(tmp_path), *extra]
    return parse_options(argv, threads=64)


def boards_file(tmp_path: Path, text: str, name: str = "boards.txt") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_pairs_take_the_listed_boards_in_turn_and_from_the_top_again(tmp_path: Path) -> None:
    path = boards_file(tmp_path, "# openings\n\n5   # the first\n-9\n  12345678901234567\n")
    run = options(tmp_path, "--boards", str(path), "--games", "8")
    assert run.boards == (5, -9, 12345678901234567)
    assert run.paired
    specs = [game_spec(run, index) for index in range(8)]
    big = 12345678901234567
    assert [spec.seed for spec in specs] == [5, 5, -9, -9, big, big, 5, 5]
    assert [spec.one for spec in specs] == [0, 1] * 4  # sides swapped within each pair
    # Unpaired (the server ignored the seed): no board asked for.
    assert game_spec(run, 0, paired=False).seed is None


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "names no board seed"),
        ("# only a comment\n\n", "names no board seed"),
        ("5\nfive\n", r"boards.txt:2: not a board seed \(an integer\): 'five'"),
        ("5\n1.5\n", "boards.txt:2: not a board seed"),
        (f"{2**63}\n", f"boards.txt:1: {2**63} does not fit 64 bits"),
        (f"{-(2**63) - 1}\n", "does not fit 64 bits"),
    ],
)
def test_a_bad_list_is_a_clear_error_naming_the_line(tmp_path: Path, text: str, words: str) -> None:
    path = boards_file(tmp_path, text)
    with pytest.raises(MatchError, match=words):
        options(tmp_path, "--boards", str(path))


def test_the_extremes_of_64_bits_are_boards(tmp_path: Path) -> None:
    path = boards_file(tmp_path, f"{2**63 - 1}\n{-(2**63)}\n")
    assert options(tmp_path, "--boards", str(path)).boards == (2**63 - 1, -(2**63))


def test_seed_and_boards_together_are_refused(tmp_path: Path) -> None:
    path = boards_file(tmp_path, "1\n")
    with pytest.raises(MatchError, match="--seed and --boards both choose the boards"):
        options(tmp_path, "--boards", str(path), "--seed", "3")


def test_what_is_not_a_readable_regular_file_is_refused_at_once(tmp_path: Path) -> None:
    with pytest.raises(MatchError, match=r"missing\.txt: cannot read: No such file"):
        options(tmp_path, "--boards", str(tmp_path / "missing.txt"))
    with pytest.raises(MatchError, match="not a regular file but a directory"):
        options(tmp_path, "--boards", str(tmp_path))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(MatchError, match="not a regular file but a FIFO"):  # no writer: no wait
        options(tmp_path, "--boards", str(fifo))
    device = tmp_path / "zero"
    device.symlink_to("/dev/zero")
    with pytest.raises(MatchError, match="not a regular file but a device"):
        options(tmp_path, "--boards", str(device))
    big = boards_file(tmp_path, "1\n" * (MAX_BOARDS_BYTES // 2 + 1), "big.txt")
    with pytest.raises(MatchError, match=f"larger than {MAX_BOARDS_BYTES} bytes"):
        options(tmp_path, "--boards", str(big))
    binary = tmp_path / "binary"
    binary.write_bytes(b"1\n\xff\xfe\n")
    with pytest.raises(MatchError, match="not UTF-8 text"):
        options(tmp_path, "--boards", str(binary))
    linked = tmp_path / "linked.txt"
    linked.symlink_to(boards_file(tmp_path, "7\n", "target.txt"))
    assert options(tmp_path, "--boards", str(linked)).boards == (7,)


def test_a_resume_must_play_the_same_list(tmp_path: Path) -> None:
    first = boards_file(tmp_path, "1\n2\n", "first.txt")
    stream = tmp_path / "events.jsonl"
    run = options(tmp_path, "--boards", str(first), "--games", "4", "--ndjson", str(stream))
    events = EventLog(stream)
    events.open()
    events.run_start(run)
    events.close()
    start = json.loads(stream.read_text().splitlines()[0])
    assert start["boards"].startswith("sha256:")
    assert start["seed"] is None
    again = boards_file(tmp_path, "# the same seeds\n1\n2\n", "again.txt")
    same = options(tmp_path, "--boards", str(again), "--games", "4", "--resume", str(stream))
    assert read_resume(stream, same).games == []
    other = boards_file(tmp_path, "2\n1\n", "other.txt")
    changed = options(tmp_path, "--boards", str(other), "--games", "4", "--resume", str(stream))
    with pytest.raises(MatchError, match="is another match"):
        read_resume(stream, changed)
    unpaired = options(tmp_path, "--games", "4", "--resume", str(stream))
    with pytest.raises(MatchError, match="is another match"):
        read_resume(stream, unpaired)
