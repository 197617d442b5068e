"""Logging: structlog to stderr, readable console lines or JSON lines.

A program that owns its process configures the process's logging (`configure_logging`); a game
server in another program's process (`runner.inprocess`) logs to a `ServerLog` of its own and
leaves the process's logging alone: the game server's modules log through `get_logger`."""

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
from contextvars import ContextVar
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
    """The process's logging, for a program that owns its process (`piranhas-server`, the web
    viewer's process, a distributed worker): events at `level` and above to `stream`
    (stderr): `fmt` "console" gives readable lines, coloured only on a terminal; "json" gives
    one JSON object per line. `cache=False` lets tests reconfigure loggers that were already
    used. A game server in another program's process logs through a `ServerLog` instead."""
    numeric_level = _level(fmt, level)
    # The lines waiting in the BufferedLogger replaced here: out first, not lost with it.
    flush_logs()
    output = stream if stream is not None else sys.stderr
    factory: Any = structlog.PrintLoggerFactory(file=output)
    records: TextIO | BufferedLogger = output
    if stream is None and not _is_terminal(output):
        records = buffered = BufferedLogger(output)
        factory = _factory(buffered)
    structlog.configure(
        processors=_processors(fmt, output),
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


def _level(fmt: str, level: str) -> int:
    if fmt not in ("console", "json"):
        raise ValueError(f"unknown log format {fmt!r}")
    numeric_level = _LEVELS.get(level.lower())
    if numeric_level is None:
        raise ValueError(f"unknown log level {level!r}")
    return numeric_level


def _processors(fmt: str, output: TextIO) -> list[structlog.typing.Processor]:
    """The processors of a line in `fmt` for `output`, the renderer last."""
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
        return [structlog.contextvars.merge_contextvars, plain_line]
    return [*shared, renderer]


# The log of the game server whose task (or thread started by it) logs, if it has one of its
# own; None: the process's logging (structlog's configuration).
_server_log: ContextVar[ServerLog | None] = ContextVar("piranhas_server_log", default=None)


class ServerLog:
    """The log of one game server in a process it does not own (`runner.inprocess`: a match,
    a league table, a distributed worker's kept table): the server's lines, in the format of
    `configure_logging`, to a stream of its own, while the process's logging (structlog's
    configuration, the standard library's root handlers, stdout and stderr) stays the host
    program's: its lines, and those of its libraries (Dramatiq), stay in its own log while
    the server runs, and two servers in one process keep two logs.

    The server's modules log through `get_logger`, whose lines go to the `ServerLog` of the
    context they are logged in (`serving`); trio hands a task's context to the tasks and
    threads it starts, so every line of one server goes to its log."""

    def __init__(self, stream: TextIO, level: str, fmt: str = "console") -> None:
        numeric_level = _level(fmt, level)
        self._records = BufferedLogger(stream)
        # The bound logger structlog.configure would make, without the process's configuration.
        bound: Any = structlog.make_filtering_bound_logger(numeric_level)
        self.logger: Any = bound(self._records, _processors(fmt, stream), {})

    @contextlib.contextmanager
    def serving(self) -> Iterator[ServerLog]:
        """The server's lines logged in this context (the server's task, the tasks and threads
        it starts) go to this log for the time of the block; its lines are written at the
        end."""
        token = _server_log.set(self)
        try:
            yield self
        finally:
            _server_log.reset(token)
            self.flush()

    def flush(self) -> None:
        """Write the lines waiting."""
        self._records.flush()


class ServerLogger:
    """A logger of the game server's modules (`get_logger`): a line goes to the `ServerLog` of
    the context it is logged in, otherwise to the process's logging (`piranhas-server`, the
    tests' harnesses and `structlog.testing.capture_logs`)."""

    __slots__ = ("_bound", "_enabled", "_process", "_processors", "_sink")

    def __init__(self, name: str) -> None:
        self._process: Any = structlog.get_logger(name)
        # The last bound logger `_plain` found to be the plain line into a BufferedLogger, its
        # BufferedLogger, processor list and level filter (kept: the check was a fifth of
        # the move's line).
        self._bound: Any = None
        self._sink: BufferedLogger | None = None
        self._processors: list[Any] = []
        self._enabled: Callable[[int], bool] | None = None

    def _target(self) -> Any:
        own = _server_log.get()
        return self._process if own is None else own.logger

    def _plain(self, level: int, method: str, event: str, values: dict[str, Any]) -> bool:
        """The line made here when its logger is the plain console line into a
        BufferedLogger (the server's own log): what structlog's bound logger would do with
        those two processors, without its layers per call (the move's line is logged once
        per move). False, and nothing done, for any other configuration (JSON, a terminal,
        `structlog.testing.capture_logs`, which empties the processor list in place)."""
        own = _server_log.get()
        # The process's logger: the one bound logger structlog caches (cache_logger_on_first_use),
        # or a new one per call from structlog's configuration of the moment (cache=False).
        bound = self._process.bind() if own is None else own.logger
        if bound is not self._bound and not self._adopt(bound):
            return False
        processors = self._processors
        # The list is structlog's: capture_logs changes it in place, so it is looked at per call.
        if (
            len(processors) != 2
            or processors[1] is not plain_line
            or processors[0] is not _merge_contextvars
        ):
            return False
        enabled: Any = self._enabled
        if not enabled(level):
            return True
        sink: Any = self._sink
        if (
            bound._context
            or _structlog_vars is None
            or _structlog_vars
            or type(event) is not str
            or not _SPECIAL_KEYS.isdisjoint(values)
        ):
            # Values bound to the logger or to structlog's contextvars, or a key plain_line
            # treats apart: structlog's event dict, through both processors.
            event_dict = bound._context.copy()
            event_dict.update(values)
            event_dict["event"] = event
            sink.msg(plain_line(sink, method, _merge_contextvars(sink, method, event_dict)))
            return True
        # The event dict would be `values` plus the event: the line made from them as is,
        # and BufferedLogger.msg's work done here (a call less per line).
        pending = sink._pending
        pending.append(_line(method, event, values))
        if len(pending) >= FLUSH_LINES:
            sink.flush()
        return True

    def _adopt(self, bound: Any) -> bool:
        """Keep `bound` if it writes into a BufferedLogger (its processors are checked per
        call); False for any other logger."""
        sink = getattr(bound, "_logger", None)
        processors = getattr(bound, "_processors", None)
        enabled = getattr(bound, "is_enabled_for", None)
        if enabled is None or type(sink) is not BufferedLogger or type(processors) is not list:
            return False
        # (a reference: a bound logger made per call, cache=False, is not taken for another
        # one made later at its address)
        self._bound, self._sink, self._processors, self._enabled = bound, sink, processors, enabled
        return True

    def prepare(self, event: str, *keys: str, **leading: Any) -> PreparedLine:
        """The line `info(event, **leading, key=value ...)` with the values of `keys` given
        to its `info` (`PreparedLine`: its constant parts made once). A ValueError for a
        name twice, or "event" or "self" (which info takes itself)."""
        return PreparedLine(self, event, keys, leading)

    def debug(self, event: str, *args: Any, **values: Any) -> None:
        """A line at level debug."""
        if args or not self._plain(logging.DEBUG, "debug", event, values):
            self._target().debug(event, *args, **values)

    def info(self, event: str, *args: Any, **values: Any) -> None:
        """A line at level info."""
        if args or not self._plain(logging.INFO, "info", event, values):
            self._target().info(event, *args, **values)

    def warning(self, event: str, *args: Any, **values: Any) -> None:
        """A line at level warning."""
        self._target().warning(event, *args, **values)

    def error(self, event: str, *args: Any, **values: Any) -> None:
        """A line at level error."""
        self._target().error(event, *args, **values)

    def exception(self, event: str, *args: Any, **values: Any) -> None:
        """An error with the traceback of the exception being handled."""
        self._target().exception(event, *args, **values)


class PreparedLine:
    """A line logged often with the same event and leading fields, at info (a room's move
    line: its room and team): `info(*values)` writes what `logger.info(event, **leading,
    **dict(zip(keys, values)))` writes, byte for byte (`ServerLogger.prepare`).

    Where `_plain` would make the line itself (the plain console line into a BufferedLogger,
    nothing bound to the bound logger nor to structlog's contextvars), it is made here: the
    head, the leading fields and the key names are text made once, the values' texts are
    kept by value, and `_plain`'s checks are made per line but the level's, kept with the
    bound logger (the level of structlog's filtering bound loggers is fixed by their class).
    Any other configuration (JSON, a terminal, `capture_logs`, a bound value, a level that
    could change), a key plain_line treats apart or a leading value whose text could change
    (not a str, int, float, bool or None) leaves the line to the logger's `info`."""

    __slots__ = (
        "_adopted",
        "_count",
        "_event",
        "_glues",
        "_head",
        "_keys",
        "_leading",
        "_logger",
        "_seen",
    )

    def __init__(
        self, logger: ServerLogger, event: str, keys: tuple[str, ...], leading: dict[str, Any]
    ) -> None:
        names = [*leading, *keys]
        if len(set(names)) != len(names) or "event" in names or "self" in names:
            raise ValueError(f"a key twice or a name info() takes itself in {names}")
        self._logger, self._event, self._keys, self._leading = logger, event, keys, leading
        self._count = len(keys)
        # The bound logger last looked at, and the one lines are made for here with its
        # BufferedLogger and processor list (one tuple, so a thread sees one logger's three;
        # None: none, and always for a line `_plain` would not make).
        self._seen: Any = None
        self._adopted: tuple[Any, Any, list[Any]] = (None, None, [])
        # The line before the first value, then what follows each value: `_line`'s
        # " ".join of the head and "key=value" fields, with the constant parts joined.
        self._head = ""
        self._glues = (*[f" {key}=" for key in keys[1:]], "")
        if (
            type(event) is str
            and _SPECIAL_KEYS.isdisjoint(names)
            and all(type(value) in _CONSTANT_TYPES for value in leading.values())
            and _structlog_vars is not None
        ):
            fields = "".join(f" {key}={_value_text(value)}" for key, value in leading.items())
            first = f" {keys[0]}=" if keys else ""
            self._head = _event_head("info", event) + fields + first

    def info(self, *values: Any) -> None:
        """The line at level info with `values` for the keys (a ValueError for a count
        other than theirs)."""
        own = _server_log.get()
        bound = self._logger._process.bind() if own is None else own.logger
        adopted = self._adopted
        if bound is not adopted[0]:
            if bound is self._seen or not self._adopt(bound):
                self._generic(values)
                return
            adopted = self._adopted
        # _plain's checks per line (capture_logs changes the processor list in place), but
        # the level's: `_adopt` took only a bound logger whose level lets the line through.
        processors = adopted[2]
        if (
            len(processors) != 2
            or processors[1] is not plain_line
            or processors[0] is not _merge_contextvars
            or bound._context
            or _structlog_vars
            or len(values) != self._count
        ):
            self._generic(values)
            return
        # _timestamp inline, its pieces joined with the line's: while the clock is in the
        # cached second, past its first microsecond (otherwise _timestamp itself).
        cached = _second
        offset = _clock_ns() - cached[0]
        if 1000 <= offset < 1_000_000_000:
            parts = [cached[1], _DIGITS[offset // 1_000_000], _DIGITS[offset // 1000 % 1000]]
        else:
            parts = [_timestamp()]
        parts.append(self._head)
        for value, glue in zip(values, self._glues):  # noqa: B905 (counted above; a keyword costs)
            kind = type(value)
            if kind is str:
                parts.append(_TEXTS[value])
            elif kind is float:
                parts.append(_FLOAT_TEXTS[value])
            else:
                parts.append(_value_text(value))
            parts.append(glue)
        sink = adopted[1]
        pending = sink._pending
        pending.append("".join(parts).rstrip())
        if len(pending) >= FLUSH_LINES:
            sink.flush()

    def _generic(self, values: tuple[Any, ...]) -> None:
        self._logger.info(
            self._event, **self._leading, **dict(zip(self._keys, values, strict=True))
        )

    def _adopt(self, bound: Any) -> bool:
        """Make lines for `bound` here if the logger's `_adopt` keeps it (a BufferedLogger
        behind it) and its level, fixed by its class (one of structlog's filtering bound
        loggers), lets info through; otherwise leave them to the logger's `info`."""
        self._seen = bound
        self._adopted = (None, None, [])
        logger = self._logger
        if not (
            self._head
            and logger._adopt(bound)
            and type(bound) in _FILTERING_CLASSES
            and logger._enabled is not None
            and logger._enabled(logging.INFO)
        ):
            return False
        self._adopted = (bound, logger._sink, logger._processors)
        return True


def get_logger(name: str) -> ServerLogger:
    """The logger of a game server module `name` (see `ServerLogger`)."""
    return ServerLogger(name)


# A line logged below warning reaches the stream at most this long after it was logged.
FLUSH_SECONDS = 0.1
# Or once this many lines are waiting.
FLUSH_LINES = 256


class BufferedLogger:
    """The structlog logger for the process's stderr when it is no terminal (a file, a pipe,
    docker logs) and for a `ServerLog`'s file: Python writes such a stream through at once, a
    system call per line, which was a twentieth of the server's CPU time per move (it logs
    every move). Lines wait here and go out together, within FLUSH_SECONDS (a daemon thread)
    or FLUSH_LINES; warnings and errors at once. It is also the stream of the standard
    library's log records, which first flush what waits, so the lines keep their order."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._pending: list[str] = []
        self._lock = threading.Lock()
        _flusher().add(self)

    def msg(self, message: str) -> None:
        """One line, written within FLUSH_SECONDS."""
        # No lock: an append is atomic (the GIL), and a flush takes only the lines it saw.
        pending = self._pending
        pending.append(message)
        if len(pending) >= FLUSH_LINES:
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
        # (under the lock, so two flushes never write one line twice; `msg` appends without
        # it, so the lines taken are the first `count`, and later ones wait for the next)
        pending = self._pending
        count = len(pending)
        if count:
            lines = pending[:count]
            del pending[:count]
            with contextlib.suppress(ValueError, OSError):
                self._stream.write("\n".join(lines) + "\n")


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


_merge_contextvars = structlog.contextvars.merge_contextvars
# structlog's bound-logger classes of make_filtering_bound_logger: their level is fixed by
# the class ("you can't change the log level once configured").
_FILTERING_CLASSES = frozenset(getattr(structlog._native, "LEVEL_TO_FILTERING_LOGGER", {}).values())
# structlog's contextvars by name, made by bind_contextvars (and never removed): while there is
# none, merge_contextvars adds nothing to a line. None (another structlog): always merged.
_structlog_vars: dict[str, Any] | None = getattr(structlog.contextvars, "_CONTEXT_VARS", None)
# The keys plain_line treats apart (a traceback, the processors' own keys).
_SPECIAL_KEYS = frozenset(("exception", "exc_info", "timestamp", "level"))
_format_exc_info = structlog.processors.format_exc_info
_clock_ns = time.time_ns
_local = datetime.datetime.fromtimestamp

# The last second's start (nanoseconds) and local time text, with and without the ".": one
# tuple, so a thread sees either second with its text.
_second: tuple[int, str, str] = (-(10**18), "", "")
# "000" ... "999": a timestamp's milliseconds and microseconds.
_DIGITS = [f"{number:03d}" for number in range(1000)]


def _timestamp() -> str:
    """`datetime.datetime.now().isoformat()`, with the second's text made once a second
    (now() and isoformat() were a quarter of a line): now() floors the clock to microseconds,
    and isoformat() leaves out a zero fraction, as here."""
    global _second
    nanoseconds = _clock_ns()
    cached = _second
    # (the offset into the cached second: one small subtraction and division, where a
    # divmod of the clock and a %06d were a fifth of a line)
    offset = nanoseconds - cached[0]
    if not 0 <= offset < 1_000_000_000:
        second = nanoseconds // 1_000_000_000
        text = _local(second).isoformat()
        cached = _second = (second * 1_000_000_000, text + ".", text)
        offset = nanoseconds - cached[0]
    micro = offset // 1000
    if micro:
        return cached[1] + _DIGITS[micro // 1000] + _DIGITS[micro % 1000]
    return cached[2]


# " [level    ] event (padded to 30) " by (level, event): the events are the code's literals.
_HEADS: dict[tuple[str, str], str] = {}
_HEADS_SIZE = 1024
# "key=value" by (key, value) for text values, which repeat from line to line (a room's id,
# a team, a peer): a look-up instead of the checks and the formatting. Cleared when full.
_FIELDS: dict[tuple[str, str], str] = {}
_FIELDS_SIZE = 4096


def plain_line(logger: object, method: str, event_dict: structlog.typing.EventDict) -> str:
    """The plain console line: what bound_values, add_log_level, TimeStamper(fmt="iso") (local
    time), format_exc_info and a renderer of `TIME [level] event key=value ...` would make of
    `event_dict`, in one call (tests/server/test_log_line.py compares it with that chain)."""
    timestamp = _timestamp()
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
    for item in event_dict.items():
        if type(item[1]) is str:
            text = _FIELDS.get(item)
            if text is None:
                text = _text_field(*item)
            fields.append(text)
            continue
        key, value = item
        if isinstance(value, str):
            if len(value) > MAX_LOGGED_CHARS:
                value = truncate(value)
            value = _plain_value(value)
        else:
            value = repr(value)
        fields.append(f"{key}={value}")
    head = _HEADS.get((method, event)) if type(event) is str else None
    if head is None:
        level = "warning" if method == "warn" else "error" if method == "exception" else method
        head = f" [{level:<9}] {event!s:<30} "
        if type(event) is str:
            if len(_HEADS) >= _HEADS_SIZE:
                _HEADS.clear()  # (threads: a lost entry is only made again)
            _HEADS[(method, event)] = head
    line = (timestamp + head + " ".join(fields)).rstrip()
    return f"{line}\n{exception}" if exception else line


# " [level    ] event (padded to 30)" by event, for `_line`'s methods (debug and info).
_EVENT_HEADS: dict[str, dict[str, str]] = {"debug": {}, "info": {}}
# "key=value" by (key, value) for float values other than zero (a move's milliseconds): a
# float's repr was a seventh of the move's line. Only floats are keys, and no zero (-0.0 ==
# 0.0), so an equal key always has the same repr. Cleared when full.
_FLOAT_FIELDS: dict[tuple[str, float], str] = {}


def _line(method: str, event: str, values: dict[str, Any]) -> str:
    """plain_line's line for `{**values, "event": event}` (`event` a str, `values` without
    the keys plain_line treats apart, `method` debug or info): its steps for that case
    only, the head kept by event and float fields by value."""
    heads = _EVENT_HEADS[method]
    head = heads.get(event)
    if head is None:
        head = _event_head(method, event)
        if len(heads) >= _HEADS_SIZE:
            heads.clear()  # (threads: a lost entry is only made again)
        heads[event] = head
    # The head and the fields joined by spaces: plain_line's `head + " ".join(fields)`, the
    # event's padding stripped by rstrip when no field follows, as there.
    parts = [_timestamp() + head]
    for item in values.items():
        kind = type(item[1])
        if kind is str:
            text = _FIELDS.get(item) or _text_field(*item)
        elif kind is float:
            text = _FLOAT_FIELDS.get(item) or _float_field(*item)
        elif isinstance(item[1], str):
            value = item[1]
            if len(value) > MAX_LOGGED_CHARS:
                value = truncate(value)
            text = f"{item[0]}={_plain_value(value)}"
        else:
            text = f"{item[0]}={item[1]!r}"
        parts.append(text)
    return " ".join(parts).rstrip()


def _float_field(key: str, value: float) -> str:
    """ "key=value" of plain_line for a `float` value (kept in _FLOAT_FIELDS unless zero)."""
    text = f"{key}={value!r}"
    if value:
        if len(_FLOAT_FIELDS) >= _FIELDS_SIZE:
            _FLOAT_FIELDS.clear()  # (threads: a lost entry is only made again)
        _FLOAT_FIELDS[(key, value)] = text
    return text


def _text_field(key: str, value: str) -> str:
    """ "key=value" of plain_line for a `str` value (kept in _FIELDS unless it was cut)."""
    if len(value) > MAX_LOGGED_CHARS:
        return f"{key}={_plain_value(truncate(value))}"
    text = f"{key}={_plain_value(value)}"
    if len(_FIELDS) >= _FIELDS_SIZE:
        _FIELDS.clear()  # (threads: a lost entry is only made again)
    _FIELDS[(key, value)] = text
    return text


def _event_head(method: str, event: str) -> str:
    """`_line`'s head of `event` (a str) at `method` (debug or info)."""
    text = truncate(event) if len(event) > MAX_LOGGED_CHARS else event
    return f" [{method:<9}] {text:<30}"


# The types of leading values PreparedLine makes text once: their text cannot change.
_CONSTANT_TYPES = (str, int, float, bool, type(None))


# The texts of values alone, for PreparedLine (its key names are made once): dicts by value
# whose look-up of a missing value makes its text (a call fewer than get's `or`). Cleared
# when full.


class _StrTexts(dict[str, str]):
    """The text of a `str` value: a look-up instead of the checks and the quoting (kept
    unless it was cut)."""

    def __missing__(self, value: str) -> str:
        if len(value) > MAX_LOGGED_CHARS:
            return _plain_value(truncate(value))
        text = _plain_value(value)
        if len(self) >= _FIELDS_SIZE:
            self.clear()  # (threads: a lost entry is only made again)
        self[value] = text
        return text


class _FloatTexts(dict[float, str]):
    """The text (repr) of a `float` value (a move's milliseconds): only floats are keys, so an
    equal key has the same repr; not kept: zero (-0.0 == 0.0) and NaN (never found)."""

    def __missing__(self, value: float) -> str:
        text = repr(value)
        if value and value == value:
            if len(self) >= _FIELDS_SIZE:
                self.clear()  # (threads: a lost entry is only made again)
            self[value] = text
        return text


_TEXTS = _StrTexts()
_FLOAT_TEXTS = _FloatTexts()


def _value_text(value: Any) -> str:
    """The text after "key=" in plain_line's field of `value`."""
    kind = type(value)
    if kind is str:
        return _TEXTS[value]
    if kind is float:
        return _FLOAT_TEXTS[value]
    if isinstance(value, str):
        text = _plain_value(truncate(value) if len(value) > MAX_LOGGED_CHARS else value)
    else:
        text = repr(value)
    # (formatted, as plain_line's f-string formats it: a str subclass's __str__, __format__)
    return f"{text}"


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
