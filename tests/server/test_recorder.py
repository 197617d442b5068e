"""The recorder: result line first, then the replay; every failure logged with the whole
record; the lobby removes a room only after its record is durable."""

from __future__ import annotations

import builtins
import errno
import json
import os
import sys
import threading
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import structlog
import trio

from engine import GameState, PlayerEntry, Team, game_result
from protocol import GAME_TYPE
from protocol.events import Join
from protocol.messages import Joined, Left, Memento, ResultMessage, WelcomeMessage
from protocol.replay import read_replay, write_replay
from server.config import Settings
from server.lobby import DisconnectCause, Lobby
from server.recorder import FinishedGame, Recorder, ResultsSink, results_record
from server.replays import ReplayFiles
from server.results import ResultsLog
from tests.helpers.lobby import FakePeer, Harness
from tests.helpers.server import join_pair, running_server

FINISHED = datetime(2026, 4, 2, 9, 38, 21, tzinfo=UTC)


def finished_game(room_id: str = "room-1", *, replay: bool = True) -> FinishedGame:
    state = GameState.initial(seed=7)
    packets: list[Memento | ResultMessage] = [Memento(room_id, state)]
    moves = []
    for _ in range(2):
        move = state.legal_moves()[0]
        moves.append((move.x, move.y, move.direction.name))
        state = state.apply(move)
        packets.append(Memento(room_id, state))
    players = [PlayerEntry(Team.ONE, "alpha"), PlayerEntry(Team.TWO, "beta")]
    result = game_result(state, players, aborted="Test")
    packets.append(ResultMessage(room_id, result))
    return FinishedGame(
        room_id=room_id,
        names=("alpha", "beta"),
        result=result,
        created=FINISHED.replace(minute=30),
        started=FINISHED.replace(minute=31),
        finished=FINISHED,
        turn=state.turn,
        moves=tuple(moves),
        move_ms=(1.5, 2.25),
        end="over",
        replay=tuple(packets) if replay else None,
    )


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def recorder_for(tmp_path: Path, *sinks: Any) -> Recorder:
    results = ResultsSink(ResultsLog(tmp_path / "results.jsonl"))
    return Recorder([results, *sinks], ReplayFiles(tmp_path / "replays"))


class SpySink:
    """A second sink (as the league's game records will be): sees every game and the
    state of the replay file at that moment."""

    name = "spy"

    def __init__(self) -> None:
        self.seen: list[tuple[FinishedGame, Path | None, bytes | None]] = []

    def write(self, game: FinishedGame, replay: Path | None) -> None:
        content = replay.read_bytes() if replay is not None and replay.exists() else None
        self.seen.append((game, replay, content))


class FailingSink:
    name = "broken league"

    def write(self, game: FinishedGame, replay: Path | None) -> None:
        raise OSError(errno.EIO, "Input/output error")


# --- the record --------------------------------------------------------------------------------


def test_the_results_line_keeps_its_fields() -> None:
    game = finished_game()
    record = results_record(game, Path("/r/x.xml"))
    assert record == {
        "finished": "2026-04-02T09:38:21+00:00",
        "room": "room-1",
        "players": [
            {"name": "alpha", "team": "ONE", "score": 0, "swarm": 0},
            {"name": "beta", "team": "TWO", "score": 0, "swarm": 0},
        ],
        "winner": None,
        "regular": False,
        "reason": "Test",
        "started": "2026-04-02T09:31:21+00:00",
        "turn": 2,
        "replay": "/r/x.xml",
        "created": "2026-04-02T09:30:21+00:00",
        "end": "over",
        "moves": [list(move) for move in game.moves],
        "moveMs": [1.5, 2.25],
    }
    # A game that never started counts from its creation, as before.
    assert results_record(replace(game, started=None))["started"] == "2026-04-02T09:30:21+00:00"


# --- order: result first, then the replay -------------------------------------------------------


