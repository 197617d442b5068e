"""The database under the league store (league.store): the small `Backend` interface every
statement of the store goes through, and its SQLite backend (a file; WAL; also read-only, for a
reader beside the league such as the web viewer). The PostgreSQL backend, for a distributed
league, is league.postgres; `league.store.open_backend` picks one by the store's address."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

__all__ = [
    "Backend",
    "SQLiteBackend",
    "StoreError",
    "Transaction",
    "redact",
]


class StoreError(Exception):
    """Base of the store's errors."""


class Transaction(Protocol):
    """Statements inside one transaction; `?` placeholders."""

    def query(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """Rows of a SELECT."""

    def execute(self, sql: str, params: Sequence[object] = ()) -> int:
        """Run a statement; the number of rows it changed."""


class Backend(Protocol):
    """A database. `transaction()` commits when the block ends normally and rolls back when it
    raises; transactions that write must be serializable against each other for the rows
    they touch (SQLite: one writer at a time; PostgreSQL: compare-and-set updates below)."""

    def transaction(self) -> AbstractContextManager[Transaction]:
        """A new transaction."""

    def close(self) -> None:
        """Release the connection."""


class _SQLiteTransaction:
    def __init__(self, connection: sqlite3.Connection, *, read_only: bool = False) -> None:
        self._connection = connection
        self._read_only = read_only

    def query(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        return self._connection.execute(sql, tuple(params)).fetchall()

    def execute(self, sql: str, params: Sequence[object] = ()) -> int:
        if self._read_only:
            raise sqlite3.OperationalError(
                "a read-only store (a reader beside the league) never writes"
            )
        return self._connection.execute(sql, tuple(params)).rowcount


class SQLiteBackend:
    """SQLite in WAL mode with `synchronous=FULL`: a committed result survives a crash of the
    process and of the machine; readers never block the writer. One connection per backend:
    use one backend per thread or process. Write transactions start with BEGIN IMMEDIATE, so two
    writers queue (for up to `busy_timeout` seconds) instead of failing half-way.

    `read_only` (a reader beside the league, e.g. the web viewer): the file is opened with
    `mode=ro`, one deferred transaction per read, so a read sees one consistent snapshot while
    the league writes; a write raises sqlite3.OperationalError."""

    def __init__(
        self, path: Path | str, *, busy_timeout: float = 30.0, read_only: bool = False
    ) -> None:
        self.path = Path(path)
        if self.path.exists() and not self.path.is_file():
            # SQLite would answer "disk I/O error" on the first commit (/dev/null).
            raise StoreError(f"{self.path}: the store must be a regular file")
        self.read_only = read_only
        if read_only:
            self._connection = sqlite3.connect(
                f"{self.path.resolve().as_uri()}?mode=ro",
                uri=True,
                isolation_level=None,
                timeout=busy_timeout,
            )
            return
        self._connection = sqlite3.connect(
            self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=True
        )
        self._set_wal(busy_timeout)
        self._connection.execute("PRAGMA synchronous=FULL")
        self._connection.execute("PRAGMA foreign_keys=ON")

    def _set_wal(self, busy_timeout: float) -> None:
        # Switching to WAL needs a moment of exclusive access; while another process creates
        # the same file SQLite may answer "locked" at once instead of waiting.
        deadline = time.monotonic() + busy_timeout
        while True:
            try:
                self._connection.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    @contextmanager
    def _transaction(self) -> Iterator[Transaction]:
        if self.read_only:
            self._connection.execute("BEGIN")
            try:
                yield _SQLiteTransaction(self._connection, read_only=True)
            finally:
                self._connection.execute("COMMIT")
            return
        self._connection.execute("BEGIN IMMEDIATE")
        try:
            yield _SQLiteTransaction(self._connection)
        except BaseException:
            self._connection.execute("ROLLBACK")
            raise
        self._connection.execute("COMMIT")

    def transaction(self) -> AbstractContextManager[Transaction]:
        """A write transaction (BEGIN IMMEDIATE … COMMIT, ROLLBACK on an exception); a read
        transaction when read-only."""
        return self._transaction()

    def close(self) -> None:
        """Close the connection."""
        self._connection.close()


def redact(url: str) -> str:
    """`url` with its password replaced by `***` (for messages and logs)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[1]
    return parts._replace(netloc=f"{user}:***@{host}").geturl()
