"""Replay files on disk: official names, never overwritten, loadGameFile."""

from __future__ import annotations

import gzip
import importlib.util
from datetime import datetime
from pathlib import Path

import pytest
import structlog

from server.config import ConfigError, load_settings
from server.replays import load_start_state, replay_file_name, save_replay

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
def test_save_replay_writes_official_format_and_never_overwrites(tmp_path: Path) -> None:
    from protocol.replay import read_replay, write_replay

    packets, final_state = sample_game()
    directory = tmp_path / "new" / "replays"
    first = save_replay(directory, ["alpha", "beta"], "room-1", packets, NOW)  # type: ignore[arg-type]
    second = save_replay(directory, ["alpha", "beta"], "room-1", packets, NOW)  # type: ignore[arg-type]
    assert first == directory / "replay_swc_2026_piranhas_2026-04-02_11-38-21_alpha_beta.xml"
    assert second == directory / "replay_swc_2026_piranhas_2026-04-02_11-38-21_alpha_beta-1.xml"
    assert first.read_bytes() == write_replay("room-1", packets)  # type: ignore[arg-type]
    assert first.read_bytes().startswith(b"<protocol>\n")
    assert read_replay(second.read_bytes()).states[-1] == final_state


@needs_protocol
def test_save_replay_failure_returns_none_and_logs(tmp_path: Path) -> None:
    packets, _ = sample_game()
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    with structlog.testing.capture_logs() as logs:
        assert save_replay(blocker, ["a", "b"], "r", packets, NOW) is None  # type: ignore[arg-type]
    assert [entry["log_level"] for entry in logs] == ["error"]


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
    with pytest.raises(ConfigError, match=r"game\.xml.*turn >= 99"):
        load_start_state(path, 99)
    broken = tmp_path / "broken.xml"
    broken.write_bytes(b"<protocol><room")
    with pytest.raises(ConfigError, match=r"broken\.xml"):
        load_start_state(broken, 0)


@needs_protocol
def test_load_game_file_setting_carries_the_start_state(tmp_path: Path) -> None:
    from protocol.replay import write_replay

    packets, _ = sample_game()
    (tmp_path / "game.xml").write_bytes(write_replay("room-1", packets))  # type: ignore[arg-type]
    settings = load_settings(["--loadGameFile", "game.xml", "--turn", "1"], tmp_path)
    assert settings.load_game_file == tmp_path / "game.xml"
    assert settings.start_state is not None and settings.start_state.turn == 1
