"""Opening a league store by its address: `postgresql://…` (or `postgres://…`) for the shared
store of a distributed league, anything else is the path of an SQLite file (one machine)."""

from __future__ import annotations

from pathlib import Path

from fleet.runs import Runs
from league.store import Backend, LeagueStore, SQLiteBackend

__all__ = ["is_postgres", "open_backend", "open_store"]


def is_postgres(database: str) -> bool:
    """Whether `database` names a PostgreSQL server."""
    return database.startswith(("postgresql://", "postgres://"))


def open_backend(database: str) -> Backend:
    """A backend for `database` (see the module doc)."""
    if is_postgres(database):
        from fleet.postgres import PostgresBackend

        return PostgresBackend(database)
    return SQLiteBackend(Path(database))


def open_store(database: str) -> tuple[LeagueStore, Runs]:
    """The league store and the match runs on one backend (one connection)."""
    backend = open_backend(database)
    return LeagueStore(backend), Runs(backend)