def test_the_result_line_comes_before_the_replay_and_names_it(tmp_path: Path) -> None:
    spy = SpySink()
    recorder = recorder_for(tmp_path, spy)
    game = finished_game()
    recorder.record_now(game)
    ((seen_game, seen_path, content_then),) = spy.seen
    assert seen_game is game
    # When the sinks ran, the name was claimed but the replay not yet written.
    assert seen_path is not None and content_then == b""
    (line,) = lines(tmp_path / "results.jsonl")
    assert line["replay"] == str(seen_path)
    assert seen_path.parent == tmp_path / "replays"
    local = FINISHED.astimezone().strftime("%Y-%m-%d_%H-%M-%S")
    assert seen_path.name == f"replay_swc_2026_piranhas_{local}_alpha_beta.xml"
    assert seen_path.read_bytes() == write_replay("room-1", game.replay or ())
    assert read_replay(seen_path.read_bytes()).result == game.result


def test_a_full_disk_costs_the_replay_not_the_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = recorder_for(tmp_path)
    real_write = os.write
    writes: list[int] = []

    def disk_full_after_the_result_line(descriptor: int, data: bytes) -> int:
        writes.append(len(data))
        if len(writes) == 1:
            return real_write(descriptor, data)  # the result line still fits
        real_write(descriptor, bytes(data)[:100])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", disk_full_after_the_result_line)
    with structlog.testing.capture_logs() as logs:
        recorder.record_now(finished_game())
    monkeypatch.undo()
    (line,) = lines(tmp_path / "results.jsonl")
    assert line["room"] == "room-1"
    # No empty or truncated replay left under the name the line gives, no temporary file.
    assert list((tmp_path / "replays").iterdir()) == []
    assert [(entry["log_level"], entry["event"]) for entry in logs] == [
        ("error", "replay not saved")
    ]
    assert logs[0]["path"] == line["replay"]


def test_no_room_for_a_replay_name_still_records_the_result(tmp_path: Path) -> None:
    (tmp_path / "replays").write_bytes(b"a file where the directory should be")
    recorder = recorder_for(tmp_path)
    with structlog.testing.capture_logs() as logs:
        recorder.record_now(finished_game())
    (line,) = lines(tmp_path / "results.jsonl")
    assert line["room"] == "room-1" and "replay" not in line
    assert [(entry["log_level"], entry["event"]) for entry in logs] == [
        ("error", "replay not saved: no file name")
    ]


def test_a_failing_sink_is_logged_with_the_whole_record_and_the_rest_goes_on(
    tmp_path: Path,
) -> None:
    spy = SpySink()
    recorder = recorder_for(tmp_path, FailingSink(), spy)
    game = finished_game()
    with structlog.testing.capture_logs() as logs:
        recorder.record_now(game)
    errors = [entry for entry in logs if entry["log_level"] == "error"]
    assert len(errors) == 1
    assert errors[0]["sink"] == "broken league"
    (line,) = lines(tmp_path / "results.jsonl")
    assert errors[0]["record"] == line  # everything the results line has
    assert len(spy.seen) == 1  # the sink after the broken one still ran
    assert Path(line["replay"]).read_bytes() == write_replay("room-1", game.replay or ())


def test_without_space_for_anything_the_whole_record_is_in_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = recorder_for(tmp_path)
    game = finished_game()

    def no_descriptors(*args: Any, **kwargs: Any) -> int:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(os, "open", no_descriptors)
    with structlog.testing.capture_logs() as logs:
        recorder.record_now(game)  # does not raise
    monkeypatch.undo()
    records = [entry["record"] for entry in logs if "record" in entry]
    assert records == [results_record(game, None)]
    assert all(entry["log_level"] == "error" for entry in logs)


