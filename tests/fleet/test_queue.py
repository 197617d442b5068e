"""The Dramatiq set-up for matches (docs/tournament.md §3): no time limit, few retries, fast
detection of dead workers, prefetch 1; and the PostgreSQL helpers that need no server."""

from __future__ import annotations

import math
from collections.abc import Callable

import psycopg
import pytest

from fleet.queue import (
    HEARTBEAT_TIMEOUT_MS,
    MAX_RETRIES,
    ShutdownFlag,
    declare_match_actor,
    make_broker,
)
from league.postgres import is_connection_error, retrying, to_pyformat


def test_the_broker_finds_dead_workers_in_seconds_and_the_actor_never_times_out() -> None:
    shutdown = ShutdownFlag()
    broker = make_broker("redis://127.0.0.1:1/0", shutdown=shutdown)  # connects lazily
    try:
        assert broker.heartbeat_timeout == HEARTBEAT_TIMEOUT_MS == 5000
        assert broker.maintenance_chance == 1_000_000  # Dramatiq's scale: every fetch
        actor = declare_match_actor(broker, lambda match_id: None, "piranhas.0123")
        assert actor.queue_name == "piranhas.0123"
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


def failing(*errors: Exception) -> Callable[[], str]:
    """An operation that raises each of `errors` in turn, then returns "ok"."""
    pending = iter(errors)

    def operation() -> str:
        error = next(pending, None)
        if error is not None:
            raise error
        return "ok"

    return operation


def test_retrying_repeats_only_connection_errors_and_gives_up_at_the_deadline() -> None:
    waits: list[float] = []
    flaky = failing(psycopg.OperationalError("server closed"), psycopg.OperationalError("x"))
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


def test_a_transaction_ended_by_the_server_is_repeated_without_an_outage_reported(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # PostgreSQL ends a transaction left idle too long (a paused worker): the database is up.
    waits: list[float] = []
    ended = psycopg.errors.lookup("25P03")("terminating connection due to idle-in-...")
    assert retrying(failing(ended), sleep=waits.append) == "ok"
    assert waits == [0.1]
    err = capsys.readouterr().err
    assert "ended this process's transaction" in err and "repeating it" in err
    assert "unreachable" not in err and "reachable again" not in err
    # A real outage is still reported as one, and its end too.
    outage = failing(psycopg.OperationalError("connection refused"))
    assert retrying(outage, sleep=waits.append) == "ok"
    err = capsys.readouterr().err
    assert "database unreachable" in err and "database reachable again" in err


def test_a_dead_worker_s_match_and_a_match_given_back_go_to_the_front_of_the_queue() -> None:
    from fleet.queue import _dispatch_script

    script = _dispatch_script().decode()
    maintenance = script[script.index("if do_maintenance") : script.index('if command == "enqueue')]
    assert 'redis.call("lpush", queue_full_name, message_id)' in maintenance
    assert "rpush" not in maintenance
    requeue = script[script.index('command == "requeue"') : script.index('command == "ack"')]
    assert "lpush" in requeue and "rpush" not in requeue
    first = script[script.index('command == "enqueue_first"') :]
    assert first.index("lpush") < first.index('command == "enqueue"')


def test_refused_logins_are_permanent_an_unreachable_server_is_transient() -> None:
    from league.postgres import is_permanent

    def failed(cause: str) -> psycopg.OperationalError:
        return psycopg.OperationalError(
            f'connection failed: connection to server at "10.0.0.2", port 5432 failed: {cause}'
        )

    for cause in (
        'FATAL:  password authentication failed for user "league"',
        'FATAL:  database "leage" does not exist',
        'FATAL:  role "nobody" does not exist',
        'FATAL:  no pg_hba.conf entry for host "10.0.0.5", user "league"',
    ):
        assert is_permanent(failed(cause)) and not is_connection_error(failed(cause))
    for cause in (
        "Connection refused\n\tIs the server running on that host?",
        "FATAL:  the database system is starting up",
        "FATAL:  the database system is shutting down",
        "FATAL:  sorry, too many connections already",
        "timeout expired",
    ):
        assert not is_permanent(failed(cause)) and is_connection_error(failed(cause))
