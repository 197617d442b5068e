"""The plain console line (server.logs.plain_line) is the line of the processor chain it
replaced: bound_values, add_log_level, TimeStamper(iso), format_exc_info and the renderer."""

from __future__ import annotations

import datetime
import enum
from typing import Any

import pytest
import structlog

from server import logs
from server.logs import MAX_LOGGED_CHARS, bound_values, plain_line


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
]


@pytest.fixture
def frozen_now(monkeypatch: pytest.MonkeyPatch) -> None:
    moment = datetime.datetime(2026, 12, 1, 19, 30, 0, 123456)

    class Frozen(datetime.datetime):
        @classmethod
        def now(cls, tz: datetime.tzinfo | None = None) -> Frozen:
            return cls.fromtimestamp(moment.timestamp(), tz)

    monkeypatch.setattr(datetime, "datetime", Frozen)
    monkeypatch.setattr(logs, "_now", Frozen.now)


@pytest.mark.usefixtures("frozen_now")
@pytest.mark.parametrize(("method", "event_dict"), CASES)
def test_plain_line_is_the_chains_line(method: str, event_dict: dict[str, Any]) -> None:
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
