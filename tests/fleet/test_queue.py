"""The Dramatiq set-up for matches (docs/tournament.md §3): no time limit, few retries, fast
detection of dead workers, prefetch 1; and the PostgreSQL helpers that need no server."""

from __future__ import annotations

import math

import psycopg
import pytest

from fleet.postgres import is_connection_error, retrying, to_pyformat
from fleet.queue import (
    HEARTBEAT_TIMEOUT_MS,
    MATCH_QUEUE,
    MAX_RETRIES,
    ShutdownFlag,
    declare_match_actor,
    make_broker,
)


def test_the_broker_finds_dead_workers_in_seconds_and_the_actor_never_times_out() -> None:
    shutdown = ShutdownFlag()
    broker = make_broker("redis://127.0.0.1:1/0", shutdown=shutdown)  # connects lazily
    try:
        assert broker.heartbeat_timeout == HEARTBEAT_TIMEOUT_MS == 5000
        assert broker.maintenance_chance == 1_000_000  # Dramatiq's scale: every fetch
        actor = declare_match_actor(broker, lambda match_id: None)
        assert actor.queue_name == MATCH_QUEUE
        assert actor.options["time_limit"] == math.inf
        assert actor.options["max_retries"] == MAX_RETRIES == 2
        names = [type(m).__name__ for m in broker.middleware]
        # No ShutdownNotifications / AgeLimit: nothing raises inside the running trio code.
        assert "ShutdownNotifications" not in names and "AgeLimit" not in names
        assert not shutdown.event.is_set()
        shutdown.before_worker_shutdown(broker, None)  # type: ignore[arg-type]
        assert shutdown.event.is_set()
    finally:
        broker.close()


def test_placeholders_become_psycopg_s() -> None:
    assert to_pyformat("SELECT a FROM t WHERE b = ? AND c LIKE '5%'") == (
        "SELECT a FROM t WHERE b = %s AND c LIKE '5%%'"
    )


def test_retrying_repeats_only_connection_errors_and_gives_up_at_the_deadline() -> None:
    waits: list[float] = []
    attempts = iter([psycopg.OperationalError("server closed"), psycopg.OperationalError("x")])

    def flaky() -> str:
        error = next(attempts, None)
        if error is not None:
            raise error
        return "ok"

    assert retrying(flaky, sleep=waits.append) == "ok"
    assert waits == [0.1, 0.2]

    def bad_sql() -> None:
        raise psycopg.errors.SyntaxError("syntax error")

    with pytest.raises(psycopg.errors.SyntaxError):
        retrying(bad_sql, sleep=waits.append)
    assert len(waits) == 2

    def down() -> None:
        raise psycopg.OperationalError("connection refused")

    with pytest.raises(psycopg.OperationalError):
        retrying(down, retry_for=0.0, sleep=waits.append)
    assert is_connection_error(psycopg.errors.AdminShutdown("terminating"))
    assert not is_connection_error(ValueError("no"))
