"""Replay files on disk: official names, never overwritten, loadGameFile."""

from __future__ import annotations

import errno
import gzip
import importlib.util
import os
import subprocess
import sys
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import structlog

from server.config import ConfigError, load_settings
from server.replays import (
    ReplayFiles,
    ReplayLoadError,
    load_start_state,
    replay_file_name,
)

NOW = datetime(2026, 4, 2, 11, 38, 21)


def _protocol_available() -> bool:
    try:
        return importlib.util.find_spec("protocol.replay") is not None
    except ImportError:
        return False


# The replay format lives in protocol/ (written in parallel); these tests need it.
needs_protocol = pytest.mark.skipif(not _protocol_available(), reason="protocol.replay missing")


def test_official_file_name() -> None:
    assert (
        replay_file_name(["Team A", "b"], NOW)
        == "replay_swc_2026_piranhas_2026-04-02_11-38-21_Team_A_b.xml"
    )
    # Unnamed players, as the official server writes them.
    assert replay_file_name(["", ""], NOW) == "replay_swc_2026_piranhas_2026-04-02_11-38-21__.xml"


def test_file_name_suffix() -> None:
    assert replay_file_name(["a", "b"], NOW, 2).endswith("_a_b-2.xml")


@pytest.mark.parametrize("name", ["../../etc/passwd", "a\\b", "..", "x\x00y", "line\nbreak"])
def test_names_cannot_leave_the_directory(name: str) -> None:
    file_name = replay_file_name([name, "b"], NOW)
    assert "/" not in file_name and "\\" not in file_name
    assert all(ord(char) >= 32 for char in file_name)
    assert Path(file_name).name == file_name


def test_long_names_are_cut() -> None:
    assert len(replay_file_name(["ä" * 300, "b" * 300], NOW).encode()) <= 255


# --- with the real protocol and engine ----------------------------------------------------


def sample_game() -> tuple[list[object], object]:
    from engine import GameState, PlayerEntry, Team, game_result
    from protocol.messages import Memento, ResultMessage

    state = GameState.initial(seed=7)
    packets: list[object] = [Memento("room-1", state)]
    for _ in range(3):
        state = state.apply(state.legal_moves()[0])
        packets.append(Memento("room-1", state))
    players = [PlayerEntry(Team.ONE, "alpha"), PlayerEntry(Team.TWO, "beta")]
    packets.append(ResultMessage("room-1", game_result(state, players, aborted="Test")))
    return packets, state


@needs_protocol
def test_save_writes_official_format_and_never_overwrites(tmp_path: Path) -> None:
    from protocol.replay import read_replay, write_replay

    packets, final_state = sample_game()
    directory = tmp_path / "new" / "replays"
    # Two savers that know nothing of each other, as two piranhas-match runs in one folder.
    first = ReplayFiles(directory).save(["alpha", "beta"], "room-1", packets, NOW)  # type: ignore[arg-type]
    second = ReplayFiles(directory).save(["alpha", "beta"], "room-1", packets, NOW)  # type: ignore[arg-type]
    assert first == directory / "replay_swc_2026_piranhas_2026-04-02_11-38-21_alpha_beta.xml"
    assert second == directory / "replay_swc_2026_piranhas_2026-04-02_11-38-21_alpha_beta-1.xml"
    assert first.read_bytes() == write_replay("room-1", packets)  # type: ignore[arg-type]
    assert first.read_bytes().startswith(b"<protocol>\n")
    assert read_replay(second.read_bytes()).states[-1] == final_state


@needs_protocol
def test_save_failure_raises_and_logs_nothing(tmp_path: Path) -> None:
    # It runs in a saver's worker thread: the saver reports (a line logged from the thread
    # went to piranhas-match's stdout and could land inside a game's line).
    packets, _ = sample_game()
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    with structlog.testing.capture_logs() as logs, pytest.raises(OSError):
        ReplayFiles(blocker).save(["a", "b"], "r", packets, NOW)  # type: ignore[arg-type]
    assert logs == []
    with structlog.testing.capture_logs() as logs:
        ReplayFiles(tmp_path / "ok").save(["a", "b"], "r", packets, NOW)  # type: ignore[arg-type]
    assert logs == []


