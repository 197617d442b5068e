"""The league file: a TOML document that says who plays, how often, and under which limits.

`load_league(path)` reads and checks it and returns a frozen `LeagueConfig`. Every mistake raises
`LeagueFileError` naming the file, the line and the key (tomllib reports lines only for syntax
errors, so `_KeyLines` finds the line of a key or table itself with a small scan of the text).
The format is documented in docs/league.md and by example in docs/league.example.toml.
"""

from __future__ import annotations

import contextlib
import enum
import os
import re
import shlex
import shutil
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from league.keylines import KeyLines as _KeyLines
from league.keylines import dotted as _dotted

__all__ = [
    "DEFAULT_TIEBREAKS",
    "MAX_GAMES",
    "MAX_GAMES_PER_MATCH",
    "MAX_LEAGUE_BYTES",
    "MAX_TEAMS",
    "BotKind",
    "BotSpec",
    "ContainerLimits",
    "Format",
    "LeagueConfig",
    "LeagueFileError",
    "TeamSpec",
    "Tiebreak",
    "Timeouts",
    "check_command",
    "load_league",
    "parse_league",
]


# Bounds checked before anything is built: the schedule is held in memory (and the game
# server re-reads a --web-league file every few seconds), so a file asks for at most this much.
MAX_LEAGUE_BYTES = 1024 * 1024  # a league file of 500 teams is ~50 KB
MAX_TEAMS = 500
MAX_GAMES_PER_MATCH = 1000
MAX_GAMES = 200_000  # in the whole schedule: ~60 MB of schedule objects at most


class LeagueFileError(Exception):
    """A league file that cannot be used. `str()` is `FILE:LINE: KEY: message`."""

    def __init__(self, message: str, *, path: str, line: int | None, key: str | None) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.key = key
        where = path if line is None else f"{path}:{line}"
        super().__init__(f"{where}: {key}: {message}" if key else f"{where}: {message}")


class Format(enum.Enum):
    """Who plays whom: every pair once, every pair twice (sides of the match swapped), or one
    challenger (`gauntlet = "team id"`) against every other team."""

    ROUND_ROBIN = "round-robin"
    DOUBLE_ROUND_ROBIN = "double-round-robin"
    GAUNTLET = "gauntlet"


class Tiebreak(enum.Enum):
    """Criteria that order teams with equal match points, applied in the configured order
    (docs/tournament.md §1: Siegpunkte, then Schwarmgröße, then lot)."""

    SIEGPUNKTE = "siegpunkte"
    SCHWARMGROESSE = "schwarmgroesse"
    GAMES_WON = "games-won"
    LOT = "lot"


DEFAULT_TIEBREAKS: tuple[Tiebreak, ...] = (
    Tiebreak.SIEGPUNKTE,
    Tiebreak.SCHWARMGROESSE,
    Tiebreak.LOT,
)


class BotKind(enum.Enum):
    """How a team's bot is started."""

    IMAGE = "image"  # a ready Docker image
    FOLDER = "folder"  # a folder with start.sh, built into an image on `base_image`
    COMMAND = "command"  # a local process, no Docker (not sandboxed)


@dataclass(frozen=True)
class BotSpec:
    """A team's bot. Exactly one of the three forms; `folder` is resolved against the league
    file's directory. The runner appends the contest arguments (`--host H --port P
    --reservation CODE`) to `command` and to the image's entrypoint."""

    kind: BotKind
    image: str | None = None
    folder: Path | None = None
    command: tuple[str, ...] = ()


@dataclass(frozen=True)
class TeamSpec:
    """One team: a stable id (used in the store, records and exports), a display name, its bot."""

    id: str
    name: str
    bot: BotSpec


@dataclass(frozen=True)
class Timeouts:
    """Seconds. `soft`/`hard` per move as the official server (docs/protocol.md §6);
    `startup` for a bot to connect; `game` a wall-clock bound per game."""

    soft: float = 2.0
    hard: float = 10.0
    startup: float = 30.0
    game: float = 3600.0


