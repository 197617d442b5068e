"""Server settings from `server.properties` and the command line.

The file uses the Java properties format and the official keys (§7.1); our own settings
use camelCase keys. Unlike the official server, a flag given on the command line wins over the
file. Every bad value raises `ConfigError` with a message naming the key or flag, the value and
where it came from; the CLI prints it and exits with status 2.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, NoReturn

from engine import GameState
from protocol.limits import DEFAULT_MAX_PACKET_BYTES
from server.properties import parse_properties
from server.replays import ReplayLoadError, load_start_state

PROPERTIES_FILE = "server.properties"
DEFAULT_PASSWORD = "examplepassword"
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


class ConfigError(Exception):
    """A setting has a bad value; the message says which, what and where."""


@dataclass(frozen=True)
class Settings:
    """Every setting of the server, with its default. Built by `load_settings`; every field
    has a `server.properties` key and a command-line flag (README, "Settings")."""

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
    max_packet_bytes: int = DEFAULT_MAX_PACKET_BYTES
    send_buffer_messages: int = 1000
    # Admission limits (README "Limits"): every resource a client can claim is bounded.
    max_connections: int = 1000
    max_connections_per_address: int = 64
    per_address_limit_on_loopback: bool = False
    max_rooms: int = 1000
    max_prepared_rooms: int = 500
    max_rooms_per_connection: int = 4
    login_failures: int = 5
    login_failure_window: float = 60.0
    login_lockout: float = 300.0
    login_failure_delay: float = 1.0
    # Also listen on this Unix domain socket (bots in containers without a network reach the
    # server through it: docs/sandbox.md).
    unix_socket: Path | None = None
    # Per-connection limits against hostile clients (README "Hardening").
    send_buffer_bytes: int = 4 * 1024 * 1024
    send_deadline: float = 30.0
    protocol_deadline: float = 10.0
    packet_deadline: float = 30.0
    max_refusals: int = 20
    # The web viewer (web/): its port (None = off, the default) and listen address.
    web_port: int | None = None
    web_host: str = "127.0.0.1"
    # A league the viewer shows (/league): its league file and store (None = the file's
    # `database`). Only read by web/, which opens the store read-only.
    web_league: Path | None = None
    web_league_db: Path | None = None
    # The state loaded from `load_game_file` at `turn` (validated once at start-up, so every
    # room can reuse it); None without a load_game_file.
    start_state: GameState | None = field(default=None, compare=False, repr=False)


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
        f"largest accepted client packet in bytes (default {DEFAULT_MAX_PACKET_BYTES})",
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
    # Admission limits.
    _Option(
        "max_connections",
        "maxConnections",
        ("--max-connections", "--maxConnections"),
        _positive_int(1),
        "open connections in total; lowered to fit the descriptor limit (default 1000)",
        "N",
    ),
    _Option(
        "max_connections_per_address",
        "maxConnectionsPerAddress",
        ("--max-connections-per-address", "--maxConnectionsPerAddress"),
        _positive_int(1),
        "open connections per remote address, loopback exempt (default 64)",
        "N",
    ),
    _Option(
        "per_address_limit_on_loopback",
        "perAddressLimitOnLoopback",
        ("--per-address-limit-on-loopback", "--perAddressLimitOnLoopback"),
        _parse_bool,
        "apply maxConnectionsPerAddress to loopback clients too (default false)",
        "true|false",
    ),
    _Option(
        "max_rooms",
        "maxRooms",
        ("--max-rooms", "--maxRooms"),
        _positive_int(1),
        "open rooms in total (default 1000)",
        "N",
    ),
    _Option(
        "max_prepared_rooms",
        "maxPreparedRooms",
        ("--max-prepared-rooms", "--maxPreparedRooms"),
        _positive_int(1),
        "prepared rooms not started yet (default 500)",
        "N",
    ),
    _Option(
        "max_rooms_per_connection",
        "maxRoomsPerConnection",
        ("--max-rooms-per-connection", "--maxRoomsPerConnection"),
        _positive_int(1),
        "rooms one connection plays in at once (default 4)",
        "N",
    ),
    _Option(
        "login_failures",
        "loginFailures",
        ("--login-failures", "--loginFailures"),
        _positive_int(1),
        "failed admin logins per address within loginFailureWindow before a lockout (default 5)",
        "N",
    ),
    _Option(
        "login_failure_window",
        "loginFailureWindow",
        ("--login-failure-window", "--loginFailureWindow"),
        _parse_positive_seconds,
        "seconds in which loginFailures failures lock an address out (default 60)",
        "SECONDS",
    ),
    _Option(
        "login_lockout",
        "loginLockout",
        ("--login-lockout", "--loginLockout"),
        _parse_seconds,
        "seconds an address is refused admin login after too many failures (default 300)",
        "SECONDS",
    ),
    _Option(
        "login_failure_delay",
        "loginFailureDelay",
        ("--login-failure-delay", "--loginFailureDelay"),
        _parse_seconds,
        "seconds before a failed admin login is answered (default 1)",
        "SECONDS",
    ),
    _Option(
        "unix_socket",
        "unixSocket",
        ("--unix-socket", "--unixSocket"),
        _parse_path,
        "also listen on this Unix domain socket (e.g. for bots in containers)",
        "PATH",
    ),
    # Per-connection limits against hostile clients.
    _Option(
        "send_buffer_bytes",
        "sendBufferBytes",
        ("--send-buffer-bytes", "--sendBufferBytes"),
        _positive_int(65536),
        "bytes queued for a client that does not read before it is dropped (default 4 MiB)",
        "N",
    ),
    _Option(
        "send_deadline",
        "sendDeadline",
        ("--send-deadline", "--sendDeadline"),
        _parse_positive_seconds,
        "a client must take all queued bytes within this, or it is dropped (default 30)",
        "SECONDS",
    ),
    _Option(
        "protocol_deadline",
        "protocolDeadline",
        ("--protocol-deadline", "--protocolDeadline"),
        _parse_seconds,
        "a new connection must send <protocol> within this (default 10, 0 = never)",
        "SECONDS",
    ),
    _Option(
        "packet_deadline",
        "packetDeadline",
        ("--packet-deadline", "--packetDeadline"),
        _parse_seconds,
        "a connection in no room must finish a started packet within this (default 30, 0 = never)",
        "SECONDS",
    ),
    _Option(
        "max_refusals",
        "maxRefusals",
        ("--max-refusals", "--maxRefusals"),
        _positive_int(1),
        "refused requests a connection in no room gets before it is closed (default 20)",
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
    _Option(
        "web_league",
        "webLeague",
        ("--web-league", "--webLeague"),
        _parse_path,
        "show this league (its league file) on the web viewer's /league pages (default none)",
        "FILE.toml",
    ),
    _Option(
        "web_league_db",
        "webLeagueDb",
        ("--web-league-db", "--webLeagueDb"),
        _parse_path,
        "the store of --web-league, read only (default: the league file's database)",
        "FILE",
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
    """The command line of `piranhas-server` (official flags and ours); values stay text,
    `parse_settings` converts them with the same parsers as the properties file."""
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

    for path_attribute in (
        "replay_dir",
        "load_game_file",
        "results_file",
        "unix_socket",
        "web_league",
        "web_league_db",
    ):
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
        settings = with_start_state(settings)
        start_state = settings.start_state
        assert start_state is not None
        if start_state.is_over:
            warnings.append(
                f"loadGameFile {settings.load_game_file}: the game is already over at turn "
                f"{start_state.turn}; every game started from it ends at once"
            )
    elif "turn" in sources:
        warnings.append(f"{sources['turn']} is ignored without loadGameFile")
    return settings, warnings


def with_start_state(settings: Settings) -> Settings:
    """`settings` with `start_state` loaded from `load_game_file` at `turn`, unless it is
    loaded already or there is no file: the one place that reads the loadGameFile (settings
    built in code, e.g. by tests, come through here too). Raises ConfigError."""
    if settings.load_game_file is None or settings.start_state is not None:
        return settings
    try:
        start_state = load_start_state(settings.load_game_file, settings.turn)
    except ReplayLoadError as error:
        raise ConfigError(str(error)) from None
    return replace(settings, start_state=start_state)


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
