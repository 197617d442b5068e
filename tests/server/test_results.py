"""The results log: one JSON line per game, appended and synced, never fatal."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import structlog
import trio

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


async def test_append_async_writes_in_order(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    results = ResultsLog(path)
    with trio.fail_after(10):
        for index in range(5):
            await results.append_async({"n": index})
    assert [line["n"] for line in read_lines(path)] == list(range(5))


async def test_concurrent_appends_do_not_interleave(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    results = ResultsLog(path)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for index in range(20):
                nursery.start_soon(results.append_async, {"n": index, "pad": "x" * 5000})
    assert sorted(line["n"] for line in read_lines(path)) == list(range(20))


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
        ResultsLog(Path("/dev/full")).append({"room": "lost"})
    assert [entry["log_level"] for entry in logs] == ["error"]
    assert "No space" in logs[0]["error"] or "28" in logs[0]["error"]
