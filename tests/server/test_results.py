"""The results log: one JSON line per game, appended and synced, never fatal."""

from __future__ import annotations

import errno
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
import structlog

from server.results import ResultsLog


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_appends_one_line_per_record_and_never_truncates(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text('{"old": true}\n', encoding="utf-8")
    results = ResultsLog(path)
    results.append({"room": "a", "scores": [2, 0]})
    # A second instance (a restarted server) keeps appending.
    ResultsLog(path).append({"room": "b", "reason": "Spieler 1 hat gewonnen: ümlaut"})
    assert read_lines(path) == [
        {"old": True},
        {"room": "a", "scores": [2, 0]},
        {"room": "b", "reason": "Spieler 1 hat gewonnen: ümlaut"},
    ]


def test_creates_missing_directories(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "results.jsonl"
    ResultsLog(path).append({"room": "x"})
    assert read_lines(path) == [{"room": "x"}]


def test_unserializable_values_become_strings(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    ResultsLog(path).append({"path": tmp_path})
    assert read_lines(path) == [{"path": str(tmp_path)}]


def test_without_path_nothing_is_written(tmp_path: Path) -> None:
    ResultsLog(None).append({"room": "x"})
    assert list(tmp_path.iterdir()) == []


def test_write_is_synced_before_return(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "results.jsonl"
    synced: list[int] = []
    real_fsync = os.fsync

    def spy_fsync(descriptor: int) -> None:
        # At fsync time the whole line must already be written to this descriptor.
        synced.append(os.fstat(descriptor).st_size)
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", spy_fsync)
    ResultsLog(path).append({"room": "x"})
    assert synced == [path.stat().st_size]


def test_write_failure_is_logged_not_raised(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    results = ResultsLog(blocker / "results.jsonl")  # parent is a file: cannot be created
    with structlog.testing.capture_logs() as logs:
        results.append({"room": "lost"})
    assert len(logs) == 1
    assert logs[0]["log_level"] == "error"
    assert logs[0]["record"] == {"room": "lost"}
    assert "results" in logs[0]["event"].lower()


def test_concurrent_appends_do_not_interleave(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    results = ResultsLog(path)
    threads = [
        threading.Thread(target=results.append, args=({"n": index, "pad": "x" * 5000},))
        for index in range(20)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert sorted(line["n"] for line in read_lines(path)) == list(range(20))


def test_append_async_is_gone() -> None:
    # Dead code: the recorder runs the whole record in one worker thread.
    assert not hasattr(ResultsLog, "append_async")


# --- a full disk: a line is written whole or not at all --------------------------------------


def partial_then(monkeypatch: pytest.MonkeyPatch, *, keep: int, then: OSError | None) -> list[int]:
    """Make the next os.write to a file really write only `keep` bytes, then raise `then`
    (or report the short write when `then` is None), as write(2) does when the disk
    fills up. Later writes fail with ENOSPC. Returns the write sizes asked for."""
    real_write = os.write
    asked: list[int] = []

    def full_disk_write(descriptor: int, data: bytes) -> int:
        asked.append(len(data))
        if len(asked) == 1:
            written = real_write(descriptor, bytes(data)[:keep])
            if then is None:
                return written
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full_disk_write)
    return asked


@pytest.mark.parametrize("then", [None, OSError(errno.ENOSPC, "No space left on device")])
def test_a_partial_write_on_a_full_disk_leaves_no_torn_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, then: OSError | None
) -> None:
    path = tmp_path / "results.jsonl"
    results = ResultsLog(path)
    results.append({"room": "before"})
    before = path.read_bytes()
    partial_then(monkeypatch, keep=7, then=then)
    record: dict[str, object] = {"room": "lost", "players": [{"name": "a"}]}
    with structlog.testing.capture_logs() as logs:
        assert results.append(record) is False
    # The half line was cut off again: the file is exactly as before the attempt.
    assert path.read_bytes() == before
    assert [entry["log_level"] for entry in logs] == ["error"]
    assert logs[0]["record"] == record  # nothing lost silently: the log has all of it
    monkeypatch.undo()
    # Space again: the next record is a line of its own, not glued to a fragment.
    assert results.append({"room": "after"}) is True
    assert read_lines(path) == [{"room": "before"}, {"room": "after"}]


def test_a_failing_fsync_takes_the_line_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "results.jsonl"
    ResultsLog(path).append({"room": "before"})
    before = path.read_bytes()
    real_fsync = os.fsync
    calls: list[int] = []

    def failing_fsync(descriptor: int) -> None:
        calls.append(descriptor)
        if len(calls) == 1:
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with structlog.testing.capture_logs() as logs:
        assert ResultsLog(path).append({"room": "unsure"}) is False
    assert path.read_bytes() == before
    assert logs[0]["record"] == {"room": "unsure"}


def test_the_whole_line_goes_out_in_one_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One write(2) with O_APPEND: another process appending at the same time cannot land
    # in the middle of the line.
    path = tmp_path / "results.jsonl"
    real_write = os.write
    sizes: list[int] = []

    def spy_write(descriptor: int, data: bytes) -> int:
        sizes.append(len(data))
        return real_write(descriptor, data)

    monkeypatch.setattr(os, "write", spy_write)
    ResultsLog(path).append({"room": "x", "pad": "y" * 100_000})
    assert sizes == [path.stat().st_size]


def test_a_torn_line_left_by_an_older_writer_is_not_glued_to(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"room":"ok"}\n{"room":"to')
    assert ResultsLog(path).append({"room": "new"}) is True
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == '{"room":"ok"}' and lines[1] == '{"room":"to'
    assert json.loads(lines[2]) == {"room": "new"}


def test_game_record_describes_players_scores_and_winner() -> None:
    from datetime import UTC, datetime

    from engine import (
        GameState,
        PlayerEntry,
        Team,
        Violation,
        ViolationKind,
        game_result,
    )
    from server.results import game_record

    state = GameState.initial(seed=3)
    players = [
        PlayerEntry(Team.ONE, "alpha", Violation(ViolationKind.LEFT, "LOST_CONNECTION")),
        PlayerEntry(Team.TWO, "beta"),
    ]
    result = game_result(state, players)
    finished = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    record = game_record("room-9", result, finished=finished, turn=state.turn)
    assert record["room"] == "room-9"
    assert record["finished"] == "2026-01-02T03:04:05+00:00"
    assert record["winner"] == "TWO"
    assert record["regular"] is False
    assert record["reason"] == result.reason
    assert record["turn"] == 0
    players_out = record["players"]
    assert isinstance(players_out, list)
    assert [(p["name"], p["team"], p["score"]) for p in players_out] == [
        ("alpha", "ONE", 0),
        ("beta", "TWO", 2),
    ]
    assert players_out[0]["violation"] == "LEFT"
    assert players_out[0]["violationDetail"] == "LOST_CONNECTION"
    assert "violation" not in players_out[1]
    assert players_out[1]["swarm"] == result.scores[1][1][1]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_full_disk_is_logged_not_raised() -> None:
    with structlog.testing.capture_logs() as logs:
        assert ResultsLog(Path("/dev/full")).append({"room": "lost"}) is False
    assert [entry["log_level"] for entry in logs] == ["error"]
    assert logs[0]["record"] == {"room": "lost"}
    assert "No space" in logs[0]["error"] or "28" in logs[0]["error"]