@dataclass(frozen=True)
class ContainerLimits:
    """Per-bot container limits, by default those of the contest (docs/tournament.md §4):
    one CPU, 1.5 GB of memory and no swap (`--memory-swap` = `--memory`), a pids limit."""

    cpus: float = 1.0
    memory_bytes: int = 1536 * 1024 * 1024
    pids: int = 256
    network: bool = False  # bots reach only the game server


@dataclass(frozen=True)
class LeagueConfig:
    """A checked league file."""

    name: str
    teams: tuple[TeamSpec, ...]
    format: Format = Format.ROUND_ROBIN
    gauntlet: str | None = None  # the challenger's team id (format = gauntlet)
    games_per_match: int = 6
    seed: int = 0
    concurrency: int = 1
    timeouts: Timeouts = field(default_factory=Timeouts)
    limits: ContainerLimits = field(default_factory=ContainerLimits)
    base_image: str = "debian:bookworm-slim"
    tiebreaks: tuple[Tiebreak, ...] = DEFAULT_TIEBREAKS
    database: Path = Path("league.sqlite")
    source: Path | None = None  # the file it came from

    def team(self, team_id: str) -> TeamSpec:
        """The team with this id (KeyError if none)."""
        for team in self.teams:
            if team.id == team_id:
                return team
        raise KeyError(team_id)


