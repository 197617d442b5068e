"""A season: the ladder's active versions frozen into a league file that `piranhas-league`
plays and ranks by the SC rules (docs/league.md): every pair, paired boards, match points,
Siegpunkte, Schwarmgröße, lot.

`freeze(store, DIR/seasons/NAME.toml, name)` writes the league file and the season's folder
beside it:

    DIR/seasons/NAME.toml               the league file (a round robin of the frozen teams)
    DIR/seasons/NAME/bots/t<team>-v<version>/   each active version's upload, unpacked by the
                                        check's ZIP rules (no absolute paths, no .., no links
                                        out, no bombs)
    DIR/seasons/NAME/league.sqlite      the season's results store (piranhas-league's)

A team is a `folder` team (docs/league.md: built into an image on `base_image` and run in a
contest-limited container, start.sh the entrypoint); an upload whose start file is a jar, a
Python main file or sits in a sub-folder gets a generated `start.sh` that starts it as the
check does. With `docker=False` the teams are `command`s that run start.sh as a local process
(not sandboxed: for trusted bots and tests only, as the league's own `command` teams).

The folder is built under a temporary name and renamed into place, the league file last, so a
season is complete or absent; an existing season is never overwritten. Audit-logged.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

from check.card import Item
from check.upload import BadInput, Unrunnable, check_zip, from_folder
from ladder.store import LadderError, LadderStore, Version
from ladder.work import DATABASE_VARIABLE, environment_setting, upload_path
from league.config import load_league

__all__ = ["add_season_command", "freeze", "season_path"]

# How start.sh is run in the current directory of a `command` team (docker=False): in its
# folder, with the contest arguments the league appends.
_RUN_IN_FOLDER = 'cd "$1" && shift && exec ./start.sh "$@"'


def _toml(value: str) -> str:
    # A JSON string is a TOML basic string (the same escapes; \\uXXXX for the rest).
    return json.dumps(value, ensure_ascii=True)


def _unpack(upload: Path, folder: Path, version: Version) -> None:
    """Unpack the upload into `folder` with a start.sh at its top."""
    folder.mkdir(parents=True)
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


def season_path(data_dir: Path | str, name: str) -> Path:
    """Where a season of this name goes: DIR/seasons/<slug>.toml (the slug from the name's
    letters and digits). ValueError for a name without any."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:64]
    if not slug:
        raise ValueError("a season's name needs a letter or digit")
    return Path(data_dir) / "seasons" / f"{slug}.toml"


