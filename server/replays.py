"""Replay files on disk: writing them after a game (saveReplay) and reading the start state
of `<join>` rooms from one (loadGameFile).

Writing is split in two so the recorder can put the result line first: `ReplayFiles.reserve`
claims a file name (an empty file created with O_EXCL, so nothing is ever overwritten), and
`ReplayFiles.write` fills it atomically (a temporary file in the same directory, fsynced, then
renamed over the reservation): a reader never sees a half-written replay under its final name.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
import unicodedata
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from engine import BOARD_SIZE, GameState
from protocol.errors import RemoteProtocolError
from protocol.events import GAME_TYPE
from protocol.messages import Memento, ResultMessage, RoomError
from protocol.replay import MAX_REPLAY_BYTES, read_replay, write_replay
from server.files import FileReadError, read_regular_file

PLUGIN_ID = GAME_TYPE
# Most file systems limit a file name to 255 bytes; names are cut to keep well below that
# (with room for the suffix and the temporary file's decoration).
_MAX_NAME_BYTES = 80
# Control, format (bidi overrides like U+202E), surrogate and line/paragraph separator
# characters: invisible or misleading in a file name, so they are dropped.
_DROPPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Base names whose next suffix is remembered; beyond this the oldest are forgotten (a
# forgotten name costs one probe per existing file, never a wrong name).
_REMEMBERED_NAMES = 4096


class ReplayLoadError(Exception):
    """A loadGameFile cannot be used; the message names the file and says why."""


def replay_file_name(names: Sequence[str], now: datetime, suffix: int = 0) -> str:
    """The official name `replay_swc_2026_piranhas_<yyyy-MM-dd_HH-mm-ss>_<n1>_<n2>.xml`
    (spaces in names become `_`). Path separators become `_` and control/format characters
    are dropped, so a display name can neither escape the replay directory nor disguise the
    name; `suffix` > 0 adds `-<suffix>`."""
    parts = [PLUGIN_ID, now.strftime("%Y-%m-%d_%H-%M-%S"), *(_safe(name) for name in names)]
    stem = "replay_" + "_".join(parts)
    if suffix:
        stem += f"-{suffix}"
    return stem + ".xml"


def _safe(name: str) -> str:
    kept = (
        "_" if char in " /\\" else char
        for char in name
        if unicodedata.category(char) not in _DROPPED_CATEGORIES
    )
    cleaned = "".join(kept)
    if cleaned in (".", ".."):
        cleaned = cleaned.replace(".", "_")
    encoded = cleaned.encode("utf-8")[:_MAX_NAME_BYTES]
    return encoded.decode("utf-8", errors="ignore")


class ReplayFiles:
    """The replay directory of one server. Thread-safe; blocking I/O (call it from a worker
    thread in async code).

    Picking a name is O(1) per game however many games share a name and second: the next
    suffix of each base name is remembered instead of probed from 0 every time."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._next_suffix: dict[str, int] = {}  # insertion order = age, for forgetting
        self._lock = threading.Lock()

    def reserve(self, names: Sequence[str], when: datetime) -> Path:
        """Claim the file name of a replay of players `names` finished at `when` (local
        time, as the official names): creates the directory if needed and an empty file
        under the returned path. Raises OSError."""
        self.directory.mkdir(parents=True, exist_ok=True)
        base = replay_file_name(names, when)
        with self._lock:
            suffix = self._next_suffix.pop(base, 0)
            while True:
                path = self.directory / replay_file_name(names, when, suffix)
                try:
                    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                except FileExistsError:
                    suffix += 1
                    continue
                os.close(descriptor)
                break
            self._next_suffix[base] = suffix + 1
            if len(self._next_suffix) > _REMEMBERED_NAMES:
                del self._next_suffix[next(iter(self._next_suffix))]
        return path

    def write(self, path: Path, data: bytes) -> None:
        """Put `data` under the reserved `path` atomically and durably. On failure the
        reservation and the temporary file are removed (no empty or truncated replay is
        left under the final name) and the OSError is raised."""
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(descriptor, view) :]
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
            os.replace(temporary, path)
        except BaseException:
            for leftover in (temporary, path):
                with contextlib.suppress(OSError):
                    leftover.unlink()
            raise
        _sync_directory(path.parent)

    def release(self, path: Path) -> None:
        """Give up a reservation that will not be written (best effort)."""
        with contextlib.suppress(OSError):
            path.unlink()

    def save(
        self,
        names: Sequence[str],
        room_id: str,
        packets: Sequence[Memento | RoomError | ResultMessage],
        when: datetime,
    ) -> Path:
        """Reserve a name and write the replay in the official format; its path. Raises
        OSError. Logs nothing: it runs in a worker thread of whatever program saves, and that
        program reports the path or the error where its user reads (piranhas-match: the
        game's line and its results)."""
        data = write_replay(room_id, packets)
        path = self.reserve(names, when)
        self.write(path, data)
        return path


def _sync_directory(directory: Path) -> None:
    # The rename is durable only once the directory is synced; some file systems refuse
    # to open or sync a directory, which costs durability, not the replay.
    with contextlib.suppress(OSError):
        descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


# ---------------------------------------------------------------------------------------------
# loadGameFile


def load_start_state(path: Path, turn: int, *, max_bytes: int = MAX_REPLAY_BYTES) -> GameState:
    """The first state with `turn >= turn` from a replay file (plain XML or gzip), like the
    official ReplayLoader. Only a regular file of at most `max_bytes` (also after
    decompression) holding a complete replay of a 10x10 game is accepted. Raises
    ReplayLoadError naming the file on any problem."""
    try:
        data = read_regular_file(path, max_bytes)
    except FileReadError as error:
        raise ReplayLoadError(f"loadGameFile {path}: {error}") from None
    try:
        replay = read_replay(data, max_bytes=max_bytes)
    except RemoteProtocolError as error:
        raise ReplayLoadError(f"loadGameFile {path}: not a readable replay: {error}") from None
    except Exception as error:  # any parse failure of a user-supplied file is its fault
        raise ReplayLoadError(
            f"loadGameFile {path}: not a readable replay: {type(error).__name__}: {error}"
        ) from None
    if not replay.states:
        raise ReplayLoadError(f"loadGameFile {path}: the replay contains no game state")
    last_turn = max(state.turn for state in replay.states)
    if turn > last_turn:
        raise ReplayLoadError(
            f"loadGameFile {path}: no state with turn >= {turn} (the last turn is {last_turn})"
        )
    state = replay.state_at_turn(turn)
    if (state.width, state.height) != (BOARD_SIZE, BOARD_SIZE):
        raise ReplayLoadError(
            f"loadGameFile {path}: the board of turn {state.turn} is {state.width}x"
            f"{state.height}, Piranhas is played on {BOARD_SIZE}x{BOARD_SIZE}"
        )
    return state
