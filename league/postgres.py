"""The league store on PostgreSQL (psycopg 3): the same `Backend` interface as SQLite.

The store's SQL is written for both (docs/league.md): `?` placeholders, which this backend turns
into psycopg's `%s`. Transactions run at READ COMMITTED; every write of the store is a
compare-and-set on the attempt number, so concurrent workers cannot both win a row.

Errors are permanent or transient. Permanent: the server answered and refused (a wrong password,
a missing role or database, no pg_hba.conf entry): no retry helps, it is raised at once.
Transient: the server is unreachable or restarting. The first connection of a process is made
once and fails at once either way (`StoreError`: a process with wrong settings must exit, not
look healthy). Later, a restart of PostgreSQL breaks the connection; the next transaction
reconnects once, and the caller repeats the whole operation for up to RECONNECT_FOR seconds
(`retrying`, one loop: nothing retries inside it), which is safe because every write of the
store is idempotent or fenced. An outage and its end are reported on stderr.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any, TypeVar

import psycopg
import structlog

from league.backends import StoreError, redact

__all__ = [
    "PostgresBackend",
    "is_connection_error",
    "is_permanent",
    "retrying",
    "to_pyformat",
]

log = structlog.get_logger("league.postgres")

T = TypeVar("T")

RECONNECT_FOR = 120.0
CONNECT_TIMEOUT = 5
# A host that drops packets (a cut link, a firewall) makes a call fail after seconds, not after
# the kernel's 15 minutes of retransmissions: TCP keepalives for an idle connection, a user
# timeout for unacknowledged data (libpq's tcp_user_timeout, milliseconds).
TCP_OPTIONS = (
    "keepalives=1 keepalives_idle=10 keepalives_interval=5 keepalives_count=3 "
    "tcp_user_timeout=20000 "
    # A database created without a locale is SQL_ASCII, whose text psycopg returns as bytes.
    "client_encoding=UTF8"
)


def to_pyformat(sql: str) -> str:
    """The store's `?` placeholders as psycopg's `%s` (a literal `%` is doubled first)."""
    return sql.replace("%", "%%").replace("?", "%s")


# The server answered and is starting, stopping or full: worth waiting for.
_TRANSIENT_FATAL = (
    "the database system is",  # starting up, shutting down, in recovery mode
    "too many connections",
    "remaining connection slots",
)


# The server ended this session's transaction, left idle too long (a paused process): the
# database is reachable, the work is repeated on a new connection.
_IDLE_IN_TRANSACTION = "25P03"


def _sqlstate(error: BaseException) -> str:
    return (error.sqlstate or "") if isinstance(error, psycopg.Error) else ""


def is_permanent(error: BaseException) -> bool:
    """Whether a connection error is the server refusing this login (a wrong password, role,
    database, pg_hba.conf): psycopg gives no SQLSTATE for these, the server's FATAL line says
    it."""
    if not isinstance(error, psycopg.OperationalError):
        return False
    sqlstate = _sqlstate(error)
    if sqlstate.startswith("28") or sqlstate == "3D000":
        return True
    text = str(error)
    return "FATAL:" in text and not any(hint in text for hint in _TRANSIENT_FATAL)


def _reason(error: BaseException) -> str:
    # psycopg's message: "connection failed: connection to server at ... failed: FATAL: ...";
    # its last part is the cause, the URL says where.
    text = " ".join(str(error).split())
    return text.rsplit(" failed: ", 1)[-1]


def is_connection_error(error: BaseException) -> bool:
    """Whether `error` means the database is (for now) unreachable rather than a bad
    statement or a refused login: a broken connection, a server shutting down or refusing
    connections."""
    if is_permanent(error):
        return False
    if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
        return True
    # 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now; 25P03: the server
    # ended a session left idle in a transaction (`idle_in_transaction_ms`), rolled back.
    sqlstate = _sqlstate(error)
    return sqlstate.startswith("57P") or sqlstate == _IDLE_IN_TRANSACTION


def retrying(
    operation: Callable[[], T],
    *,
    retry_for: float | None = None,
    is_transient: Callable[[BaseException], bool] = is_connection_error,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run `operation`, repeating it while it fails with a connection error, for at most
    `retry_for` seconds (default RECONNECT_FOR; backoff from 0.1 s to 2 s). Any other error is
    raised at once."""
    retry_for = RECONNECT_FOR if retry_for is None else retry_for
    deadline = time.monotonic() + retry_for
    delay = 0.1
    failing = False
    while True:
        try:
            result = operation()
        except Exception as error:
            if not is_transient(error) or time.monotonic() + delay > deadline:
                if failing:
                    report(f"database still unreachable after {retry_for:g} s, giving up")
                raise
            if _sqlstate(error) == _IDLE_IN_TRANSACTION:
                # Not an outage (the database answered): no "unreachable ... reachable again".
                report(
                    "the database ended this process's transaction, idle for too long (was "
                    "the process paused?); repeating it on a new connection"
                )
            elif not failing:
                reason = _reason(error)
                report(f"database unreachable, retrying for up to {retry_for:g} s: {reason}")
                failing = True
            log.warning("database operation failed, retrying", error=str(error), delay=delay)
            sleep(delay)
            delay = min(delay * 2, 2.0)
        else:
            if failing:
                report("database reachable again")
            return result


