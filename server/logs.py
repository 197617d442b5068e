"""Logging: structlog to stderr, readable console lines or JSON lines."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import TextIO

import structlog

# A logged value (often from client input: a refused request, an error message) is cut to this
# many characters, so a large packet cannot make the log many times its own size.
MAX_LOGGED_CHARS = 300

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}


def configure_logging(
    fmt: str, level: str, *, stream: TextIO | None = None, cache: bool = True
) -> None:
    """Log events at `level` and above to `stream` (stderr): `fmt` "console" gives readable
    lines, coloured only on a terminal; "json" gives one JSON object per line. `cache=False`
    lets tests reconfigure loggers that were already used."""
    if fmt not in ("console", "json"):
        raise ValueError(f"unknown log format {fmt!r}")
    numeric_level = _LEVELS.get(level.lower())
    if numeric_level is None:
        raise ValueError(f"unknown log level {level!r}")
    output = stream if stream is not None else sys.stderr

    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        bound_values,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=fmt == "json"),
    ]
    renderer: structlog.typing.Processor
    if fmt == "json":
        shared += [structlog.processors.dict_tracebacks]
        renderer = structlog.processors.JSONRenderer(ensure_ascii=False)
    elif _is_terminal(output):
        shared += [structlog.dev.set_exc_info]
        renderer = structlog.dev.ConsoleRenderer(colors=True)
    else:
        # Not a terminal (a file, a pipe, docker logs): the same layout without colours from a
        # renderer about four times cheaper than ConsoleRenderer; the server logs every move.
        shared += [structlog.processors.format_exc_info]
        renderer = _render_plain

    structlog.configure(
        processors=[*shared, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric_level),
        logger_factory=structlog.PrintLoggerFactory(file=output),
        cache_logger_on_first_use=cache,
    )
    # Libraries (trio, asyncio, ...) log through the standard library: same stream and level.
    logging.basicConfig(
        level=numeric_level,
        stream=output,
        format="%(asctime)s [%(levelname)-8s] %(name)s: %(message)s",
        force=True,
    )


def bound_values(
    _logger: object, _method: str, event_dict: structlog.typing.EventDict
) -> structlog.typing.EventDict:
    """Cut every text value longer than MAX_LOGGED_CHARS, saying how much was left out.
    Other values are the server's own (numbers, names) and stay as they are."""
    for key, value in event_dict.items():
        if isinstance(value, str) and len(value) > MAX_LOGGED_CHARS:
            event_dict[key] = truncate(value)
    return event_dict


def truncate(text: str, limit: int = MAX_LOGGED_CHARS) -> str:
    """`text` cut to `limit` characters plus a note of the characters left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[{len(text) - limit} more chars]"


def _render_plain(_logger: object, _method: str, event_dict: structlog.typing.EventDict) -> str:
    timestamp = event_dict.pop("timestamp", "")
    level = event_dict.pop("level", "")
    event = event_dict.pop("event", "")
    exception = event_dict.pop("exception", None)
    fields = " ".join([f"{key}={_plain_value(value)}" for key, value in event_dict.items()])
    line = f"{timestamp} [{level:<9}] {event!s:<30} {fields}".rstrip()
    return f"{line}\n{exception}" if exception else line


def _plain_value(value: object) -> str:
    if isinstance(value, str):
        # Quote only what would be ambiguous in key=value form.
        return value if value and " " not in value and "=" not in value else repr(value)
    return repr(value)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def logging_to(stream: TextIO, level: str, fmt: str = "console") -> Iterator[None]:
    """`configure_logging(fmt, level, stream=stream)` for the time of the block; afterwards the
    logging is exactly what it was: structlog's configuration and the standard library's root
    handlers and level (an embedding program's, a worker's, a test's). basicConfig(force=True)
    would close the root handlers it replaces, so they are taken off before and put back after
    (a closed handler would fail with "I/O operation on closed file" on the next record)."""
    previous = structlog.get_config()
    root = logging.getLogger()
    handlers, root_level = root.handlers[:], root.level
    for handler in handlers:
        root.removeHandler(handler)
    configure_logging(fmt, level, stream=stream, cache=False)
    try:
        yield
    finally:
        for handler in root.handlers[:]:
            root.removeHandler(handler)
            handler.close()
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(root_level)
        structlog.configure(**previous)