def test_recording_imports_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A deferred import failed with "too many open files" outside the error handling and
    # lost the result: nothing on the recording path may import our modules at run time,
    # nor load any module not loaded yet (that opens files). The C datetime re-imports the
    # loaded `time` module, which touches no file.
    recorder = recorder_for(tmp_path)
    game = finished_game()
    real_import = builtins.__import__
    imported: list[str] = []

    def refuse_imports(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith(("protocol", "server", "engine")) or name not in sys.modules:
            imported.append(name)
            raise OSError(errno.EMFILE, f"Too many open files (import {name})")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", refuse_imports)
    try:
        recorder.record_now(game)
    finally:
        monkeypatch.setattr(builtins, "__import__", real_import)
    assert imported == []
    (line,) = lines(tmp_path / "results.jsonl")
    assert Path(line["replay"]).exists()


def test_games_with_the_same_names_in_the_same_second_get_their_own_replays(
    tmp_path: Path,
) -> None:
    recorder = recorder_for(tmp_path)
    threads = [
        threading.Thread(target=recorder.record_now, args=(finished_game(f"room-{index}"),))
        for index in range(12)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    recorded = lines(tmp_path / "results.jsonl")
    assert sorted(line["room"] for line in recorded) == sorted(f"room-{i}" for i in range(12))
    assert len({line["replay"] for line in recorded}) == 12
    for line in recorded:
        assert read_replay(Path(line["replay"]).read_bytes()).states  # whole, not empty


def test_nothing_to_do_without_results_file_or_replays(tmp_path: Path) -> None:
    recorder = Recorder.from_settings(Settings(replay_dir=tmp_path / "replays"))
    assert recorder.sinks == () and recorder.replays is None
    recorder.record_now(finished_game())
    assert list(tmp_path.iterdir()) == []


async def test_recording_in_a_worker_thread(tmp_path: Path) -> None:
    recorder = recorder_for(tmp_path)
    main_thread = threading.get_ident()
    spy_threads: list[int] = []

    class ThreadSpy:
        name = "thread spy"

        def write(self, game: FinishedGame, replay: Path | None) -> None:
            spy_threads.append(threading.get_ident())

    recorder.sinks = (*recorder.sinks, ThreadSpy())
    with trio.fail_after(10):
        await recorder.record(finished_game())
    assert spy_threads and spy_threads[0] != main_thread
    assert len(lines(tmp_path / "results.jsonl")) == 1


async def test_without_a_worker_thread_the_record_is_written_anyway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def no_threads(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(trio.to_thread, "run_sync", no_threads)
    with trio.fail_after(10):
        await recorder_for(tmp_path).record(finished_game())
    assert len(lines(tmp_path / "results.jsonl")) == 1


# --- with the lobby ----------------------------------------------------------------------------


async def lobby_with(nursery: trio.Nursery, recorder: Recorder | None, **settings: Any) -> Harness:
    """A running lobby; without `recorder` the one the server builds from the settings."""
    configured = replace(Settings(), **settings)
    lobby = Lobby(configured) if recorder is None else Lobby(configured, recorder=recorder)
    await nursery.start(lobby.run)
    return Harness(lobby)


def start(harness: Harness) -> tuple[FakePeer, FakePeer, str]:
    one, two = harness.peer("one"), harness.peer("two")
    harness.send(one, Join())
    harness.send(two, Join(GAME_TYPE))
    return one, two, one.of(Joined)[0].room_id


class BlockingSink:
    """Holds the record until released: the room must stay until the record is durable."""

    name = "slow disk"

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.games: list[FinishedGame] = []

    def write(self, game: FinishedGame, replay: Path | None) -> None:
        self.entered.set()
        self.release.wait(10)
        self.games.append(game)


async def test_the_room_is_left_only_after_the_record_is_durable(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    sink = BlockingSink()
    harness = await lobby_with(nursery, Recorder([sink]))
    one, two, room_id = start(harness)
    harness.lobby.disconnect(one, DisconnectCause.LOST_CONNECTION)
    with trio.fail_after(10):
        while not sink.entered.is_set():
            await trio.sleep(0.01)
    assert room_id in harness.lobby.rooms
    assert not two.of(Left) and two.of(ResultMessage)
    sink.release.set()
    await harness.settle()
    assert room_id not in harness.lobby.rooms
    assert two.of(Left) == [Left(room_id)]
    (game,) = sink.games
    assert (game.room_id, game.end, game.names) == (room_id, "over", ("", ""))
    assert game.result == two.of(ResultMessage)[0].result


async def test_the_lobby_hands_over_the_whole_game(nursery: trio.Nursery, tmp_path: Path) -> None:
    spy = SpySink()
    harness = await lobby_with(
        nursery, recorder_for(tmp_path, spy), save_replay=True, replay_dir=tmp_path / "replays"
    )
    one, two, room_id = start(harness)
    state = one.last_state()
    harness.move(one, room_id, state.legal_moves()[0])
    harness.lobby.disconnect(two, DisconnectCause.LOST_CONNECTION)
    await harness.settle()
    ((game, path, _),) = spy.seen
    move = state.legal_moves()[0]
    assert game.moves == ((move.x, move.y, move.direction.name),)
    assert len(game.move_ms) == 1 and game.turn == 1
    assert game.started is not None and game.created <= game.started <= game.finished
    assert game.replay is not None and isinstance(game.replay[-1], ResultMessage)
    assert path is not None and path.exists()
    (line,) = lines(tmp_path / "results.jsonl")
    assert line["replay"] == str(path) and line["moves"] == [list(game.moves[0])]


async def test_a_deferred_import_failure_no_longer_loses_the_result(
    nursery: trio.Nursery, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = await lobby_with(
        nursery,
        None,
        save_replay=True,
        replay_dir=tmp_path / "replays",
        results_file=tmp_path / "results.jsonl",
    )
    one, _two, room_id = start(harness)
    real_import = builtins.__import__

    def exhausted(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith(("protocol", "server", "engine")):
            raise OSError(errno.EMFILE, "Too many open files")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", exhausted)
    harness.lobby.disconnect(one, DisconnectCause.LOST_CONNECTION)
    await harness.settle()
    monkeypatch.undo()
    (line,) = lines(tmp_path / "results.jsonl")
    assert line["room"] == room_id
    assert Path(line["replay"]).stat().st_size > 0


async def test_a_game_ended_while_the_lobby_is_being_cancelled_is_still_recorded(
    tmp_path: Path,
) -> None:
    # A stop that cancels (not the graceful shutdown): the room's closing task starts in a
    # cancelled scope, and the record must still be written before the room goes.
    lobby = Lobby(Settings(), recorder=recorder_for(tmp_path))
    harness = Harness(lobby)
    async with trio.open_nursery() as nursery:
        await nursery.start(lobby.run)
        one, two, room_id = start(harness)
        nursery.cancel_scope.cancel()
        lobby.disconnect(one, DisconnectCause.LOST_CONNECTION)
    (line,) = lines(tmp_path / "results.jsonl")
    assert line["room"] == room_id
    assert room_id not in lobby.rooms and two.of(Left) == [Left(room_id)]


async def test_a_game_ended_after_the_lobby_stopped_is_recorded_at_once(tmp_path: Path) -> None:
    # A connection's cleanup after a cancelled stop can end a game when the lobby's nursery
    # is closed: there is no task to record in, so the record is written here and now.
    lobby = Lobby(Settings(), recorder=recorder_for(tmp_path))
    harness = Harness(lobby)
    async with trio.open_nursery() as nursery:
        await nursery.start(lobby.run)
        one, two, room_id = start(harness)
        nursery.cancel_scope.cancel()
    lobby.disconnect(one, DisconnectCause.LOST_CONNECTION)
    (line,) = lines(tmp_path / "results.jsonl")
    assert line["room"] == room_id
    assert room_id not in lobby.rooms and two.of(Left) == [Left(room_id)]


async def test_a_server_stopped_by_cancellation_still_records_its_running_game(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results.jsonl"
    with trio.fail_after(10):
        with trio.CancelScope() as stop_hard:
            async with running_server(results_file=results) as server:
                one, _two, room_id = await join_pair(server)
                await one.expect(WelcomeMessage)
                await one.expect(Memento)
                stop_hard.cancel()
    (line,) = lines(results)
    assert line["room"] == room_id
