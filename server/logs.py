"""Logging: structlog to stderr, readable console lines or JSON lines."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any, TextIO

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

    factory: Any = structlog.PrintLoggerFactory(file=output)
    if renderer is _render_plain and getattr(output, "line_buffering", False):
        factory = _BufferedLoggerFactory(output)
    structlog.configure(
        processors=[*shared, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric_level),
        logger_factory=factory,
        cache_logger_on_first_use=cache,
    )
    # Libraries (trio, asyncio, ...) log through the standard library: same stream and level.
    logging.basicConfig(
        level=numeric_level,
        stream=output,
        format="%(asctime)s [%(levelname)-8s] %(name)s: %(message)s",
        force=True,
    )


# A line logged below warning reaches the stream at most this long after it was logged.
FLUSH_SECONDS = 0.1


class BufferedLogger:
    """The structlog logger for a line-buffered text stream that is no terminal (the server's
    stderr into a file or a pipe): lines go into the stream's byte buffer, flushed by a
    daemon thread within FLUSH_SECONDS, warnings and errors at once. A write system call per
    line was a twentieth of the server's CPU time per move (it logs every move).

    Line buffering keeps the stream's text layer empty after every line others write, so
    their lines and these stay in order in the one byte buffer underneath."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._bytes = stream.buffer
        self._encoding = stream.encoding or "utf-8"
        self._errors = stream.errors or "backslashreplace"
        self._dirty = False
        self._lock = threading.Lock()
        _flusher().add(self)

    def msg(self, message: str) -> None:
        """Buffer one line."""
        data = (message + "\n").encode(self._encoding, self._errors)
        with self._lock:
            self._bytes.write(data)
            self._dirty = True

    def urgent(self, message: str) -> None:
        """One line, written at once."""
        self.msg(message)
        self.flush()

    log = debug = info = msg
    warn = warning = error = err = critical = fatal = exception = failure = urgent

    def flush(self) -> None:
        """Write what is buffered (a closed stream: nothing to do)."""
        with self._lock:
            self._dirty = False
            with contextlib.suppress(ValueError, OSError):
                self._stream.flush()

    def flush_if_written(self) -> None:
        """Flush if a line was buffered since the last flush."""
        if self._dirty:
            self.flush()


_buffered: weakref.WeakSet[BufferedLogger] | None = None
_buffered_lock = threading.Lock()


def _flusher() -> weakref.WeakSet[BufferedLogger]:
    """The BufferedLoggers alive, flushed by one daemon thread for the process."""
    global _buffered
    with _buffered_lock:
        if _buffered is None:
            loggers: weakref.WeakSet[BufferedLogger] = weakref.WeakSet()

            def flush_now_and_then() -> None:
                while True:
                    time.sleep(FLUSH_SECONDS)
                    for logger in list(loggers):
                        logger.flush_if_written()

            threading.Thread(target=flush_now_and_then, name="log flush", daemon=True).start()
            _buffered = loggers
        return _buffered


class _BufferedLoggerFactory:
    """One BufferedLogger (and flush thread) per configuration, for every logger name."""

    def __init__(self, stream: TextIO) -> None:
        self._logger = BufferedLogger(stream)

    def __call__(self, *args: object) -> BufferedLogger:
        return self._logger


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
