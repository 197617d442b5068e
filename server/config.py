"""Server settings from `server.properties` and the command line.

The file uses the Java properties format and the official keys (spec §7.1); our own settings
use camelCase keys. Unlike the official server, a flag given on the command line wins over the
file. Every bad value raises `ConfigError` with a message naming the key or flag, the value and
where it came from; the CLI prints it and exits with status 2.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn

if TYPE_CHECKING:
    from engine import GameState

PROPERTIES_FILE = "server.properties"
DEFAULT_PASSWORD = "examplepassword"
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


class ConfigError(Exception):
    """A setting has a bad value; the message says which, what and where."""


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 13050
    password: str | None = DEFAULT_PASSWORD
    paused: bool = False
    timeout: bool = True
    save_replay: bool = False
    replay_dir: Path = Path("replays")
    load_game_file: Path | None = None
    turn: int = 0
    results_file: Path | None = None
    log_format: Literal["console", "json"] = "console"
    log_level: str = "info"
    soft_timeout: float = 2.0
    hard_timeout: float = 10.0
    idle_timeout: float = 600.0
    reservation_ttl: float = 3600.0
    game_wall_clock_limit: float = 3600.0
    max_packet_bytes: int = 65536
    send_buffer_messages: int = 1000
    # The web viewer (web/): its port (None = off, the default) and listen address.
    web_port: int | None = None
    web_host: str = "127.0.0.1"
    # The state loaded from `load_game_file` at `turn` (validated once at start-up, so every
    # room can reuse it); None without a load_game_file.
    start_state: GameState | None = field(default=None, compare=False, repr=False)


# ---------------------------------------------------------------------------------------------
# Java properties format (java.util.Properties.load)


@dataclass(frozen=True)
class Property:
    key: str
    value: str
    line: int  # 1-based line where the logical line starts


def parse_properties(text: str) -> list[Property]:
    """Parse the Java properties format: `key=value`, `key: value`, `key value`, comments
    starting with # or !, continuation lines ending in an odd number of backslashes,
    backslash escapes including \\uXXXX. Raises ValueError (with the line) on a bad \\u escape."""
    result = []
    for line_no, logical in _logical_lines(text):
        key, value = _split_key_value(logical)
        try:
            result.append(Property(_unescape(key), _unescape(value), line_no))
        except ValueError as error:
            raise ValueError(f"line {line_no}: {error}") from None
    return result


_WHITESPACE = " \t\f"


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    natural = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    index = 0
    while index < len(natural):
        start = index
        line = natural[index].lstrip(_WHITESPACE)
        index += 1
        if not line or line[0] in "#!":
            continue  # comments are never continued
        parts = []
        while _ends_with_continuation(line):
            parts.append(line[:-1])
            if index >= len(natural):
                line = ""
                break
            line = natural[index].lstrip(_WHITESPACE)
            index += 1
        parts.append(line)
        yield start + 1, "".join(parts)


def _ends_with_continuation(line: str) -> bool:
    backslashes = len(line) - len(line.rstrip("\\"))
    return backslashes % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    position = 0
    while position < len(line):
        char = line[position]
        if char == "\\":
            position += 2
            continue
        if char in "=:" or char in _WHITESPACE:
            break
        position += 1
    key = line[:position]
    rest = line[position:].lstrip(_WHITESPACE)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_WHITESPACE)
    return key, rest


_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(raw: str) -> str:
    if "\\" not in raw:
        return raw
    out = []
    position = 0
    while position < len(raw):
        char = raw[position]
        if char != "\\":
            out.append(char)
            position += 1
            continue
        if position + 1 >= len(raw):
            break  # a lone trailing backslash (end of file) is dropped, as in Java
        escaped = raw[position + 1]
        if escaped == "u":
            digits = raw[position + 2 : position + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise ValueError(f"malformed \\uXXXX escape: {raw[position : position + 6]!r}")
            out.append(chr(int(digits, 16)))
            position += 6
        else:
            out.append(_SIMPLE_ESCAPES.get(escaped, escaped))
            position += 2
    text = "".join(out)
    # Java strings are UTF-16: a character beyond U+FFFF is written as two \u escapes (a
    # surrogate pair), which must become one character here.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


# ---------------------------------------------------------------------------------------------
# Values


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    raise ValueError("expected true or false")


def _parse_int(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError("not an integer") from None


def _parse_port(text: str) -> int:
    port = _parse_int(text)
    if not 0 <= port <= 65535:
        raise ValueError("a port must be between 0 and 65535")
    return port


def _parse_non_negative_int(text: str) -> int:
    number = _parse_int(text)
    if number < 0:
        raise ValueError("must not be negative")
    return number


def _positive_int(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        number = _parse_int(text)
        if number < minimum:
            raise ValueError(f"must be at least {minimum}")
        return number

    return parse


def _parse_seconds(text: str) -> float:
    try:
        seconds = float(text.strip())
    except ValueError:
        raise ValueError("not a number of seconds") from None
    if not math.isfinite(seconds):
        raise ValueError("must be a finite number of seconds")
    if seconds < 0:
        raise ValueError("must not be negative")
    return seconds


def _parse_positive_seconds(text: str) -> float:
    seconds = _parse_seconds(text)
    if seconds == 0:
        raise ValueError("must be greater than 0")
    return seconds


def _parse_choice(choices: Sequence[str]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        lowered = text.strip().lower()
        if lowered not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return lowered

    return parse


def _parse_text(text: str) -> str:
    return text  # kept verbatim, as the official server does (trailing spaces included)


def _parse_path(text: str) -> Path:
    stripped = text.strip()
    if not stripped:
        raise ValueError("empty path")
    return Path(stripped)


def _parse_web_port(text: str) -> int | None:
    # "off" and 0 switch the web viewer off (0 is no ephemeral port here: nobody could find it).
    stripped = text.strip()
    if stripped.lower() in ("off", "0", ""):
        return None
    return _parse_port(stripped)


def _parse_host(text: str) -> str:
    stripped = text.strip()
    if not stripped:
        raise ValueError("empty host")
    return stripped


@dataclass(frozen=True)
class _Option:
    attribute: str  # Settings field, or "local"/"plugins" which are not fields
    key: str  # server.properties key
    flags: tuple[str, ...]  # command-line spellings ("" = no flag)
    parse: Callable[[str], Any]
    help: str
    metavar: str = "VALUE"


_OPTIONS = (
    _Option("password", "password", ("--password",), _parse_text, "admin password", "PW"),
    _Option("port", "port", ("-p", "--port"), _parse_port, "listen port (default 13050)", "N"),
    _Option("paused", "paused", (), _parse_bool, "start <join> rooms paused"),
    _Option("timeout", "timeout", (), _parse_bool, "players of <join> rooms can time out"),
    _Option("local", "local", (), _parse_bool, "listen on loopback only (default true)"),
    _Option("save_replay", "saveReplay", (), _parse_bool, "write replays"),
    _Option(
        "load_game_file",
        "loadGameFile",
        ("--loadGameFile", "--load-game-file"),
        _parse_path,
        "start <join> rooms from this replay (.xml or .gz)",
        "PATH",
    ),
    _Option(
        "turn",
        "turn",
        ("--turn",),
        _parse_non_negative_int,
        "with --loadGameFile: start at the first state with turn >= N",
        "N",
    ),
    _Option("plugins", "plugins", ("--plugins",), _parse_text, "accepted and ignored", "DIR"),
    # Our own settings.
    _Option("host", "host", ("--host",), _parse_host, "listen address (overrides local)", "ADDR"),
    _Option(
        "replay_dir",
        "replayDir",
        ("--replay-dir", "--replayDir"),
        _parse_path,
        "directory for replays (default ./replays)",
        "DIR",
    ),
    _Option(
        "results_file",
        "resultsFile",
        ("--results", "--resultsFile"),
        _parse_path,
        "append one JSON line per finished game to FILE",
        "FILE",
    ),
    _Option(
        "log_format",
        "logFormat",
        ("--log-format", "--logFormat"),
        _parse_choice(("console", "json")),
        "console (default) or json lines",
        "FORMAT",
    ),
    _Option(
        "log_level",
        "logLevel",
        ("--log-level", "--logLevel"),
        _parse_choice(LOG_LEVELS),
        "debug, info (default), warning, error or critical",
        "LEVEL",
    ),
    _Option(
        "soft_timeout",
        "softTimeout",
        ("--soft-timeout", "--softTimeout"),
        _parse_positive_seconds,
        "seconds per move before a soft timeout (default 2)",
        "SECONDS",
    ),
    _Option(
        "hard_timeout",
        "hardTimeout",
        ("--hard-timeout", "--hardTimeout"),
        _parse_positive_seconds,
        "seconds per move before a hard timeout (default 10)",
        "SECONDS",
    ),
    _Option(
        "idle_timeout",
        "idleTimeout",
        ("--idle-timeout", "--idleTimeout"),
        _parse_seconds,
        "close connections idle outside any room after this (default 600, 0 = never)",
        "SECONDS",
    ),
    _Option(
        "reservation_ttl",
        "reservationTtl",
        ("--reservation-ttl", "--reservationTtl"),
        _parse_seconds,
        "prepared rooms nobody joins expire after this (default 3600, 0 = never)",
        "SECONDS",
    ),
    _Option(
        "game_wall_clock_limit",
        "gameWallClockLimit",
        ("--game-wall-clock-limit", "--gameWallClockLimit"),
        _parse_seconds,
        "a running game is ended after this (default 3600, 0 = never)",
        "SECONDS",
    ),
    _Option(
        "max_packet_bytes",
        "maxPacketBytes",
        ("--max-packet-bytes", "--maxPacketBytes"),
        _positive_int(1024),
        "largest accepted client packet in bytes (default 65536)",
        "N",
    ),
    _Option(
        "send_buffer_messages",
        "sendBufferMessages",
        ("--send-buffer-messages", "--sendBufferMessages"),
        _positive_int(1),
        "queued messages before a client that does not read is dropped (default 1000)",
        "N",
    ),
    _Option(
        "web_port",
        "webPort",
        ("--web-port", "--webPort"),
        _parse_web_port,
        "serve the web viewer (watch, replay, play, admin) on this port (default off; 0/off = off)",
        "N",
    ),
    _Option(
        "web_host",
        "webHost",
        ("--web-host", "--webHost"),
        _parse_host,
        "listen address of the web viewer (default 127.0.0.1)",
        "ADDR",
    ),
)
# Keys are case-sensitive, as in java.util.Properties.
_BY_KEY = {option.key: option for option in _OPTIONS}

# Command-line-only settings: handled below, not through _OPTIONS.
_BOOL_FLAGS = {
    "paused": ("--paused",),
    "save_replay": ("--saveReplay", "--save-replay"),
}


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"command line: {message} (see --help)")


def build_argument_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(
        prog="piranhas-server",
        description=(
            "Game server for the Software-Challenge game Piranhas (swc_2026_piranhas), "
            "compatible with the official server 26.1.0. Reads server.properties from the "
            "working directory; a flag given here wins over the file."
        ),
        epilog=(
            "Every setting also has a server.properties key: the official keys password, "
            "port, paused, timeout, local, saveReplay, loadGameFile, turn, and our own in "
            "camelCase (resultsFile, logFormat, softTimeout, ...); see "
            "server.properties.example. Exit status 2 means a bad setting."
        ),
        argument_default=argparse.SUPPRESS,
        allow_abbrev=False,
    )
    parser.add_argument(
        "--properties",
        metavar="PATH",
        help="read this properties file instead of ./server.properties",
    )
    parser.add_argument(
        "--no-timeout",
        dest="timeout",
        action="store_const",
        const="false",
        help="players of <join> rooms never time out",
    )
    parser.add_argument(
        "--paused",
        nargs="?",
        const="true",
        metavar="true|false",
        help="start rooms created by <join> paused",
    )
    parser.add_argument(
        "--saveReplay",
        "--save-replay",
        dest="save_replay",
        nargs="?",
        const="true",
        metavar="true|false",
        help="write a replay of every game (official file names) into the replay directory",
    )
    for option in _OPTIONS:
        if option.flags:
            parser.add_argument(
                *option.flags, dest=option.attribute, metavar=option.metavar, help=option.help
            )
    return parser


# ---------------------------------------------------------------------------------------------
# Loading


def load_settings(argv: Sequence[str], cwd: Path) -> Settings:
    """Settings from the properties file and `argv` (without the program name)."""
    settings, _warnings = parse_settings(argv, cwd)
    return settings


def parse_settings(argv: Sequence[str], cwd: Path) -> tuple[Settings, list[str]]:
    """Like `load_settings`, also returning warnings to log once logging is configured.
    `--help` raises SystemExit(0) after printing the help."""
    arguments = vars(build_argument_parser().parse_args(list(argv)))
    warnings: list[str] = []
    values: dict[str, Any] = {}
    # attribute -> where it came from, for messages about combinations of values
    sources: dict[str, str] = {}

    properties_argument = arguments.pop("properties", None)
    if properties_argument is not None:
        properties_path = cwd / properties_argument
        text = _read_properties(properties_path, required=True)
    else:
        properties_path = cwd / PROPERTIES_FILE
        try:
            text = _read_properties(properties_path, required=False)
        except ConfigError as error:
            # The official server falls back to its defaults when the file is unreadable.
            warnings.append(f"{error}; using the defaults")
            text = None

    if text is None:
        values["password"] = DEFAULT_PASSWORD
    else:
        values["password"] = None
        try:
            properties = parse_properties(text)
        except ValueError as error:
            raise ConfigError(f"{properties_path}: {error}") from None
        for prop in properties:
            where = f"{properties_path}:{prop.line}"
            option = _BY_KEY.get(prop.key)
            if option is None:
                warnings.append(f"{where}: unknown key {prop.key!r} ignored")
                continue
            source = f"{where}: {prop.key}"
            values[option.attribute] = _convert(option.parse, prop.value, source)
            sources[option.attribute] = source

    for attribute, raw in arguments.items():
        flag = _flag_name(attribute)
        parse = _parser_for(attribute)
        source = f"command line: {flag}"
        values[attribute] = _convert(parse, raw, source)
        sources[attribute] = source

    if values["password"] is None:
        warnings.append(
            f"{properties_path} sets no password: admin login is disabled, "
            "every <authenticate> fails (add 'password = ...' or use --password)"
        )

    values.pop("plugins", None)
    local = values.pop("local", True)
    if "host" not in values:
        values["host"] = "127.0.0.1" if local else "0.0.0.0"
    if values.get("password") == DEFAULT_PASSWORD and values["host"] not in (
        "127.0.0.1",
        "localhost",
        "::1",
    ):
        warnings.append(
            f"listening on {values['host']} with the well-known default password "
            f"{DEFAULT_PASSWORD!r}: set a password of your own"
        )

    if values.get("web_port") is not None and values.get("web_host", "127.0.0.1") not in (
        "127.0.0.1",
        "localhost",
        "::1",
    ):
        warnings.append(
            f"the web viewer listens on {values['web_host']}: anyone who reaches it can watch "
            "every game and try the admin password; prefer 127.0.0.1 behind a reverse proxy"
        )

    for path_attribute in ("replay_dir", "load_game_file", "results_file"):
        if path_attribute in values:
            values[path_attribute] = cwd / values[path_attribute]
    values.setdefault("replay_dir", cwd / "replays")

    settings = Settings(**values)
    if settings.soft_timeout > settings.hard_timeout:
        raise ConfigError(
            f"soft timeout {settings.soft_timeout:g} s ({sources.get('soft_timeout', 'default')}) "
            f"exceeds hard timeout {settings.hard_timeout:g} s "
            f"({sources.get('hard_timeout', 'default')})"
        )
    # Problems that would otherwise only show after the first game, when results are lost.
    try:
        if settings.results_file is not None:
            _check_writable_file(settings.results_file, "results file", sources["results_file"])
        if settings.save_replay:
            _check_writable_directory(
                settings.replay_dir, "replay directory", sources.get("replay_dir", "default")
            )
    except OSError as error:
        raise ConfigError(f"cannot check {error.filename}: {error.strerror}") from None
    if settings.load_game_file is not None:
        from server.replays import load_start_state

        start_state = load_start_state(settings.load_game_file, settings.turn)
        settings = replace(settings, start_state=start_state)
        if start_state.is_over:
            warnings.append(
                f"loadGameFile {settings.load_game_file}: the game is already over at turn "
                f"{start_state.turn}; every game started from it ends at once"
            )
    elif "turn" in sources:
        warnings.append(f"{sources['turn']} is ignored without loadGameFile")
    return settings, warnings


def _check_writable_file(path: Path, what: str, source: str) -> None:
    if path.is_dir():
        raise ConfigError(f"{source}: {what} {path} is a directory")
    if path.exists():
        if not os.access(path, os.W_OK):
            raise ConfigError(f"{source}: {what} {path} is not writable")
        return
    _check_writable_directory(path.parent, f"directory of the {what}", source)


def _check_writable_directory(path: Path, what: str, source: str) -> None:
    """`path` is a writable directory or can be created (its nearest existing ancestor is a
    writable directory)."""
    existing = path
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"{source}: {what} {path}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"{source}: {what} {path}: {existing} is not writable")


def _read_properties(path: Path, *, required: bool) -> str | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if required:
            raise ConfigError(f"properties file {path} does not exist") from None
        return None
    except OSError as error:
        raise ConfigError(f"cannot read properties file {path}: {error.strerror}") from None
    try:
        # utf-8-sig: editors on Windows put a byte-order mark in front of the first key.
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        # java.util.Properties reads ISO-8859-1; accept such files too.
        return data.decode("latin-1")


def _convert(parse: Callable[[str], Any], raw: str, where: str) -> Any:
    try:
        return parse(raw)
    except ValueError as error:
        raise ConfigError(f"{where} = {raw!r}: {error}") from None


def _flag_name(attribute: str) -> str:
    if attribute == "timeout":
        return "--no-timeout"
    if attribute in _BOOL_FLAGS:
        return _BOOL_FLAGS[attribute][0]
    for option in _OPTIONS:
        if option.attribute == attribute:
            return option.flags[-1] if option.flags[0] == "-p" else option.flags[0]
    return f"--{attribute}"


def _parser_for(attribute: str) -> Callable[[str], Any]:
    if attribute in ("timeout", *_BOOL_FLAGS):
        return _parse_bool
    return next(option.parse for option in _OPTIONS if option.attribute == attribute)


def property_keys() -> list[str]:
    """All keys understood in server.properties, official ones first."""
    return [option.key for option in _OPTIONS]
