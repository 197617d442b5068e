"""The plain console line (server.logs.plain_line) is the line of the processor chain it
replaced: bound_values, add_log_level, TimeStamper(iso), format_exc_info and the renderer."""

from __future__ import annotations

import contextlib
import datetime
import enum
import io
import json
import logging
import threading
from typing import Any

import pytest
import structlog

from server import logs
from server.logs import MAX_LOGGED_CHARS, ServerLog, bound_values, configure_logging, plain_line
from tests.helpers.logs import restored_logging


def _render_plain(_logger: object, _method: str, event_dict: structlog.typing.EventDict) -> str:
    """The renderer the chain ended with (as it was in server/logs.py)."""
    timestamp = event_dict.pop("timestamp", "")
    level = event_dict.pop("level", "")
    event = event_dict.pop("event", "")
    exception = event_dict.pop("exception", None)
    fields = " ".join([f"{key}={logs._plain_value(value)}" for key, value in event_dict.items()])
    line = f"{timestamp} [{level:<9}] {event!s:<30} {fields}".rstrip()
    return f"{line}\n{exception}" if exception else line


def _chain(method: str, event_dict: dict[str, Any]) -> str:
    processors: list[Any] = [
        bound_values,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=False),
        structlog.processors.format_exc_info,
        _render_plain,
    ]
    result: Any = event_dict
    for processor in processors:
        result = processor(None, method, result)
    assert isinstance(result, str)
    return result


class Cause(enum.StrEnum):
    LOST = "LOST_CONNECTION"


class LongCause(enum.StrEnum):
    X = "y" * 400


class Shouting(str):
    """A str subclass whose str() is not its text."""

    def __str__(self) -> str:
        return self.upper()


class Formatted(str):
    """A str subclass formatted otherwise."""

    def __format__(self, spec: str) -> str:
        return "formatted"


class OldStyle(str, enum.Enum):  # noqa: UP042 (the old way is the case)
    """An enum with a str mixin (str() is "OldStyle.A")."""

    A = "a"
    B = "b c"


class ReprShouting:
    """A value whose repr is a str subclass."""

    def __repr__(self) -> str:
        return Shouting("quiet")


LONG = "x" * (MAX_LOGGED_CHARS + 50)

CASES: list[tuple[str, dict[str, Any]]] = [
    ("info", {"event": "move", "room": "abc-123", "team": "ONE", "move": "(1, 2) UP", "ms": 0.25}),
    ("info", {"event": "joined", "peer": "client#1", "team": "TWO"}),
    ("info", {"event": "connection closed", "peer": "a b", "cause": Cause.LOST}),
    ("info", {"event": "quoted", "empty": "", "eq": "a=b", "none": None, "list": [1, "x y"]}),
    ("warning", {"event": "slow reader", "queued_bytes": 12, "text": LONG}),
    ("warn", {"event": "old name"}),
    ("debug", {"event": LONG}),
    ("info", {"event": "own keys", "timestamp": "mine", "level": "mine", "exception": LONG}),
    ("info", {"event": "falsy exc_info", "exc_info": False, "exception": "given"}),
    ("info", {"event": 42}),
    ("info", {"event": "no fields"}),
    ("info", {"event": "long enum", "cause": LongCause.X}),
    ("info", {"event": "odd str", "loud": Shouting("a b"), "fmt": Formatted("x")}),
    ("info", {"event": "odd str", "old": OldStyle.A, "repr": ReprShouting(), "n": 1.5}),
]


@pytest.fixture
def frozen_now(monkeypatch: pytest.MonkeyPatch) -> None:
    moment = datetime.datetime(2026, 12, 1, 19, 30, 0, 123456)

    class Frozen(datetime.datetime):
        @classmethod
        def now(cls, tz: datetime.tzinfo | None = None) -> Frozen:
            return cls.fromtimestamp(moment.timestamp(), tz)

    monkeypatch.setattr(datetime, "datetime", Frozen)
    # The short cut's clock: the same instant in nanoseconds (789 of them below a microsecond).
    second = int(moment.replace(microsecond=0).timestamp())
    monkeypatch.setattr(logs, "_clock_ns", lambda: second * 1_000_000_000 + 123_456_789)


