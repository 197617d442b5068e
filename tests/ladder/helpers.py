"""Shared pieces of the ladder worker tests: a data directory with teams and uploaded
versions (ZIPs as the site stores them), on the real ladder store (SQLite)."""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ladder.store import LadderStore
from ladder.work import upload_path

REPO = Path(__file__).resolve().parents[2]
SHELL_BOT = REPO / "tests" / "check" / "bots" / "shell"


def zip_bytes(files: dict[str, str | bytes], modes: dict[str, int] | None = None) -> bytes:
    """A ZIP of `files` (name -> content); start.sh and `modes` entries get their mode."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            info = zipfile.ZipInfo(name)
            mode = (modes or {}).get(name, 0o755 if name.endswith(".sh") else 0o644)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, content)
    return buffer.getvalue()


def shell_bot(start: str | None = None) -> bytes:
    """The check's bash bot (tests/check/bots/shell: bash and /dev/tcp, nothing else, so the
    jail's unprivileged user runs it) as an upload; `start` replaces its start.sh."""
    files: dict[str, str | bytes] = {
        name: (SHELL_BOT / name).read_text() for name in ("start.sh", "bot.sh")
    }
    if start is not None:
        files["start.sh"] = start
    return zip_bytes(files)


CRASH_AT_START = "#!/bin/sh\necho 'crashing on purpose' >&2\nexit 3\n"
# Joins its game, then ends: the server sees the connection close during the game.
CRASH_IN_GAME = """#!/bin/bash
while [ $# -gt 0 ]; do
    case "$1" in -h) host=$2 ;; -p) port=$2 ;; -r) code=$2 ;; esac
    shift 2
done
exec 3<>"/dev/tcp/$host/$port" || exit 1
printf '<protocol><joinPrepared reservationCode="%s"/>' "$code" >&3
read -r -t 2 -d '>' _ <&3
echo 'crashing on purpose' >&2
exit 3
"""


@dataclass
class Ladder:
    """A ladder data directory and its store."""

    data_dir: Path
    store: LadderStore
    clock: list[float] = field(default_factory=lambda: [1_000_000.0])
    database: str = ""

    def upload(self, team_id: int, data: bytes, label: str = "v") -> int:
        """A version as the site adds it: the row, then the file (names from ids)."""
        version = self.store.add_version(
            team_id, size=len(data), sha256=hashlib.sha256(data).hexdigest(), label=label
        )
        path = upload_path(self.data_dir, team_id, version)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return version

    def team_of(self, version_id: int) -> int:
        """The team of a version."""
        version = self.store.version(version_id)
        assert version is not None
        return version.team_id

    def active(self, team_name: str, data: bytes) -> int:
        """A team with one passed, active version; the version id."""
        team = self.store.create_team(team_name)
        version = self.upload(team, data)
        self.store.set_check_result(version, True, "passed (set by the test)")
        self.store.activate(team, version)
        return version


def open_ladder(data_dir: Path, database: str | None = None) -> Ladder:
    """A fresh ladder in `data_dir` (its store there, or at `database`) with a clock the
    test can move (lease expiry)."""
    clock = [1_000_000.0]
    database = database or str(data_dir / "ladder.sqlite")
    store = LadderStore.open(database, clock=lambda: clock[0])
    return Ladder(data_dir, store, clock, database)


def store_factory(ladder: Ladder) -> Callable[[], LadderStore]:
    """Opens another connection to the ladder's store (a worker's), on the same clock."""
    return lambda: LadderStore.open(ladder.database, clock=lambda: ladder.clock[0])
