"""Every setting's `server.properties` key and command-line flag, with its parser and help:
one table (`OPTIONS`) that both the properties file and the command line are read through."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from protocol.limits import DEFAULT_MAX_PACKET_BYTES
from server.values import (
    ConfigError,
    parse_addresses,
    parse_bool,
    parse_choice,
    parse_host,
    parse_non_negative_int,
    parse_path,
    parse_play_bots,
    parse_port,
    parse_positive_seconds,
    parse_seconds,
    parse_text,
    parse_web_port,
    positive_int,
)

LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


@dataclass(frozen=True)
class Option:
    """One setting: its Settings field, properties key, flags, parser and help."""

    attribute: str  # Settings field, or "local"/"plugins" which are not fields
    key: str  # server.properties key
    flags: tuple[str, ...]  # command-line spellings ("" = no flag)
    parse: Callable[[str], Any]
    help: str
    metavar: str = "VALUE"


OPTIONS = (
    Option("password", "password", ("--password",), parse_text, "admin password", "PW"),
    Option("port", "port", ("-p", "--port"), parse_port, "listen port (default 13050)", "N"),
    Option("paused", "paused", (), parse_bool, "start <join> rooms paused"),
    Option("timeout", "timeout", (), parse_bool, "players of <join> rooms can time out"),
    Option("local", "local", (), parse_bool, "listen on loopback only (default true)"),
    Option("save_replay", "saveReplay", (), parse_bool, "write replays"),
    Option(
        "load_game_file",
        "loadGameFile",
        ("--loadGameFile", "--load-game-file"),
        parse_path,
        "start <join> rooms from this replay (.xml or .gz)",
        "PATH",
    ),
    Option(
        "turn",
        "turn",
        ("--turn",),
        parse_non_negative_int,
        "with --loadGameFile: start at the first state with turn >= N",
        "N",
    ),
    Option("plugins", "plugins", ("--plugins",), parse_text, "accepted and ignored", "DIR"),
    # Our own settings.
    Option("host", "host", ("--host",), parse_host, "listen address (overrides local)", "ADDR"),
    Option(
        "replay_dir",
        "replayDir",
        ("--replay-dir", "--replayDir"),
        parse_path,
        "directory for replays (default ./replays)",
        "DIR",
    ),
    Option(
        "results_file",
        "resultsFile",
        ("--results", "--resultsFile"),
        parse_path,
        "append one JSON line per finished game to FILE",
        "FILE",
    ),
    Option(
        "log_format",
        "logFormat",
        ("--log-format", "--logFormat"),
        parse_choice(("console", "json")),
        "console (default) or json lines",
        "FORMAT",
    ),
    Option(
        "log_level",
        "logLevel",
        ("--log-level", "--logLevel"),
        parse_choice(LOG_LEVELS),
        "debug, info (default), warning, error or critical",
        "LEVEL",
    ),
    Option(
        "soft_timeout",
        "softTimeout",
        ("--soft-timeout", "--softTimeout"),
        parse_positive_seconds,
        "seconds per move before a soft timeout (default 2)",
        "SECONDS",
    ),
    Option(
        "hard_timeout",
        "hardTimeout",
        ("--hard-timeout", "--hardTimeout"),
        parse_positive_seconds,
        "seconds per move before a hard timeout (default 10)",
        "SECONDS",
    ),
    Option(
        "idle_timeout",
        "idleTimeout",
        ("--idle-timeout", "--idleTimeout"),
        parse_seconds,
        "close connections idle outside any room after this (default 600, 0 = never)",
        "SECONDS",
    ),
    Option(
        "reservation_ttl",
        "reservationTtl",
        ("--reservation-ttl", "--reservationTtl"),
        parse_seconds,
        "prepared rooms nobody joins expire after this (default 3600, 0 = never)",
        "SECONDS",
    ),
    Option(
        "game_wall_clock_limit",
        "gameWallClockLimit",
        ("--game-wall-clock-limit", "--gameWallClockLimit"),
        parse_seconds,
        "a running game is ended after this (default 3600, 0 = never)",
        "SECONDS",
    ),
    Option(
        "max_packet_bytes",
        "maxPacketBytes",
        ("--max-packet-bytes", "--maxPacketBytes"),
        positive_int(1024),
        f"largest accepted client packet in bytes (default {DEFAULT_MAX_PACKET_BYTES})",
        "N",
    ),
    Option(
        "send_buffer_messages",
        "sendBufferMessages",
        ("--send-buffer-messages", "--sendBufferMessages"),
        positive_int(1),
        "queued messages before a client that does not read is dropped (default 1000)",
        "N",
    ),
    # Admission limits.
    Option(
        "max_connections",
        "maxConnections",
        ("--max-connections", "--maxConnections"),
        positive_int(1),
        "open connections in total; lowered to fit the descriptor limit (default 1000)",
        "N",
    ),
    Option(
        "max_connections_per_address",
        "maxConnectionsPerAddress",
        ("--max-connections-per-address", "--maxConnectionsPerAddress"),
        positive_int(1),
        "open connections per remote address, loopback exempt (default 64)",
        "N",
    ),
    Option(
        "per_address_limit_on_loopback",
        "perAddressLimitOnLoopback",
        ("--per-address-limit-on-loopback", "--perAddressLimitOnLoopback"),
        parse_bool,
        "apply maxConnectionsPerAddress to loopback clients too (default false)",
        "true|false",
    ),
    Option(
        "max_rooms",
        "maxRooms",
        ("--max-rooms", "--maxRooms"),
        positive_int(1),
        "open rooms in total (default 1000)",
        "N",
    ),
    Option(
        "max_prepared_rooms",
        "maxPreparedRooms",
        ("--max-prepared-rooms", "--maxPreparedRooms"),
        positive_int(1),
        "prepared rooms not started yet (default 500)",
        "N",
    ),
    Option(
        "max_rooms_per_connection",
        "maxRoomsPerConnection",
        ("--max-rooms-per-connection", "--maxRoomsPerConnection"),
        positive_int(1),
        "rooms one connection plays in at once (default 4)",
        "N",
    ),
    Option(
        "login_failures",
        "loginFailures",
        ("--login-failures", "--loginFailures"),
        positive_int(1),
        "failed admin logins per address within loginFailureWindow before a lockout (default 5)",
        "N",
    ),
    Option(
        "login_failure_window",
        "loginFailureWindow",
        ("--login-failure-window", "--loginFailureWindow"),
        parse_positive_seconds,
        "seconds in which loginFailures failures lock an address out (default 60)",
        "SECONDS",
    ),
    Option(
        "login_lockout",
        "loginLockout",
        ("--login-lockout", "--loginLockout"),
        parse_seconds,
        "seconds an address is refused admin login after too many failures (default 300)",
        "SECONDS",
    ),
    Option(
        "login_failure_delay",
        "loginFailureDelay",
        ("--login-failure-delay", "--loginFailureDelay"),
        parse_seconds,
        "seconds before a failed admin login is answered (default 1)",
        "SECONDS",
    ),
    Option(
        "unix_socket",
        "unixSocket",
        ("--unix-socket", "--unixSocket"),
        parse_path,
        "also listen on this Unix domain socket (e.g. for bots in containers)",
        "PATH",
    ),
    # Per-connection limits against hostile clients.
    Option(
        "send_buffer_bytes",
        "sendBufferBytes",
        ("--send-buffer-bytes", "--sendBufferBytes"),
        positive_int(65536),
        "bytes queued for a client that does not read before it is dropped (default 4 MiB)",
        "N",
    ),
    Option(
        "send_deadline",
        "sendDeadline",
        ("--send-deadline", "--sendDeadline"),
        parse_positive_seconds,
        "a client must take all queued bytes within this, or it is dropped (default 30)",
        "SECONDS",
    ),
    Option(
        "protocol_deadline",
        "protocolDeadline",
        ("--protocol-deadline", "--protocolDeadline"),
        parse_seconds,
        "a new connection must send <protocol> within this (default 10, 0 = never)",
        "SECONDS",
    ),
    Option(
        "packet_deadline",
        "packetDeadline",
        ("--packet-deadline", "--packetDeadline"),
        parse_seconds,
        "a connection in no room must finish a started packet within this (default 30, 0 = never)",
        "SECONDS",
    ),
    Option(
        "max_refusals",
        "maxRefusals",
        ("--max-refusals", "--maxRefusals"),
        positive_int(1),
        "refused requests a connection in no room gets before it is closed (default 20)",
        "N",
    ),
    Option(
        "web_port",
        "webPort",
        ("--web-port", "--webPort"),
        parse_web_port,
        "serve the web viewer (watch, replay, play, admin) on this port (default off; 0/off = off)",
        "N",
    ),
    Option(
        "web_host",
        "webHost",
        ("--web-host", "--webHost"),
        parse_host,
        "listen address of the web viewer (default 127.0.0.1)",
        "ADDR",
    ),
    Option(
        "web_max_connections",
        "webMaxConnections",
        ("--web-max-connections", "--webMaxConnections"),
        positive_int(1),
        "connections to the web viewer at once, WebSockets included (default 1000)",
        "N",
    ),
    Option(
        "web_max_connections_per_address",
        "webMaxConnectionsPerAddress",
        ("--web-max-connections-per-address", "--webMaxConnectionsPerAddress"),
        positive_int(1),
        "web viewer connections per remote address (default 64; loopback exempt, as the game port)",
        "N",
    ),
    Option(
        "web_trusted_proxies",
        "webTrustedProxies",
        ("--web-trusted-proxies", "--webTrustedProxies"),
        parse_addresses,
        "reverse proxies (comma-separated addresses) whose X-Forwarded-For/-Proto are believed",
        "ADDR,...",
    ),
    Option(
        "web_play_bots",
        "webPlayBots",
        ("--web-play-bots", "--webPlayBots"),
        parse_play_bots,
        'bot commands "play from here" may start besides the built-in bots: NAME=COMMAND;... '
        "(default none)",
        "NAME=CMD;...",
    ),
    Option(
        "web_play_max_games",
        "webPlayMaxGames",
        ("--web-play-max-games", "--webPlayMaxGames"),
        positive_int(1),
        '"play from here" games (each a bot process) at once (default 4)',
        "N",
    ),
    Option(
        "web_play_max_games_per_address",
        "webPlayMaxGamesPerAddress",
        ("--web-play-max-games-per-address", "--webPlayMaxGamesPerAddress"),
        positive_int(1),
        '"play from here" games at once per remote address (default 1; loopback exempt, '
        "as the game port)",
        "N",
    ),
    Option(
        "web_league",
        "webLeague",
        ("--web-league", "--webLeague"),
        parse_path,
        "show this league (its league file) on the web viewer's /league pages (default none)",
        "FILE.toml",
    ),
    Option(
        "web_league_db",
        "webLeagueDb",
        ("--web-league-db", "--webLeagueDb"),
        parse_path,
        "the store of --web-league, read only (default: the league file's database)",
        "FILE",
    ),
)
# Keys are case-sensitive, as in java.util.Properties.
BY_KEY = {option.key: option for option in OPTIONS}

# Command-line-only settings: handled below, not through OPTIONS.
BOOL_FLAGS = {
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
    for option in OPTIONS:
        if option.flags:
            parser.add_argument(
                *option.flags, dest=option.attribute, metavar=option.metavar, help=option.help
            )
    return parser


def flag_name(attribute: str) -> str:
    """The flag that sets `attribute`, for messages about command-line values."""
    if attribute == "timeout":
        return "--no-timeout"
    if attribute in BOOL_FLAGS:
        return BOOL_FLAGS[attribute][0]
    for option in OPTIONS:
        if option.attribute == attribute:
            return option.flags[-1] if option.flags[0] == "-p" else option.flags[0]
    return f"--{attribute}"


def parser_for(attribute: str) -> Callable[[str], Any]:
    """The parser for the value of `attribute` as given on the command line."""
    if attribute in ("timeout", *BOOL_FLAGS):
        return parse_bool
    return next(option.parse for option in OPTIONS if option.attribute == attribute)


def property_keys() -> list[str]:
    """All keys understood in server.properties, official ones first."""
    return [option.key for option in OPTIONS]