@pytest.mark.parametrize(
    "nanoseconds",
    [
        0,
        999,  # below a microsecond: floored, as datetime.now() does
        1_000,
        123_456_789,
        999_999_999,  # the last microsecond of a second, then the next second
        1_000_000_000,
    ],
)
@pytest.mark.parametrize("second", [1_796_000_000, 1_796_000_001, 1_711_846_799, 1_711_846_800])
def test_timestamp_is_datetime_now_isoformat(
    monkeypatch: pytest.MonkeyPatch, second: int, nanoseconds: int
) -> None:
    """`_timestamp` (the second's text cached) is what `datetime.now().isoformat()` gives for
    the same clock, a zero fraction left out included (the seconds around a daylight-saving
    change in Europe among them)."""
    moment = second * 1_000_000_000 + nanoseconds
    monkeypatch.setattr(logs, "_clock_ns", lambda: moment)
    seconds, rest = divmod(moment, 1_000_000_000)
    expected = datetime.datetime.fromtimestamp(seconds).replace(microsecond=rest // 1000)
    assert logs._timestamp() == expected.isoformat()
    assert logs._timestamp() == expected.isoformat()  # from the cached second


@pytest.mark.usefixtures("frozen_now")
@pytest.mark.parametrize(("method", "event_dict"), CASES)
def test_plain_line_is_the_chains_line(method: str, event_dict: dict[str, Any]) -> None:
    assert plain_line(None, method, dict(event_dict)) == _chain(method, dict(event_dict))
    # Again, its head and text fields from plain_line's caches now.
    assert plain_line(None, method, dict(event_dict)) == _chain(method, dict(event_dict))


@pytest.mark.usefixtures("frozen_now")
@pytest.mark.parametrize("method", ["error", "exception"])
def test_plain_line_renders_a_traceback_as_the_chain(method: str) -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        event = {"event": "handling a packet failed", "peer": "p", "exc_info": True}
        line = plain_line(None, method, dict(event))
        assert line == _chain(method, dict(event))
    assert "ValueError: boom" in line
    assert line.split("\n")[0].startswith("2026-12-01T19:30:00.123456 [error    ]")


@pytest.mark.usefixtures("frozen_now")
@pytest.mark.parametrize(("method", "event_dict"), [c for c in CASES if c[0] in ("info", "debug")])
def test_server_logger_short_cut_writes_structlogs_line(
    method: str, event_dict: dict[str, Any]
) -> None:
    """ServerLogger.info/debug make a plain line themselves (`_plain`), skipping structlog's
    bound logger: the line is the one the bound logger writes, and the level still filters."""
    values = dict(event_dict)
    event = values.pop("event")
    short, through = io.StringIO(), io.StringIO()
    for stream, level in ((short, "debug"), (through, "debug")):
        server_log = ServerLog(stream, level)
        with server_log.serving():
            if stream is short:
                logger = logs.get_logger("t")
                getattr(logger, method)(event, **values)
                assert logger._plain(logging.NOTSET, method, "", {})  # the short cut, filtered
            else:
                getattr(server_log.logger, method)(event, **values)  # structlog's own way
    assert short.getvalue() == through.getvalue()
    assert short.getvalue().startswith("2026-12-01T19:30:00.123456 [")
    quiet = io.StringIO()
    with ServerLog(quiet, "warning").serving():
        getattr(logs.get_logger("t"), method)(event, **values)
    assert quiet.getvalue() == ""


def test_server_logger_short_cut_leaves_captured_logs_to_structlog(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The process's plain logging into a BufferedLogger takes the short cut; capture_logs
    empties its processors in place, and the short cut must then step aside."""
    with restored_logging():
        configure_logging("console", "info", cache=False)  # stderr, no terminal: buffered
        log = logs.get_logger("t")
        with structlog.testing.capture_logs() as captured:
            log.info("move", room="r", ms=0.5)
        log.info("after", room="r")
        logs.flush_logs()
    assert captured == [{"event": "move", "room": "r", "ms": 0.5, "log_level": "info"}]
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == [f"[info     ] {'after':<30} room=r"]


class Text(str):
    """A str subclass: not plain_line's exact-str case."""


# Cases of the short cut `_line` (a str event, no key plain_line treats apart), each logged
# twice so the second line comes from its caches (heads, str and float fields).
SHORT_CUT_CASES: list[dict[str, Any]] = [
    {"room": "abc", "team": "ONE", "move": "Schwimme von [0|1] in Richtung UP", "ms": 0.123},
    {"ms": 0.0, "neg": -0.0, "one": 1.0, "int": 1, "yes": True, "nan": float("nan")},
    {"int": 1, "one": 1.0},  # an int equal to a kept float: its own repr
    {"sub": Text("a b"), "plain": "a b", "long": LONG, "tail": "x\t", "inf": float("inf")},
    {"loud": Shouting("a"), "fmt": Formatted("b"), "old": OldStyle.B, "repr": ReprShouting()},
    {},  # no field: the event's padding stripped
]


@pytest.mark.usefixtures("frozen_now")
@pytest.mark.parametrize("method", ["info", "debug"])
@pytest.mark.parametrize("values", SHORT_CUT_CASES)
@pytest.mark.parametrize("event", ["move", "e" * 40, LONG])
def test_short_cut_line_is_the_chains_line(method: str, values: dict[str, Any], event: str) -> None:
    for _ in range(2):
        assert logs._line(method, event, dict(values)) == _chain(method, {**values, "event": event})


def _lines_both_ways(log_calls: Any) -> tuple[str, str]:
    """The lines of `log_calls(logger)` through the short cut and through structlog's bound
    logger (the process's logging, plain lines into a BufferedLogger on a non-terminal)."""
    outputs = []
    for short_cut in (True, False):
        stream = io.StringIO()
        with restored_logging():
            configure_logging("console", "debug", cache=False)
            # (what configure_logging gives stderr, no terminal, here for a stream of ours)
            buffered = logs.BufferedLogger(stream)
            structlog.configure(logger_factory=logs._factory(buffered))
            logger = logs.get_logger("t")
            if short_cut:
                log_calls(logger)
            else:
                log_calls(logger._process)
            buffered.flush()
        outputs.append(stream.getvalue())
    return outputs[0], outputs[1]


@pytest.mark.usefixtures("frozen_now")
def test_bound_contextvars_appear_in_the_short_cuts_line() -> None:
    """Values bound with structlog's bind_contextvars are in the line, as structlog puts
    them (the short cut merges them once any was bound)."""

    def calls(logger: Any) -> None:
        logger.info("move", room="r", ms=0.5)
        with structlog.contextvars.bound_contextvars(request="q1", room="ignored"):
            logger.info("move", room="r", ms=0.5)
        logger.info("after", room="r")

    short, through = _lines_both_ways(calls)
    assert short == through
    assert short.splitlines()[1].endswith("room=r ms=0.5 request=q1")
    assert "request" not in short.splitlines()[2]


@pytest.mark.usefixtures("frozen_now")
def test_special_keys_take_structlogs_way_in_the_short_cut() -> None:
    def calls(logger: Any) -> None:
        logger.info("own keys", timestamp="mine", level="mine", exception="given")
        logger.info(42, room="r")
        try:
            raise ValueError("boom")
        except ValueError:
            logger.info("failed", exc_info=True)

    short, through = _lines_both_ways(calls)
    assert short == through
    assert "ValueError: boom" in short


def test_short_cut_honours_a_reconfiguration(capsys: pytest.CaptureFixture[str]) -> None:
    """The short cut keeps the bound logger it checked; a reconfiguration (cache=False: a new
    bound logger per call) is seen at the next line: a level, JSON, a stream of its own."""
    log = logs.get_logger("t")
    with restored_logging():
        configure_logging("console", "info", cache=False)
        log.info("first", n=1)
        configure_logging("console", "warning", cache=False)
        log.info("filtered", n=2)
        configure_logging("json", "info", cache=False)
        log.info("as json", n=3)
        stream = io.StringIO()
        configure_logging("console", "info", stream=stream, cache=False)
        log.info("own stream", n=4)
        configure_logging("console", "info", cache=False)
        log.info("last", n=5)
        logs.flush_logs()
    err = capsys.readouterr().err.splitlines()
    assert [line.split(" ", 1)[1] for line in err if not line.startswith("{")] == [
        f"[info     ] {'first':<30} n=1",
        f"[info     ] {'last':<30} n=5",
    ]
    as_json = [json.loads(line) for line in err if line.startswith("{")]
    assert [(entry["event"], entry["n"]) for entry in as_json] == [("as json", 3)]
    assert stream.getvalue().split(" ", 1)[1] == f"[info     ] {'own stream':<30} n=4\n"


def test_short_cut_follows_the_context_s_server_log() -> None:
    """One module logger, two ServerLogs in turn (and the process's logging between): each
    line goes to the log of its context."""
    log = logs.get_logger("t")
    first, second = io.StringIO(), io.StringIO()
    for round_ in range(2):
        for stream in (first, second):
            with ServerLog(stream, "info").serving():
                log.info("line", round=round_)
    assert [line.split()[-1] for line in first.getvalue().splitlines()] == ["round=0", "round=1"]
    assert [line.split()[-1] for line in second.getvalue().splitlines()] == ["round=0", "round=1"]


def test_buffered_logger_loses_and_repeats_no_line_under_threads() -> None:
    """`msg` appends without the lock while other threads flush: every line written once,
    each thread's in its order."""
    stream = io.StringIO()
    buffered = logs.BufferedLogger(stream)
    per_thread = 3000

    def write(name: str) -> None:
        for number in range(per_thread):
            buffered.msg(f"{name} {number}")
            if number % 97 == 0:
                buffered.flush()

    threads = [threading.Thread(target=write, args=(f"t{i}",)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    buffered.flush()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3 * per_thread
    for i in range(3):
        numbers = [int(line.split()[1]) for line in lines if line.startswith(f"t{i} ")]
        assert numbers == list(range(per_thread))


def test_timestamp_follows_the_clock_back_and_across_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cached second is left when the clock leaves it, either way (a clock set back)."""
    second = 1_796_000_000
    for moment in (second + 5, second + 4, second + 6, second + 4):
        for nanoseconds in (999_999_999, 0, 1_000, 500_000_000):
            clock = moment * 1_000_000_000 + nanoseconds
            monkeypatch.setattr(logs, "_clock_ns", lambda clock=clock: clock)
            expected = datetime.datetime.fromtimestamp(moment).replace(
                microsecond=nanoseconds // 1000
            )
            assert logs._timestamp() == expected.isoformat()


# ServerLogger.prepare: a PreparedLine's line is the line of the logger's info with the same
# event and fields, for any value and in any configuration.


@pytest.fixture
def no_contextvars_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    """structlog's contextvars as before any was bound: one bound by an earlier test stays in
    structlog's dict for the process, and the short cuts then leave every line to structlog."""
    fresh: dict[str, Any] = {}
    monkeypatch.setattr(structlog.contextvars, "_CONTEXT_VARS", fresh)
    monkeypatch.setattr(logs, "_structlog_vars", fresh)


ODD_VALUES: list[Any] = [
    "Schwimme von [0|1] in Richtung UP",
    "plain",
    "",
    "a=b",
    "x\t",  # last on the line: stripped, as by info
    "\t",
    "é ü",
    LONG,
    Text("a b"),
    Text(LONG),
    Shouting("loud"),
    Shouting("a b"),
    Formatted("x"),
    OldStyle.A,
    OldStyle.B,
    ReprShouting(),
    Cause.LOST,
    LongCause.X,
    0.123,
    2980.5,
    0.0,
    -0.0,
    -1.25,
    float("nan"),
    float("inf"),
    float("-inf"),
    1e-07,
    5e-324,
    1e16,
    1e300,
    2.0**42 / 1000,
    1,
    1.0,  # after an equal int, and before one
    1,
    True,
    None,
    [1, "x y"],
    (),
    b"x y",
]

PREPARED_LEADING: list[dict[str, Any]] = [
    {},
    {"room": "3f2c8a9e-1b7d-4c2e-9a6f-0d5e7b8c9a1f", "team": "ONE"},
    {"room": "a b", "n": 3, "f": -0.0, "nan": float("nan"), "none": None, "yes": True},
    {"long": LONG, "eq": "a=b"},
    {"cause": Cause.LOST, "loud": Shouting("a")},  # not made once: info's way
    {"list": [1]},
    {"exception": "given"},  # a key plain_line treats apart: info's way
]


def _prepared_and_info(
    level: str, event: str, keys: tuple[str, ...], leading: dict[str, Any], rows: list[Any]
) -> tuple[str, str]:
    """The lines of each row of values through `prepare(...).info` and `info`, each into a
    ServerLog of its own."""
    outputs = []
    for prepared in (True, False):
        stream = io.StringIO()
        with ServerLog(stream, level).serving():
            logger = logs.get_logger("t")
            line = logger.prepare(event, *keys, **leading)
            for values in rows:
                if prepared:
                    line.info(*values)
                else:
                    logger.info(event, **leading, **dict(zip(keys, values, strict=True)))
            # (the line made by the prepared line itself, but for leading values that
            # could change and plain_line's own keys)
            made_here = "exception" not in leading and all(
                type(value) in (str, int, float, bool, type(None)) for value in leading.values()
            )
            assert (line._adopted[0] is not None) == (prepared and made_here)
        outputs.append(stream.getvalue())
    return outputs[0], outputs[1]


@pytest.mark.usefixtures("frozen_now", "no_contextvars_yet")
@pytest.mark.parametrize("leading", PREPARED_LEADING)
@pytest.mark.parametrize("keys", [(), ("move",), ("move", "ms"), ("a", "b", "c")])
@pytest.mark.parametrize("event", ["move", "e" * 40, LONG, ""])
def test_prepared_line_is_infos_line(
    event: str, keys: tuple[str, ...], leading: dict[str, Any]
) -> None:
    """Every odd value at every place (twice: the second from the caches), the event's
    padding stripped without fields, leading values made once or not."""
    count = len(keys)
    rows = [
        [ODD_VALUES[(start + place) % len(ODD_VALUES)] for place in range(count)]
        for start in range(len(ODD_VALUES))
    ] * 2
    prepared, through_info = _prepared_and_info("info", event, keys, leading, rows)
    assert prepared == through_info
    assert prepared.count(" [info     ]") == len(rows)
    # And the same lines as structlog's own way (the bound logger and its processors).
    stream = io.StringIO()
    with ServerLog(stream, "info").serving() as server_log:
        for values in rows:
            server_log.logger.info(event, **leading, **dict(zip(keys, values, strict=True)))
    assert prepared == stream.getvalue()


@pytest.mark.usefixtures("no_contextvars_yet")
@pytest.mark.parametrize(
    "nanoseconds",
    [0, 999, 1_000, 1_999, 123_456_789, 999_999_000, 999_999_999, 1_000_000_000],
)
def test_prepared_lines_timestamp_is_infos(
    monkeypatch: pytest.MonkeyPatch, nanoseconds: int
) -> None:
    """The timestamp made inline: the clock in the cached second, in its first microsecond
    (no fraction), in the next second and back."""
    seconds = (1_796_000_005, 1_796_000_005, 1_796_000_006, 1_796_000_004)
    rows = [second * 1_000_000_000 + nanoseconds for second in seconds]
    outputs = []
    for prepared in (True, False):
        stream = io.StringIO()
        with ServerLog(stream, "info").serving():
            logger = logs.get_logger("t")
            line = logger.prepare("move", "ms", room="r")
            for clock in rows:
                monkeypatch.setattr(logs, "_clock_ns", lambda clock=clock: clock)
                if prepared:
                    line.info(0.5)
                else:
                    logger.info("move", room="r", ms=0.5)
        outputs.append(stream.getvalue())
    assert outputs[0] == outputs[1]
    for clock, text in zip(rows, outputs[0].splitlines(), strict=True):
        second, rest = divmod(clock, 1_000_000_000)
        expected = datetime.datetime.fromtimestamp(second).replace(microsecond=rest // 1000)
        assert text.startswith(expected.isoformat() + " [info     ] move")


@pytest.mark.usefixtures("frozen_now", "no_contextvars_yet")
def test_prepared_line_follows_the_level_and_the_configuration(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The process's logging reconfigured between lines (cache=False: a new bound logger
    per line; cache=True: the first one kept, as info keeps it): level, JSON, a stream of
    its own, a terminal's colours; the same output as info's, line by line."""
    configurations: list[tuple[str, str, bool]] = [
        ("console", "info", False),
        ("console", "warning", False),
        ("json", "info", False),
        ("console", "debug", False),
        ("console", "info", True),
        ("console", "warning", True),  # cached: still the first bound logger
        ("json", "info", False),
    ]
    outputs = []
    for prepared in (True, False):
        with restored_logging():
            logger = logs.get_logger("t")
            line = logger.prepare("move", "move", "ms", room="r", team="ONE")
            for number, (fmt, level, cache) in enumerate(configurations):
                configure_logging(fmt, level, cache=cache)
                for ms in (0.5, float(number), -0.0):
                    if prepared:
                        line.info("a b", ms)
                    else:
                        logger.info("move", room="r", team="ONE", move="a b", ms=ms)
                logs.flush_logs()
        outputs.append(capsys.readouterr().err)
    assert outputs[0] == outputs[1]
    lines = [
        json.loads(line)["ms"] if line[0] == "{" else line.split(" ", 1)[1]
        for line in outputs[0].splitlines()
    ]
    head = f"[info     ] {'move':<30} room=r team=ONE move='a b'"
    assert lines == [
        *[f"{head} ms={ms}" for ms in (0.5, 0.0, -0.0)],
        0.5,  # JSON
        2.0,
        -0.0,
        # debug, then info with cache=True: that bound logger stays (warning, JSON)
        *[f"{head} ms={ms}" for ms in (0.5, 3.0, -0.0, 0.5, 4.0, -0.0, 0.5, 5.0, -0.0)],
        *[f"{head} ms={ms}" for ms in (0.5, 6.0, -0.0)],
    ]


@pytest.mark.usefixtures("no_contextvars_yet")
def test_prepared_line_leaves_captured_logs_to_structlog() -> None:
    """capture_logs empties the processors in place: the prepared line's line is then
    captured as info's is, and written again after it."""
    stream = io.StringIO()
    with restored_logging():
        configure_logging("console", "info", cache=True)  # one bound logger, kept
        buffered = logs.BufferedLogger(stream)
        structlog.configure(logger_factory=logs._factory(buffered))
        line = logs.get_logger("t").prepare("move", "move", "ms", room="r")
        line.info("x", 0.25)
        assert line._adopted[0] is not None  # made by the prepared line
        with structlog.testing.capture_logs() as captured:
            line.info("y", 0.5)
        line.info("z", 0.75)
        buffered.flush()
    assert captured == [{"event": "move", "room": "r", "move": "y", "ms": 0.5, "log_level": "info"}]
    assert [text.split()[-2:] for text in stream.getvalue().splitlines()] == [
        ["move=x", "ms=0.25"],
        ["move=z", "ms=0.75"],
    ]


def _prepared_and_info_in_a_server_log(calls: Any, bind: dict[str, Any]) -> tuple[str, str]:
    """The lines of `calls(line, None)` (a prepared line) and `calls(None, logger)` into a
    ServerLog whose bound logger has `bind` bound."""
    outputs = []
    for prepared in (True, False):
        stream = io.StringIO()
        with ServerLog(stream, "info").serving() as server_log:
            server_log.logger = server_log.logger.bind(**bind)
            logger = logs.get_logger("t")
            if prepared:
                calls(logger.prepare("move", "ms", room="r"), None)
            else:
                calls(None, logger)
        outputs.append(stream.getvalue())
    return outputs[0], outputs[1]


@pytest.mark.usefixtures("frozen_now", "no_contextvars_yet")
def test_prepared_line_with_bound_contextvars() -> None:
    """Values bound with bind_contextvars: in the line as info puts them."""

    def calls(line: Any, logger: Any) -> None:
        for request in (None, None, "q1", None):
            with contextlib.ExitStack() as stack:
                if request is not None:
                    stack.enter_context(
                        structlog.contextvars.bound_contextvars(request=request, room="x")
                    )
                if line is not None:
                    line.info(0.5)
                else:
                    logger.info("move", room="r", ms=0.5)

    prepared, through_info = _prepared_and_info_in_a_server_log(calls, {})
    assert prepared == through_info
    assert prepared.splitlines()[2].endswith("room=r ms=0.5 request=q1")
    assert prepared.splitlines()[3].endswith("room=r ms=0.5")


@pytest.mark.usefixtures("frozen_now", "no_contextvars_yet")
def test_prepared_line_with_bound_context() -> None:
    """Values bound to the ServerLog's bound logger: in the line as info puts them."""

    def calls(line: Any, logger: Any) -> None:
        for _ in range(3):
            if line is not None:
                line.info(0.5)
            else:
                logger.info("move", room="r", ms=0.5)

    prepared, through_info = _prepared_and_info_in_a_server_log(calls, {"worker": "w1"})
    assert prepared == through_info
    assert prepared.splitlines() == [prepared.splitlines()[0]] * 3
    assert prepared.splitlines()[0].endswith(" worker=w1 room=r ms=0.5")


def _stamp(_logger: object, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    event_dict["stamped"] = 1
    return event_dict


def _render(_logger: object, _method: str, event_dict: dict[str, Any]) -> str:
    return f"rendered {sorted(event_dict.items())}"


@pytest.mark.usefixtures("frozen_now", "no_contextvars_yet")
@pytest.mark.parametrize(
    "processors",
    [[_stamp, plain_line], [structlog.contextvars.merge_contextvars, _render]],
)
def test_prepared_line_leaves_other_processors_to_structlog(processors: list[Any]) -> None:
    """Two processors into a BufferedLogger, but not merge_contextvars and plain_line:
    structlog's line (its bound logger kept, cache_logger_on_first_use)."""
    outputs = []
    for prepared in (True, False):
        stream = io.StringIO()
        with restored_logging():
            buffered = logs.BufferedLogger(stream)
            structlog.configure(
                processors=processors,
                logger_factory=logs._factory(buffered),
                cache_logger_on_first_use=True,
            )
            logger = logs.get_logger("t")
            line = logger.prepare("move", "ms", room="r")
            for _ in range(3):
                if prepared:
                    line.info(0.5)
                else:
                    logger.info("move", room="r", ms=0.5)
            buffered.flush()
        outputs.append(stream.getvalue())
    assert outputs[0] == outputs[1]
    assert len(outputs[0].splitlines()) == 3
    assert "stamped=1" in outputs[0] or outputs[0].startswith("rendered")


class _DynamicLevel(structlog.make_filtering_bound_logger(logging.DEBUG)):  # type: ignore[misc]
    """A bound logger whose level can change (not one of structlog's fixed-level classes)."""

    threshold = logging.INFO

    def is_enabled_for(self, level: int) -> bool:
        return level >= self.threshold


@pytest.mark.usefixtures("frozen_now", "no_contextvars_yet")
def test_prepared_line_asks_a_changing_level_each_time() -> None:
    outputs = []
    for prepared in (True, False):
        stream = io.StringIO()
        with ServerLog(stream, "info").serving() as server_log:
            records = server_log.logger._logger
            server_log.logger = _DynamicLevel(records, server_log.logger._processors, {})
            logger = logs.get_logger("t")
            line = logger.prepare("move", "n")
            for number, threshold in enumerate([logging.INFO, logging.WARNING, logging.INFO]):
                _DynamicLevel.threshold = threshold
                if prepared:
                    line.info(number)
                else:
                    logger.info("move", n=number)
        outputs.append(stream.getvalue())
    assert outputs[0] == outputs[1]
    assert [text.split()[-1] for text in outputs[0].splitlines()] == ["n=0", "n=2"]


@pytest.mark.usefixtures("no_contextvars_yet")
@pytest.mark.parametrize("level", ["debug", "info", "warning", "error"])
def test_prepared_line_keeps_to_the_level(level: str) -> None:
    """A bound logger that stays (a ServerLog; the process's, cached): the line written at
    info and below only."""
    written = level in ("debug", "info")
    stream = io.StringIO()
    with ServerLog(stream, level).serving():
        line = logs.get_logger("t").prepare("move", "n", room="r")
        for number in range(3):
            line.info(number)
    assert [text.split()[-1] for text in stream.getvalue().splitlines()] == (
        ["n=0", "n=1", "n=2"] if written else []
    )
    process = io.StringIO()
    with restored_logging():
        configure_logging("console", level, cache=True)
        buffered = logs.BufferedLogger(process)
        structlog.configure(logger_factory=logs._factory(buffered))
        line = logs.get_logger("t").prepare("move", "n", room="r")
        for number in range(3):
            line.info(number)
        assert (line._adopted[0] is not None) == written
        buffered.flush()
    assert len(process.getvalue().splitlines()) == (3 if written else 0)


@pytest.mark.usefixtures("no_contextvars_yet")
def test_prepared_line_refuses_what_info_would() -> None:
    logger = logs.get_logger("t")
    with pytest.raises(ValueError, match="twice"):
        logger.prepare("move", "room", room="r")
    with pytest.raises(ValueError, match="twice"):
        logger.prepare("move", "ms", "ms")
    with pytest.raises(ValueError, match="twice"):
        logger.prepare("move", "event")
    line = logger.prepare("move", "move", "ms", room="r")
    with ServerLog(io.StringIO(), "info").serving():
        for values in [("x",), ("x", 0.5, 1), ()]:
            with pytest.raises(ValueError, match="zip"):
                line.info(*values)
