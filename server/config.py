"""Server settings from `server.properties` and the command line.

`Settings` is every setting with its default; `load_settings` reads them. The pieces live beside
it: `server.properties` (the Java properties format), `server.options` (the table of keys and
flags, and the command line), `server.values` (one parser per kind of value).

The file uses the Java properties format and the official keys (§7.1); our own settings
use camelCase keys. Unlike the official server, a flag given on the command line wins over the
file. Every bad value raises `ConfigError` with a message naming the key or flag, the value and
where it came from; the CLI prints it and exits with status 2.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from engine import GameState, last_move_problem
from protocol.limits import DEFAULT_MAX_PACKET_BYTES
from server.options import BY_KEY, build_argument_parser, flag_name, parser_for
from server.properties import parse_properties
from server.replays import ReplayLoadError, load_start_state
from server.values import ConfigError as ConfigError  # raised by everything here

PROPERTIES_FILE = "server.properties"
DEFAULT_PASSWORD = "examplepassword"


@dataclass(frozen=True)
class Settings:
    """Every setting of the server, with its default. Built by `load_settings`; every field
    has a `server.properties` key and a command-line flag (docs/server.md, "Settings")."""

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
    # Admission limits (docs/server.md, "Limits"): every resource a client can claim is bounded.
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
    # Per-connection limits against hostile clients (docs/hardening.md).
    send_buffer_bytes: int = 4 * 1024 * 1024
    send_deadline: float = 30.0
    protocol_deadline: float = 10.0
    packet_deadline: float = 30.0
    max_refusals: int = 20
    # The web viewer (web/): its port (None = off, the default) and listen address.
    web_port: int | None = None
    web_host: str = "127.0.0.1"
    # The web port's own admission limits (docs/web.md), and the reverse proxies whose
    # X-Forwarded-For/-Proto it believes.
    web_max_connections: int = 1000
    web_max_connections_per_address: int = 64
    web_trusted_proxies: tuple[str, ...] = ()
    # "Play from here" (web/playfrom.py): the bot commands it may start (name, command line)
    # besides the built-in bots, and how many such games (bot processes) may run at once.
    web_play_bots: tuple[tuple[str, str], ...] = ()
    web_play_max_games: int = 4
    web_play_max_games_per_address: int = 1
    # A league the viewer shows (/league): its league file and store (None = the file's
    # `database`). Only read by web/, which opens the store read-only.
    web_league: Path | None = None
    web_league_db: Path | None = None
    # The state loaded from `load_game_file` at `turn` (validated once at start-up, so every
    # room can reuse it); None without a load_game_file.
    start_state: GameState | None = field(default=None, compare=False, repr=False)


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
            option = BY_KEY.get(prop.key)
            if option is None:
                warnings.append(f"{where}: unknown key {prop.key!r} ignored")
                continue
            source = f"{where}: {prop.key}"
            values[option.attribute] = _convert(option.parse, prop.value, source)
            sources[option.attribute] = source

    for attribute, raw in arguments.items():
        flag = flag_name(attribute)
        parse = parser_for(attribute)
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
        wrong = last_move_problem(start_state)
        if wrong is not None:
            # The official server loads it as it is: a warning, not a refusal.
            warnings.append(
                f"loadGameFile {settings.load_game_file}: the last move of turn "
                f"{start_state.turn} cannot have led to its board ({wrong}); every game "
                f"started from it shows that move"
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
