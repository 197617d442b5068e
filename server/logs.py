"""Logging: structlog to stderr, readable console lines or JSON lines."""

from __future__ import annotations

import atexit
import contextlib
import datetime
import logging
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
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
        # Not a terminal (a file, a pipe, docker logs): the same layout without colours, from
        # one processor that does the work of the four after merge_contextvars (bound_values,
        # add_log_level, TimeStamper, format_exc_info) and renders: the server logs every
        # move, and the chain of five cost twice as much per line.
        shared = [structlog.contextvars.merge_contextvars]
        renderer = plain_line

    factory: Any = structlog.PrintLoggerFactory(file=output)
    records: TextIO | BufferedLogger = output
    if stream is None and not _is_terminal(output):
        records = buffered = BufferedLogger(output)
        factory = _factory(buffered)
    structlog.configure(
        processors=[*shared, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric_level),
        logger_factory=factory,
        cache_logger_on_first_use=cache,
    )
    # Libraries (trio, asyncio, ...) log through the standard library: same stream and level.
    logging.basicConfig(
        level=numeric_level,
        stream=records,
        format="%(asctime)s [%(levelname)-8s] %(name)s: %(message)s",
        force=True,
    )


# A line logged below warning reaches the stream at most this long after it was logged.
FLUSH_SECONDS = 0.1
# Or once this many lines are waiting.
FLUSH_LINES = 256


class BufferedLogger:
    """The structlog logger for the process's stderr when it is no terminal (a file, a pipe,
    docker logs): Python writes such a stderr through at once, a system call per line, which
    was a twentieth of the server's CPU time per move (it logs every move). Lines wait here
    and go out together, within FLUSH_SECONDS (a daemon thread) or FLUSH_LINES; warnings and
    errors at once. It is also the stream of the standard library's log records, which
    first flush what waits, so the lines keep their order."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._pending: list[str] = []
        self._lock = threading.Lock()
        _flusher().add(self)

    def msg(self, message: str) -> None:
        """One line, written within FLUSH_SECONDS."""
        with self._lock:
            self._pending.append(message)
            if len(self._pending) < FLUSH_LINES:
                return
        self.flush()

    def urgent(self, message: str) -> None:
        """One line, written at once."""
        self.write(message + "\n")

    log = debug = info = msg
    warn = warning = error = err = critical = fatal = exception = failure = urgent

    def write(self, text: str) -> int:
        """Write `text` after the lines waiting (the standard library's handler calls it)."""
        with self._lock:
            self._write_pending()
            with contextlib.suppress(ValueError, OSError):  # a closed stream: nothing to do
                self._stream.write(text)
                self._stream.flush()
        return len(text)

    def flush(self) -> None:
        """Write the lines waiting."""
        with self._lock:
            self._write_pending()
            with contextlib.suppress(ValueError, OSError):
                self._stream.flush()

    def _write_pending(self) -> None:
        if self._pending:
            text = "\n".join(self._pending) + "\n"
            self._pending.clear()
            with contextlib.suppress(ValueError, OSError):
                self._stream.write(text)


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
                        logger.flush()

            threading.Thread(target=flush_now_and_then, name="log flush", daemon=True).start()
            atexit.register(flush_logs)  # the daemon thread dies first at exit
            _buffered = loggers
        return _buffered


def flush_logs() -> None:
    """Write every log line still waiting (before the process ends or hands over)."""
    if _buffered is not None:
        for logger in list(_buffered):
            logger.flush()


def _factory(logger: BufferedLogger) -> Callable[..., BufferedLogger]:
    return lambda *_args: logger


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


_now = datetime.datetime.now
_format_exc_info = structlog.processors.format_exc_info


def plain_line(logger: object, method: str, event_dict: structlog.typing.EventDict) -> str:
    """The plain console line: what bound_values, add_log_level, TimeStamper(fmt="iso") (local
    time), format_exc_info and a renderer of `TIME [level] event key=value ...` would make of
    `event_dict`, in one call (tests/server/test_logs.py compares it with that chain)."""
    timestamp = _now().isoformat()
    exception = event_dict.pop("exception", None)
    if isinstance(exception, str) and len(exception) > MAX_LOGGED_CHARS:
        exception = truncate(exception)
    if "exc_info" in event_dict:
        event_dict = _format_exc_info(logger, method, event_dict)
        exception = event_dict.pop("exception", exception)
    event_dict.pop("timestamp", None)  # the processors' own, as the chain overwrites them
    event_dict.pop("level", None)
    event = event_dict.pop("event", "")
    if isinstance(event, str) and len(event) > MAX_LOGGED_CHARS:
        event = truncate(event)
    fields = []
    for key, value in event_dict.items():
        if type(value) is str:
            if len(value) > MAX_LOGGED_CHARS:
                value = truncate(value)
            # Quote only what would be ambiguous in key=value form.
            if not value or " " in value or "=" in value:
                value = repr(value)
        elif isinstance(value, str):
            if len(value) > MAX_LOGGED_CHARS:
                value = truncate(value)
            value = _plain_value(value)
        else:
            value = repr(value)
        fields.append(f"{key}={value}")
    level = "warning" if method == "warn" else "error" if method == "exception" else method
    line = f"{timestamp} [{level:<9}] {event!s:<30} {' '.join(fields)}".rstrip()
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
