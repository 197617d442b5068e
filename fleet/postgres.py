"""The league store on PostgreSQL (psycopg 3): the same `Backend` interface as SQLite.

The store's SQL is written for both (docs/league.md): `?` placeholders, which this backend turns
into psycopg's `%s`. Transactions run at READ COMMITTED; every write of the store is a
compare-and-set on the attempt number, so concurrent workers cannot both win a row.

A restart of PostgreSQL breaks the connection; the next transaction reconnects (waiting up to
`reconnect_for` seconds for the server to come back). A transaction that fails on a broken
connection is not replayed here: the caller repeats the whole operation (`retrying`), which is
safe because every write of the store is idempotent or fenced.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any, TypeVar

import psycopg
import structlog

__all__ = ["PostgresBackend", "is_connection_error", "retrying", "to_pyformat"]

log = structlog.get_logger("fleet.postgres")

T = TypeVar("T")

RECONNECT_FOR = 120.0
CONNECT_TIMEOUT = 5


def to_pyformat(sql: str) -> str:
    """The store's `?` placeholders as psycopg's `%s` (a literal `%` is doubled first)."""
    return sql.replace("%", "%%").replace("?", "%s")


def is_connection_error(error: BaseException) -> bool:
    """Whether `error` means the database is (for now) unreachable rather than a bad
    statement: a broken connection, a server shutting down or refusing connections."""
    if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
        return True
    # 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now.
    return isinstance(error, psycopg.Error) and (error.sqlstate or "").startswith("57P")


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
    deadline = time.monotonic() + (RECONNECT_FOR if retry_for is None else retry_for)
    delay = 0.1
    while True:
        try:
            return operation()
        except Exception as error:
            if not is_transient(error) or time.monotonic() + delay > deadline:
                raise
            log.warning("database unreachable, retrying", error=str(error), delay=delay)
            sleep(delay)
            delay = min(delay * 2, 2.0)


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
    """One psycopg connection (use one backend per thread or process), reconnected when a
    transaction starts on a broken one."""

    def __init__(self, dsn: str, *, reconnect_for: float | None = None) -> None:
        self.dsn = dsn
        self.reconnect_for = reconnect_for
        self._connection: psycopg.Connection[Any] | None = None
        self._connect()

    def _connect(self) -> psycopg.Connection[Any]:
        if self._connection is not None and not self._connection.closed:
            return self._connection
        self._connection = retrying(
            lambda: psycopg.connect(self.dsn, connect_timeout=CONNECT_TIMEOUT, autocommit=True),
            retry_for=self.reconnect_for,
        )
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