@needs_protocol
@pytest.mark.parametrize("compress", [False, True])
def test_load_start_state_first_state_at_or_after_turn(tmp_path: Path, compress: bool) -> None:
    from protocol.replay import write_replay

    packets, _ = sample_game()
    data = write_replay("room-1", packets)  # type: ignore[arg-type]
    path = tmp_path / ("game.xml.gz" if compress else "game.xml")
    path.write_bytes(gzip.compress(data) if compress else data)
    states = [packet.state for packet in packets[:-1]]  # type: ignore[attr-defined]
    assert load_start_state(path, 0) == states[0]
    assert load_start_state(path, 2) == states[2]
    assert load_start_state(path, 3).turn == 3


@needs_protocol
def test_load_start_state_errors_name_the_file(tmp_path: Path) -> None:
    from protocol.replay import write_replay

    packets, _ = sample_game()
    path = tmp_path / "game.xml"
    path.write_bytes(write_replay("room-1", packets))  # type: ignore[arg-type]
    with pytest.raises(ReplayLoadError, match=r"game\.xml.*turn >= 99"):
        load_start_state(path, 99)
    broken = tmp_path / "broken.xml"
    broken.write_bytes(b"<protocol><room")
    with pytest.raises(ReplayLoadError, match=r"broken\.xml"):
        load_start_state(broken, 0)


@needs_protocol
def test_load_game_file_setting_carries_the_start_state(tmp_path: Path) -> None:
    from protocol.replay import write_replay

    packets, _ = sample_game()
    (tmp_path / "game.xml").write_bytes(write_replay("room-1", packets))  # type: ignore[arg-type]
    settings = load_settings(["--loadGameFile", "game.xml", "--turn", "1"], tmp_path)
    assert settings.load_game_file == tmp_path / "game.xml"
    assert settings.start_state is not None and settings.start_state.turn == 1


# --- file names: linear to pick, no invisible characters -----------------------------------


@pytest.mark.parametrize("control", ["\u202e", "\u200f", "\u2066", "\ufeff", "\x07", "\u2028"])
def test_bidi_and_control_characters_are_dropped_from_file_names(control: str) -> None:
    # U+202E would show "evil_gpj.xml" as "evil_lmx.jpg" in a file manager.
    file_name = replay_file_name([f"evil{control}gpj", "b"], NOW)
    assert file_name == "replay_swc_2026_piranhas_2026-04-02_11-38-21_evilgpj_b.xml"


def test_path_separators_become_underscores() -> None:
    assert replay_file_name(["a/b", "c\\d"], NOW).endswith("_a_b_c_d.xml")


def test_picking_names_is_linear_in_the_number_of_games(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Many games of the same players ending in the same second: each pick must not probe
    # every earlier name again (4,000 games took 88 s when it did).
    files = ReplayFiles(tmp_path)
    real_open = os.open
    opened: list[object] = []

    def counting_open(path: object, *args: Any, **kwargs: Any) -> int:
        opened.append(path)
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", counting_open)
    paths = [files.reserve(["a", "b"], NOW) for _ in range(300)]
    assert len(opened) == 300  # one O_EXCL create per game
    assert len(set(paths)) == 300
    assert paths[0].name.endswith("_a_b.xml") and paths[-1].name.endswith("_a_b-299.xml")


def test_a_name_taken_by_someone_else_is_never_overwritten(tmp_path: Path) -> None:
    files = ReplayFiles(tmp_path)
    first = files.reserve(["a", "b"], NOW)
    # Another server (or a person) creates the next name in between.
    taken = tmp_path / replay_file_name(["a", "b"], NOW, 1)
    taken.write_bytes(b"theirs")
    second = files.reserve(["a", "b"], NOW)
    assert second.name.endswith("-2.xml")
    assert taken.read_bytes() == b"theirs"
    # A fresh instance (a restarted server) probes past the existing files.
    assert ReplayFiles(tmp_path).reserve(["a", "b"], NOW).name.endswith("-3.xml")
    assert first != second


def test_a_failed_replay_write_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = ReplayFiles(tmp_path)
    path = files.reserve(["a", "b"], NOW)
    real_write = os.write

    def full_disk(descriptor: int, data: bytes) -> int:
        real_write(descriptor, bytes(data)[:10])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full_disk)
    with pytest.raises(OSError, match="No space"):
        files.write(path, b"<protocol>\n" + b" " * 10000 + b"</protocol>")
    # Neither a truncated replay under the final name nor a temporary file.
    assert list(tmp_path.iterdir()) == []