def freeze(
    store: LadderStore,
    path: Path | str,
    name: str,
    *,
    data_dir: Path | str | None = None,
    by: str = "admin",
    games_per_match: int = 6,
    seed: int = 0,
    base_image: str = "debian:bookworm-slim",
    docker: bool = True,
) -> Path:
    """Freeze the active versions into the league file `path` and the season folder beside
    it (see the module doc); `path`. `data_dir` holds the uploads; by default the data
    directory whose `seasons/` folder `path` is in. LadderError when fewer than two teams are
    active, an upload is missing or cannot be unpacked, or the season exists."""
    league = Path(path)
    if league.suffix != ".toml":
        raise ValueError(f"{league}: a league file's name ends in .toml")
    if data_dir is None:
        if league.parent.name != "seasons":
            raise ValueError(f"{league} is not in DIR/seasons/: say where the uploads are")
        data_dir = league.parent.parent
    data = Path(data_dir)
    folder = league.with_suffix("")
    if league.exists() or folder.exists():
        raise LadderError(f"{league} exists: a season is never overwritten")
    if not name.strip() or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise ValueError("a season needs a name without control characters")
    active = store.active_versions()
    if len(active) < 2:
        raise LadderError(f"{len(active)} active versions: a season needs two teams at least")
    league.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=league.parent))
    moved = False
    try:
        lines = [
            f"# A season of the ladder, frozen by piranhas-ladder ({by}): the teams' active",
            f"# versions as they were. Play it: piranhas-league run {league.name}",
            f"name = {_toml(name.strip())}",
            'format = "round-robin"',
            f"games_per_match = {games_per_match}",
            f"seed = {seed}",
            f"base_image = {_toml(base_image)}",
            f"database = {_toml(f'{folder.name}/league.sqlite')}",
            "",
        ]
        for version in active:
            team = store.team(version.team_id)
            assert team is not None
            upload = upload_path(data, version.team_id, version.id)
            if not upload.is_file():
                raise LadderError(f"version {version.id} of {team.name}: {upload} is missing")
            bot = f"t{team.id}-v{version.id}"
            _unpack(upload, building / "bots" / bot, version)
            lines += [
                f"# {team.name}: version {version.number} ({version.label or 'no label'}), "
                f"id {version.id}, sha256 {version.sha256}",
                "[[teams]]",
                f'id = "t{team.id}"',
                f"name = {_toml(team.name)}",
            ]
            if docker:
                lines.append(f"folder = {_toml(f'{folder.name}/bots/{bot}')}")
            else:
                final = (folder / "bots" / bot).resolve()
                argv = ["/bin/sh", "-c", _RUN_IN_FOLDER, "season-bot", str(final)]
                lines.append(f"command = [{', '.join(_toml(part) for part in argv)}]")
            lines.append("")
        text = building / "league.toml"
        text.write_text("\n".join(lines), encoding="utf-8")
        os.replace(building, folder)
        moved = True
        # The league file last, atomically: it appears only with its season complete.
        os.replace(folder / "league.toml", league)
        load_league(league)  # what piranhas-league will read: a mistake shows here, not later
    except BaseException:
        shutil.rmtree(folder if moved else building, ignore_errors=True)
        if moved:
            league.unlink(missing_ok=True)
        raise
    store.audit(
        by,
        "season.freeze",
        f"season {name.strip()!r} in {league}: "
        + ", ".join(f"team {v.team_id} version {v.id}" for v in active),
    )
    return league


def add_season_command(commands: Any) -> None:
    """`piranhas-ladder season freeze NAME` and `season ratings` (cli/ladder.py adds --data
    and --database)."""
    season = commands.add_parser(
        "season", help="freeze the active versions into a league season; print the ratings"
    )
    season.add_argument("action", choices=("freeze", "ratings"))
    season.add_argument("name", nargs="?", help="the season's name (freeze)")
    season.add_argument("--games", type=int, default=6, help="games per match (6)")
    season.add_argument("--seed", type=int, default=0)
    season.add_argument("--base-image", default="debian:bookworm-slim")
    season.add_argument(
        "--no-docker",
        action="store_true",
        help="teams as local processes, not containers (trusted bots only)",
    )
    season.add_argument(
        "--recompute",
        action="store_true",
        help="ratings: fit every version again from all recorded games first",
    )
    season.set_defaults(run=_season_command)


def _season_command(args: argparse.Namespace) -> int:
    data = Path(args.data)
    database = str(
        args.database or environment_setting(DATABASE_VARIABLE) or data / "ladder.sqlite"
    )
    store = LadderStore.open(database)
    try:
        if args.action == "ratings":
            if args.recompute:
                store.recompute_ratings()
                store.audit("cli", "ratings.recompute", "every rating fitted again")
            for row in store.standings():
                print(
                    f"{row.rank}\t{row.team_name}\tversion {row.version_id}\t"
                    f"{row.rating:.0f} ± {row.deviation:.0f}\t{row.games} games"
                )
            return 0
        if not args.name:
            raise ValueError("season freeze needs the season's name")
        league = freeze(
            store,
            season_path(data, args.name),
            args.name,
            data_dir=data,
            by="cli",
            games_per_match=args.games,
            seed=args.seed,
            base_image=args.base_image,
            docker=not args.no_docker,
        )
        print(f"season {args.name} frozen: piranhas-league run {league}")
        return 0
    finally:
        store.close()
