"""Replay files on disk: writing them after a game (saveReplay) and reading the start state
of `<join>` rooms from one (loadGameFile)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from protocol.events import GAME_TYPE
from server.config import ConfigError

if TYPE_CHECKING:
    from engine import GameState
    from protocol.messages import Memento, ResultMessage, RoomError

log = structlog.get_logger("server.replays")

PLUGIN_ID = GAME_TYPE
# Most file systems limit a file name to 255 bytes; names are cut to keep well below that.
_MAX_NAME_BYTES = 80
_UNSAFE = re.compile(r"[/\\\x00-\x1f\x7f]")


def replay_file_name(names: Sequence[str], now: datetime, suffix: int = 0) -> str:
    """The official name `replay_swc_2026_piranhas_<yyyy-MM-dd_HH-mm-ss>_<n1>_<n2>.xml`
    (spaces in names become `_`). Path separators and control characters are replaced too,
    so a display name cannot escape the replay directory; `suffix` > 0 adds `-<suffix>`."""
    parts = [PLUGIN_ID, now.strftime("%Y-%m-%d_%H-%M-%S"), *(_safe(name) for name in names)]
    stem = "replay_" + "_".join(parts)
    if suffix:
        stem += f"-{suffix}"
    return stem + ".xml"


def _safe(name: str) -> str:
    cleaned = _UNSAFE.sub("_", name.replace(" ", "_"))
    if cleaned in (".", ".."):
        cleaned = cleaned.replace(".", "_")
    encoded = cleaned.encode("utf-8")[:_MAX_NAME_BYTES]
    return encoded.decode("utf-8", errors="ignore")


def save_replay(
    directory: Path,
    names: Sequence[str],
    room_id: str,
    packets: Sequence[Memento | RoomError | ResultMessage],
    now: datetime,
) -> Path | None:
    """Write the replay in the official format and return its path. Never overwrites a file:
    an existing name gets a suffix `-1`, `-2`, ... Creates `directory` if needed. Returns None
    (after logging the error) if the file cannot be written: a replay never breaks a game.
    Blocking file I/O: call it from a worker thread in async code."""
    from protocol.replay import write_replay

    try:
        data = write_replay(room_id, packets)
        directory.mkdir(parents=True, exist_ok=True)
        suffix = 0
        while True:
            path = directory / replay_file_name(names, now, suffix)
            try:
                with path.open("xb") as file:
                    file.write(data)
            except FileExistsError:
                suffix += 1
                continue
            log.info("replay saved", room=room_id, path=str(path))
            return path
    except OSError as error:
        log.error("replay not saved", room=room_id, directory=str(directory), error=str(error))
        return None


def load_start_state(path: Path, turn: int) -> GameState:
    """The first state with `turn >= turn` from a replay file (plain XML or gzip), like the
    official ReplayLoader. Raises ConfigError naming the file on any problem."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ConfigError(f"loadGameFile {path}: cannot read: {error.strerror}") from None
    from protocol.replay import read_replay

    try:
        replay = read_replay(data)
    except Exception as error:  # any parse failure of a user-supplied file is a config error
        raise ConfigError(f"loadGameFile {path}: not a readable replay: {error}") from None
    if not replay.states:
        raise ConfigError(f"loadGameFile {path}: the replay contains no game state")
    last_turn = max(state.turn for state in replay.states)
    if turn > last_turn:
        raise ConfigError(
            f"loadGameFile {path}: no state with turn >= {turn} (the last turn is {last_turn})"
        )
    return replay.state_at_turn(turn)