class _Reader:
    """Typed access to the parsed document that raises LeagueFileError with key and line."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.where = _KeyLines(text)

    def fail(self, key_path: tuple[str | int, ...], message: str) -> LeagueFileError:
        return LeagueFileError(
            message, path=self.path, line=self.where.line(key_path), key=_dotted(key_path)
        )

    def check_keys(
        self, table: Mapping[str, Any], allowed: set[str], at: tuple[str | int, ...]
    ) -> None:
        for key in table:
            if key not in allowed:
                known = ", ".join(sorted(allowed))
                raise self.fail((*at, key), f"unknown key (known here: {known})")

    def table(
        self, parent: Mapping[str, Any], key: str, at: tuple[str | int, ...]
    ) -> dict[str, Any]:
        value = parent.get(key, {})
        if not isinstance(value, dict):
            raise self.fail((*at, key), "must be a table")
        return value

    def string(self, table: Mapping[str, Any], key: str, at: tuple[str | int, ...]) -> str:
        value = table[key]
        if not isinstance(value, str) or not value.strip():
            raise self.fail((*at, key), "must be a non-empty string")
        control = _CONTROL.search(value)
        if control is not None:
            # Names reach terminals, logs and HTML: a NUL or an escape sequence would be
            # printed raw.
            raise self.fail(
                (*at, key),
                f"must not contain control characters (U+{ord(control.group()):04X} at "
                f"position {control.start() + 1})",
            )
        return value

    def integer(
        self, table: Mapping[str, Any], key: str, at: tuple[str | int, ...], minimum: int
    ) -> int:
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail((*at, key), "must be an integer")
        if value < minimum:
            raise self.fail((*at, key), f"must be at least {minimum}")
        return value

    def number(self, table: Mapping[str, Any], key: str, at: tuple[str | int, ...]) -> float:
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise self.fail((*at, key), "must be a positive number")
        return float(value)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
_MEMORY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgKMG]?)[bB]?\s*$")
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}

_TOP_KEYS = {
    "name",
    "format",
    "gauntlet",
    "games_per_match",
    "seed",
    "concurrency",
    "timeouts",
    "limits",
    "base_image",
    "tiebreaks",
    "database",
    "teams",
}


def _memory(reader: _Reader, value: object, at: tuple[str | int, ...]) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    match = _MEMORY.match(value) if isinstance(value, str) else None
    if match is None:
        raise reader.fail(at, 'must be bytes or a size such as "1536m" or "1.5g"')
    amount = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if amount < 64 * 1024 * 1024:
        raise reader.fail(at, "must be at least 64m")
    return amount


def _team(reader: _Reader, raw: object, index: int, base: Path) -> TeamSpec:
    at: tuple[str | int, ...] = ("teams", index)
    if not isinstance(raw, dict):
        raise reader.fail(at, "must be a table ([[teams]])")
    reader.check_keys(raw, {"id", "name", "image", "folder", "command"}, at)
    if "id" not in raw:
        raise reader.fail(at, "a team needs an id")
    team_id = reader.string(raw, "id", at)
    if not _ID.match(team_id):
        raise reader.fail(
            (*at, "id"),
            "must be 1-64 letters, digits, '_', '-' or '.', starting with one of the first two",
        )
    name = reader.string(raw, "name", at) if "name" in raw else team_id
    forms = [key for key in ("image", "folder", "command") if key in raw]
    if len(forms) != 1:
        raise reader.fail(at, "a team needs exactly one of image, folder, command")
    form = forms[0]
    if form == "image":
        bot = BotSpec(BotKind.IMAGE, image=reader.string(raw, "image", at))
    elif form == "folder":
        folder = (base / reader.string(raw, "folder", at)).resolve()
        if not (folder / "start.sh").is_file():
            raise reader.fail((*at, "folder"), f"{folder} has no start.sh")
        bot = BotSpec(BotKind.FOLDER, folder=folder)
    else:
        value = raw["command"]
        if isinstance(value, str):
            command = tuple(shlex.split(value))
        elif isinstance(value, list) and all(isinstance(part, str) for part in value):
            command = tuple(value)
        else:
            raise reader.fail((*at, "command"), "must be a string or a list of strings")
        if not command:
            raise reader.fail((*at, "command"), "must not be empty")
        bot = BotSpec(BotKind.COMMAND, command=command)
    return TeamSpec(team_id, name, bot)


_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'')
_KEY_DOT = re.compile(r"[A-Za-z0-9_\-\"']\s*\.\s*[A-Za-z0-9_\-\"']")
MAX_KEY_DOTS = 64  # per line; a league file's keys have two or three parts


def _check_key_depth(text: str, path: str) -> None:
    """Refuse dotted keys of many parts before tomllib sees them: it builds their tables in
    time quadratic in the parts (40,000 parts: 37 s)."""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.count(".") <= MAX_KEY_DOTS:
            continue
        bare = _STRING.sub('""', line)
        if len(_KEY_DOT.findall(bare)) > MAX_KEY_DOTS:
            raise LeagueFileError(
                f"keys nested too deeply (more than {MAX_KEY_DOTS} dotted parts in a line)",
                path=path,
                line=number,
                key=None,
            )


def _scheduled_games(league_format: Format, teams: int, games_per_match: int) -> int:
    """How many games the schedule of this format has (league.schedule builds it)."""
    if league_format is Format.GAUNTLET:
        matches = teams - 1
    else:
        matches = teams * (teams - 1) // 2
        if league_format is Format.DOUBLE_ROUND_ROBIN:
            matches *= 2
    return matches * games_per_match


def parse_league(text: str, *, path: str = "<league>", base: Path | None = None) -> LeagueConfig:
    """Check a league file's text. `base` is the directory relative paths are taken from
    (default: the current directory). Raises LeagueFileError."""
    base = base if base is not None else Path.cwd()
    if len(text) > MAX_LEAGUE_BYTES:
        message = f"larger than {MAX_LEAGUE_BYTES} bytes: not a league file"
        raise LeagueFileError(message, path=path, line=None, key=None)
    _check_key_depth(text, path)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        line_match = re.search(r"line (\d+)", str(error))
        line = int(line_match.group(1)) if line_match else None
        raise LeagueFileError(f"not valid TOML: {error}", path=path, line=line, key=None) from None
    except RecursionError:
        # tomllib parses nested arrays and inline tables recursively.
        raise LeagueFileError(
            "not valid TOML: arrays or tables nested too deeply", path=path, line=None, key=None
        ) from None
    reader = _Reader(path, text)
    reader.check_keys(doc, _TOP_KEYS, ())

    if "name" not in doc:
        raise LeagueFileError("the league needs a name", path=path, line=None, key="name")
    name = reader.string(doc, "name", ())

    raw_teams = doc.get("teams", [])
    if not isinstance(raw_teams, list):
        raise reader.fail(("teams",), "must be an array of tables ([[teams]])")
    if len(raw_teams) > MAX_TEAMS:
        raise reader.fail(("teams",), f"{len(raw_teams)} teams: at most {MAX_TEAMS}")
    teams = tuple(_team(reader, raw, index, base) for index, raw in enumerate(raw_teams))
    seen: dict[str, int] = {}
    for index, team in enumerate(teams):
        if team.id in seen:
            raise reader.fail(("teams", index, "id"), f"duplicate team id {team.id!r}")
        seen[team.id] = index
    if len(teams) < 2:
        raise reader.fail(("teams",), "a league needs at least two teams")

    league_format = Format.ROUND_ROBIN
    if "format" in doc:
        value = reader.string(doc, "format", ())
        try:
            league_format = Format(value)
        except ValueError:
            choices = ", ".join(f.value for f in Format)
            raise reader.fail(("format",), f"must be one of {choices}") from None
    gauntlet = None
    if league_format is Format.GAUNTLET:
        if "gauntlet" not in doc:
            raise reader.fail(("format",), 'a gauntlet needs `gauntlet = "<team id>"`')
        gauntlet = reader.string(doc, "gauntlet", ())
        if gauntlet not in seen:
            raise reader.fail(("gauntlet",), f"no team has the id {gauntlet!r}")
    elif "gauntlet" in doc:
        raise reader.fail(("gauntlet",), 'only for format = "gauntlet"')

    games = 6
    if "games_per_match" in doc:
        games = reader.integer(doc, "games_per_match", (), 2)
        if games > MAX_GAMES_PER_MATCH:
            raise reader.fail(("games_per_match",), f"must be at most {MAX_GAMES_PER_MATCH}")
        if games % 2:
            raise reader.fail(
                ("games_per_match",), "must be even: games are played in pairs on one board"
            )
    total = _scheduled_games(league_format, len(teams), games)
    if total > MAX_GAMES:
        where = "games_per_match" if "games_per_match" in doc else "teams"
        raise reader.fail(
            (where,),
            f"the schedule would have {total} games ({len(teams)} teams, {games} games per "
            f"match, {league_format.value}): at most {MAX_GAMES}",
        )
    seed = reader.integer(doc, "seed", (), 0) if "seed" in doc else 0
    concurrency = reader.integer(doc, "concurrency", (), 1) if "concurrency" in doc else 1

    raw_timeouts = reader.table(doc, "timeouts", ())
    reader.check_keys(raw_timeouts, {"soft", "hard", "startup", "game"}, ("timeouts",))
    timeouts = Timeouts(
        **{key: reader.number(raw_timeouts, key, ("timeouts",)) for key in raw_timeouts}
    )
    if timeouts.hard < timeouts.soft:
        raise reader.fail(("timeouts", "hard"), "must not be less than timeouts.soft")

    raw_limits = reader.table(doc, "limits", ())
    reader.check_keys(raw_limits, {"cpus", "memory", "pids", "network"}, ("limits",))
    limits = ContainerLimits()
    if "cpus" in raw_limits:
        limits = replace(limits, cpus=reader.number(raw_limits, "cpus", ("limits",)))
    if "memory" in raw_limits:
        limits = replace(
            limits, memory_bytes=_memory(reader, raw_limits["memory"], ("limits", "memory"))
        )
    if "pids" in raw_limits:
        limits = replace(limits, pids=reader.integer(raw_limits, "pids", ("limits",), 16))
    if "network" in raw_limits:
        if not isinstance(raw_limits["network"], bool):
            raise reader.fail(("limits", "network"), "must be true or false")
        limits = replace(limits, network=raw_limits["network"])

    base_image = (
        reader.string(doc, "base_image", ()) if "base_image" in doc else "debian:bookworm-slim"
    )

    tiebreaks: tuple[Tiebreak, ...] = DEFAULT_TIEBREAKS
    if "tiebreaks" in doc:
        raw = doc["tiebreaks"]
        if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
            raise reader.fail(("tiebreaks",), "must be a list of strings")
        chain: list[Tiebreak] = []
        for item in raw:
            try:
                criterion = Tiebreak(item)
            except ValueError:
                choices = ", ".join(t.value for t in Tiebreak)
                raise reader.fail(
                    ("tiebreaks",), f"unknown criterion {item!r} ({choices})"
                ) from None
            if criterion in chain:
                raise reader.fail(("tiebreaks",), f"{item!r} is listed twice")
            chain.append(criterion)
        if Tiebreak.LOT in chain and chain[-1] is not Tiebreak.LOT:
            raise reader.fail(("tiebreaks",), '"lot" decides every tie: it must come last')
        if Tiebreak.LOT not in chain:
            chain.append(Tiebreak.LOT)  # the ranking is always total, as in the contest
        tiebreaks = tuple(chain)

    database = Path("league.sqlite")
    if "database" in doc:
        database = Path(reader.string(doc, "database", ()))
    if not database.is_absolute():
        database = base / database
    if database.exists() and not database.is_file():
        raise reader.fail(("database",), f"{database} exists and is not a regular file")

    return LeagueConfig(
        name=name,
        teams=teams,
        format=league_format,
        gauntlet=gauntlet,
        games_per_match=games,
        seed=seed,
        concurrency=concurrency,
        timeouts=timeouts,
        limits=limits,
        base_image=base_image,
        tiebreaks=tiebreaks,
        database=database,
    )


def load_league(path: Path | str) -> LeagueConfig:
    """Read and check a league file; relative paths in it are relative to its directory.
    Raises LeagueFileError (also for a file that cannot be read)."""
    path = Path(path)
    try:
        if path.exists() and not path.is_file():  # a FIFO would block, /dev/zero never end
            raise LeagueFileError("not a regular file", path=str(path), line=None, key=None)
        with path.open("rb") as file:
            data = file.read(MAX_LEAGUE_BYTES + 1)
        if len(data) > MAX_LEAGUE_BYTES:
            raise LeagueFileError(
                f"larger than {MAX_LEAGUE_BYTES} bytes: not a league file",
                path=str(path),
                line=None,
                key=None,
            )
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise LeagueFileError(
            f"cannot read: {error}", path=str(path), line=None, key=None
        ) from None
    config = parse_league(text, path=str(path), base=path.resolve().parent)
    return replace(config, source=path)


def check_command(config: LeagueConfig, team: TeamSpec, argv: list[str]) -> None:
    """Raise LeagueFileError (`liga.toml:7: teams[1].command: …`) when the program of a team's
    command cannot be found or is not executable: checked before a run writes anything (a
    store, a log folder), not at the first game."""
    program = argv[0]
    found = shutil.which(program)
    if found is not None:
        interpreter = _missing_interpreter(Path(found))
        if interpreter is None:
            return
        what = f"names an interpreter that is not found ({interpreter!r} in its #! line)"
    else:
        what = "is not executable" if Path(program).exists() else "not found"
    index = config.teams.index(team)
    path = str(config.source) if config.source is not None else "<league>"
    line = None
    if config.source is not None:
        with contextlib.suppress(OSError, UnicodeDecodeError):  # the error still names the key
            text = config.source.read_text(encoding="utf-8")
            line = _KeyLines(text).line(("teams", index, "command"))
    raise LeagueFileError(
        f"the program {program!r} {what} (on PATH or relative to {Path.cwd()})",
        path=path,
        line=line,
        key=_dotted(("teams", index, "command")),
    )


def _missing_interpreter(program: Path) -> str | None:
    """The interpreter of a `#!` script when it cannot be found (`/usr/bin/env NAME`: NAME on
    PATH), else None. The kernel would refuse to start the script at the first game."""
    try:
        with program.open("rb") as file:
            first = file.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env" and len(words) > 1 and not words[1].startswith("-"):
        return None if shutil.which(words[1]) else words[1]
    return None if os.access(words[0], os.X_OK) else words[0]