def test_a_replay_appears_whole_under_its_name(tmp_path: Path) -> None:
    files = ReplayFiles(tmp_path)
    path = files.reserve(["a", "b"], NOW)
    assert path.read_bytes() == b""  # reserved
    files.write(path, b"<protocol>\n</protocol>")
    assert path.read_bytes() == b"<protocol>\n</protocol>"
    assert list(tmp_path.iterdir()) == [path]


# --- loadGameFile: only a bounded, complete, regular replay of the real board ----------------


def replay_bytes() -> bytes:
    from protocol.replay import write_replay

    packets, _ = sample_game()
    return write_replay("room-1", packets)  # type: ignore[arg-type]


def load_in_thread(path: Path) -> BaseException | None:
    """load_start_state(path, 0) in a thread: a test must not hang if it blocks."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            load_start_state(path, 0)
            outcome.append(None)
        except BaseException as error:
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=5)
    assert not thread.is_alive(), f"loading {path} blocks"
    return outcome[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "game.xml"
    os.mkfifo(fifo)
    error = load_in_thread(fifo)
    assert isinstance(error, ReplayLoadError)
    assert "not a regular file but a FIFO" in str(error)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_an_endless_device_is_refused() -> None:
    error = load_in_thread(Path("/dev/zero"))
    assert isinstance(error, ReplayLoadError)
    assert "not a regular file but a device" in str(error)


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ReplayLoadError, match="not a regular file but a directory"):
        load_start_state(tmp_path, 0)


def test_a_gzip_bomb_is_refused_at_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "bomb.xml.gz"
    path.write_bytes(gzip.compress(b"<protocol>" + b" " * (4 << 20)))
    assert path.stat().st_size < 65536
    with pytest.raises(ReplayLoadError, match=r"larger than 65536 bytes after decompression"):
        load_start_state(path, 0, max_bytes=65536)


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.xml"
    with path.open("wb") as file:
        file.truncate(65537)  # sparse: costs no disk
    with pytest.raises(ReplayLoadError, match=r"huge\.xml: 65537 bytes, larger than 65536"):
        load_start_state(path, 0, max_bytes=65536)


@needs_protocol
@pytest.mark.parametrize("compress", [False, True])
def test_a_truncated_replay_is_refused(tmp_path: Path, compress: bool) -> None:
    data = replay_bytes()[:-200]
    path = tmp_path / "cut.xml"
    path.write_bytes(gzip.compress(data) if compress else data)
    with pytest.raises(ReplayLoadError, match=r"cut\.xml: not a readable replay.*truncated"):
        load_start_state(path, 0)


@needs_protocol
@pytest.mark.parametrize("rows", [11, 9, 1])
def test_only_the_real_board_is_accepted(tmp_path: Path, rows: int) -> None:
    from engine import FieldState, GameState
    from protocol.messages import Memento
    from protocol.replay import write_replay

    real = GameState.initial(seed=7).rows()
    board = (real + [[FieldState.EMPTY] * 10] * 2)[:rows]
    state = GameState.from_rows(board)
    path = tmp_path / "odd.xml"
    path.write_bytes(write_replay("r", [Memento("r", state)]))
    with pytest.raises(ReplayLoadError, match=rf"odd\.xml: the board of turn 0 is 10x{rows}"):
        load_start_state(path, 0)


@needs_protocol
def test_load_settings_turns_load_errors_into_config_errors(tmp_path: Path) -> None:
    (tmp_path / "cut.xml").write_bytes(replay_bytes()[:-50])
    with pytest.raises(ConfigError, match=r"loadGameFile .*cut\.xml: .*truncated"):
        load_settings(["--loadGameFile", "cut.xml"], tmp_path)


def test_replays_and_config_import_each_other_no_more() -> None:
    # The start state is loaded in one place (config.with_start_state, through
    # replays.load_start_state); replays knows nothing of the configuration.
    code = "import sys, server.replays; sys.exit('server.config' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_the_cli_refuses_a_fifo_with_the_message_and_status_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.server import main

    os.mkfifo(tmp_path / "game.xml")
    monkeypatch.chdir(tmp_path)
    outcome: list[int] = []
    thread = threading.Thread(
        target=lambda: outcome.append(main(["--loadGameFile", "game.xml"])), daemon=True
    )
    thread.start()
    thread.join(timeout=5)
    assert not thread.is_alive(), "the CLI blocks on a FIFO"
    assert outcome == [2]
    assert "game.xml: not a regular file but a FIFO" in capsys.readouterr().err
