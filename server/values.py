"""Parsers for setting values, shared by `server.properties` and the command line: each takes
the text as written and returns the value, or raises ValueError saying what is wrong (the
caller adds which key or flag and where it came from)."""

from __future__ import annotations

import ipaddress
import math
import re
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path


class ConfigError(Exception):
    """A setting has a bad value; the message says which, what and where."""


def parse_bool(text: str) -> bool:
    """`true` or `false` (any case, surrounding blanks allowed)."""
    lowered = text.strip().lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    raise ValueError("expected true or false")


def parse_int(text: str) -> int:
    """A whole number."""
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError("not an integer") from None


def parse_port(text: str) -> int:
    """A TCP port, 0 to 65535 (0 = any free port)."""
    port = parse_int(text)
    if not 0 <= port <= 65535:
        raise ValueError("a port must be between 0 and 65535")
    return port


def parse_non_negative_int(text: str) -> int:
    """A whole number, 0 or more."""
    number = parse_int(text)
    if number < 0:
        raise ValueError("must not be negative")
    return number


def positive_int(minimum: int) -> Callable[[str], int]:
    """A parser for whole numbers of at least `minimum`."""

    def parse(text: str) -> int:
        number = parse_int(text)
        if number < minimum:
            raise ValueError(f"must be at least {minimum}")
        return number

    return parse


def parse_seconds(text: str) -> float:
    """A finite, non-negative number of seconds (0 usually means never)."""
    try:
        seconds = float(text.strip())
    except ValueError:
        raise ValueError("not a number of seconds") from None
    if not math.isfinite(seconds):
        raise ValueError("must be a finite number of seconds")
    if seconds < 0:
        raise ValueError("must not be negative")
    return seconds


def parse_positive_seconds(text: str) -> float:
    """A finite number of seconds greater than 0."""
    seconds = parse_seconds(text)
    if seconds == 0:
        raise ValueError("must be greater than 0")
    return seconds


def parse_choice(choices: Sequence[str]) -> Callable[[str], str]:
    """A parser for one of `choices` (any case); returns it in lower case."""

    def parse(text: str) -> str:
        lowered = text.strip().lower()
        if lowered not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return lowered

    return parse


def parse_text(text: str) -> str:
    """The text as written."""
    return text  # kept verbatim, as the official server does (trailing spaces included)


def parse_path(text: str) -> Path:
    """A non-empty path (relative paths are resolved by the caller)."""
    stripped = text.strip()
    if not stripped:
        raise ValueError("empty path")
    return Path(stripped)


def parse_web_port(text: str) -> int | None:
    """A port for the web viewer, or None for off (`0` or `off`)."""
    # "off" and 0 switch the web viewer off (0 is no ephemeral port here: nobody could find it).
    stripped = text.strip()
    if stripped.lower() in ("off", "0", ""):
        return None
    return parse_port(stripped)


def parse_host(text: str) -> str:
    """A non-empty host name or address."""
    stripped = text.strip()
    if not stripped:
        raise ValueError("empty host")
    return stripped


def parse_addresses(text: str) -> tuple[str, ...]:
    """A comma-separated list of IP addresses ("" = none)."""
    addresses = tuple(part.strip() for part in text.split(",") if part.strip())
    for address in addresses:
        ipaddress.ip_address(address)  # ValueError names it
    return addresses


# Built-in bot names: a configured play bot may not shadow them (web/playfrom.py offers both).
BUILTIN_PLAY_BOTS = ("random", "greedy", "search")
_PLAY_BOT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")


def parse_play_bots(text: str) -> tuple[tuple[str, str], ...]:
    """`NAME=COMMAND; NAME=COMMAND …` ("" = none): the bot commands the web viewer's "play
    from here" may start (docs/viewer.md). A command is a shell-like line (shlex), run as a
    local process with `--host H --port P --reservation CODE` appended; `builtin:NAME …` runs
    a built-in bot. Checked here for form only: the viewer finds the program when it starts."""
    bots: list[tuple[str, str]] = []
    for part in text.split(";"):
        if not part.strip():
            continue
        name, equals, command = part.partition("=")
        name, command = name.strip(), command.strip()
        if not equals or not _PLAY_BOT_NAME.fullmatch(name):
            raise ValueError(
                f"{part.strip()!r}: expected NAME=COMMAND, NAME of letters, digits, . _ - "
                "(at most 40)"
            )
        if name in BUILTIN_PLAY_BOTS or any(name == known for known, _ in bots):
            raise ValueError(f"bot name {name!r} is taken (built-in or given twice)")
        try:
            argv = shlex.split(command)
        except ValueError as error:
            raise ValueError(f"{name}: cannot parse {command!r}: {error}") from None
        if not argv:
            raise ValueError(f"{name}: the command is empty")
        if argv[0].startswith("docker:"):
            raise ValueError(f"{name}: container players (docker:) are not offered for play")
        bots.append((name, command))
    return tuple(bots)