def report(line: str) -> None:
    """One line on stderr: where an operator (a terminal, `docker logs`, journald) looks."""
    print(f"piranhas-league: {line}", file=sys.stderr, flush=True)


class _PostgresTransaction:
    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        self._connection = connection

    def query(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        cursor = self._connection.execute(to_pyformat(sql), tuple(params))
        return list(cursor.fetchall())

    def execute(self, sql: str, params: Sequence[object] = ()) -> int:
        cursor = self._connection.execute(to_pyformat(sql), tuple(params))
        return cursor.rowcount


class PostgresBackend:
    """One psycopg connection (use one backend per thread or process), reconnected once when a
    transaction starts on a broken one. The first connection raises StoreError when it fails
    (permanent or not: see the module doc).

    `idle_in_transaction_ms`: the server ends the session (rolling its transaction back) when
    it waits that long for the next statement of an open transaction. A process frozen in the
    middle of a transaction (SIGSTOP, a paused VM, a hung thread) would otherwise keep its row
    locks until it resumes, and block whoever takes its work over. Its next call then fails as
    a connection error (`retrying` repeats the operation on a new connection)."""

    def __init__(self, dsn: str, *, idle_in_transaction_ms: int | None = None) -> None:
        self.dsn = dsn
        self.idle_in_transaction_ms = idle_in_transaction_ms
        self._connection: psycopg.Connection[Any] | None = None
        try:
            self._connect()
        except psycopg.Error as error:
            kind = "refused the login" if is_permanent(error) else "is unreachable"
            raise StoreError(f"PostgreSQL {redact(dsn)} {kind}: {_reason(error)}") from None

    def _connect(self) -> psycopg.Connection[Any]:
        if self._connection is not None and not self._connection.closed:
            return self._connection
        conninfo = psycopg.conninfo.make_conninfo(
            self.dsn, **dict(option.split("=") for option in TCP_OPTIONS.split())
        )
        connection = psycopg.connect(conninfo, connect_timeout=CONNECT_TIMEOUT, autocommit=True)
        if self.idle_in_transaction_ms is not None:
            # For this session, and for each new one after a reconnect.
            connection.execute(
                f"SET idle_in_transaction_session_timeout = {int(self.idle_in_transaction_ms)}"
            )
        self._connection = connection
        return self._connection

    @contextmanager
    def _transaction(self) -> Iterator[_PostgresTransaction]:
        connection = self._connect()
        try:
            with connection.transaction():
                yield _PostgresTransaction(connection)
        except BaseException as error:
            if is_connection_error(error) or connection.broken:
                # Start the next transaction on a new connection.
                self._drop()
            raise

    def transaction(self) -> AbstractContextManager[_PostgresTransaction]:
        """A transaction: committed when the block ends normally, rolled back when it
        raises."""
        return self._transaction()

    def _drop(self) -> None:
        if self._connection is not None:
            with suppress(psycopg.Error):
                self._connection.close()
            self._connection = None

    def close(self) -> None:
        """Close the connection."""
        self._drop()
