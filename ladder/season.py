"""A season: the ladder's active versions frozen into a league file that `piranhas-league`
plays and ranks by the SC rules (docs/league.md): every pair, paired boards, match points,
Siegpunkte, Schwarmgröße, lot.

`freeze(store, path, name, data_dir=DIR)` writes the folder `path`:

    path/league.toml                the league file (a round robin of the frozen teams)
    path/bots/t<team>-v<version>/   each active version's upload, unpacked by the check's ZIP
                                    rules (no absolute paths, no .., no links out, no bombs)

A team is a `folder` team (docs/league.md: built into an image on `base_image` and run in a
contest-limited container, start.sh the entrypoint); an upload whose start file is a jar, a
Python main file or sits in a sub-folder gets a generated `start.sh` that starts it as the
check does. With `docker=False` the teams are `command`s that run start.sh as a local process
(not sandboxed: for trusted bots and tests only, as the league's own `command` teams).

The folder is built beside `path` and renamed into place at the end, so a season folder is
either complete or absent; an existing `path` is never overwritten. The freeze is audit-logged.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
from pathlib import Path

from check.card import Item
from check.upload import BadInput, Unrunnable, check_zip, from_folder
from ladder.store import LadderError, LadderStore, Version
from league.config import load_league

__all__ = ["freeze", "upload_path"]

# How start.sh is run in the current directory of a `command` team (docker=False): in its
# folder, with the contest arguments the league appends.
_RUN_IN_FOLDER = 'cd "$1" && shift && exec ./start.sh "$@"'


def upload_path(data_dir: Path, version: Version) -> Path:
    """Where the site keeps a version's upload: DIR/uploads/<team>/<version>.zip."""
    return data_dir / "uploads" / str(version.team_id) / f"{version.id}.zip"


def _toml(value: str) -> str:
    # A JSON string is a TOML basic string (the same escapes; \\uXXXX for the rest).
    return json.dumps(value, ensure_ascii=True)


def _unpack(upload: Path, folder: Path, version: Version) -> None:
    """Unpack the upload into `folder` with a start.sh at its top."""
    items: list[Item] = []
    try:
        modes = check_zip(upload, folder, items)
        source = from_folder(
            folder,
            main=None,
            python="python3",
            items=items,
            kind="zip",
            label=f"version {version.id}",
            modes=modes,
        )
    except (Unrunnable, BadInput) as error:
        raise LadderError(
            f"version {version.id} of team {version.team_id} cannot be frozen: {error}"
        ) from None
    assert source.folder is not None
    start = folder / "start.sh"
    if source.folder == folder and source.main == "start.sh":
        start.chmod(0o755)
        return
    if start.exists():
        raise LadderError(
            f"version {version.id}: its start file is {source.main}, but a start.sh is in the way"
        )
    inner = source.folder.relative_to(folder).as_posix()
    start.write_text(
        "#!/bin/sh\n"
        f"# Written by piranhas-ladder's season freeze: the upload starts with {source.main}.\n"
        f'cd "$(dirname "$0")/{inner}" || exit 1\n'
        f'exec {shlex.join(source.command)} "$@"\n',
        encoding="utf-8",
    )
    start.chmod(0o755)


def freeze(
    store: LadderStore,
    path: Path | str,
    name: str,
    *,
    data_dir: Path | str,
    by: str = "admin",
    games_per_match: int = 6,
    seed: int = 0,
    base_image: str = "debian:bookworm-slim",
    docker: bool = True,
) -> Path:
    """Freeze the active versions into the season folder `path` (see the module doc); the
    league file's path. LadderError when fewer than two teams are active, an upload is missing
    or cannot be unpacked, or `path` exists."""
    target = Path(path)
    data = Path(data_dir)
    if target.exists():
        raise LadderError(f"{target} exists: a season is never overwritten")
    if not name.strip() or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise ValueError("a season needs a name without control characters")
    active = store.active_versions()
    if len(active) < 2:
        raise LadderError(f"{len(active)} active versions: a season needs two teams at least")
    target.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        lines = [
            f"# A season of the ladder, frozen by piranhas-ladder ({by}): the teams' active",
            "# versions as they were. Play it: piranhas-league run league.toml",
            f"name = {_toml(name.strip())}",
            'format = "round-robin"',
            f"games_per_match = {games_per_match}",
            f"seed = {seed}",
            f"base_image = {_toml(base_image)}",
            'database = "league.sqlite"',
            "",
        ]
        for version in active:
            team = store.team(version.team_id)
            assert team is not None
            upload = upload_path(data, version)
            if not upload.is_file():
                raise LadderError(f"version {version.id} of {team.name}: {upload} is missing")
            folder_name = f"t{team.id}-v{version.id}"
            folder = building / "bots" / folder_name
            folder.mkdir(parents=True)
            _unpack(upload, folder, version)
            lines += [
                f"# {team.name}: version {version.number} ({version.label or 'no label'}), "
                f"id {version.id}, sha256 {version.sha256}",
                "[[teams]]",
                f'id = "t{team.id}"',
                f"name = {_toml(team.name)}",
            ]
            if docker:
                lines.append(f'folder = "bots/{folder_name}"')
            else:
                final = (target / "bots" / folder_name).resolve()
                argv = ["/bin/sh", "-c", _RUN_IN_FOLDER, "season-bot", str(final)]
                lines.append(f"command = [{', '.join(_toml(part) for part in argv)}]")
            lines.append("")
        league = building / "league.toml"
        league.write_text("\n".join(lines), encoding="utf-8")
        os.replace(building, target)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    league = target / "league.toml"
    load_league(league)  # what piranhas-league will read: a mistake shows here, not later
    store.audit(
        by,
        "season.freeze",
        f"season {name.strip()!r} in {target}: "
        + ", ".join(f"team {v.team_id} version {v.id}" for v in active),
    )
    return league
