"""The league store and the match runs of a distributed league on one backend (one connection),
opened by the store's address (`league.store.open_backend`)."""

from __future__ import annotations

from fleet.runs import Runs
from league.store import LeagueStore, open_backend

__all__ = ["open_store"]


def open_store(database: str) -> tuple[LeagueStore, Runs]:
    """The league store and the match runs on one backend (one connection)."""
    backend = open_backend(database)
    return LeagueStore(backend), Runs(backend)
