"""The league store used from trio (`AsyncStore`): every call runs on one dedicated thread."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import ParamSpec, TypeVar

import trio

from league.store import LeagueStore

__all__ = ["AsyncStore"]

P = ParamSpec("P")
T = TypeVar("T")


class AsyncStore:
    """A `LeagueStore` used from trio: every call runs on one dedicated thread (an SQLite
    connection belongs to its thread), so a commit's fsync never stalls the game server that
    measures the bots' move times in this event loop."""

    def __init__(self, open_store: Callable[[], LeagueStore]) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="league-store")
        self.store: LeagueStore = self._executor.submit(open_store).result()

    def attempt(self, operation: Callable[[], T]) -> T:
        """Run one store operation on the store's thread. A distributed worker's store
        overrides it to wait for a restarting database server (league.postgres.retrying)."""
        return operation()

    def call_sync(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`call` from outside trio: run `function` on the store's thread and wait for it."""
        return self._executor.submit(self.attempt, partial(function, *args, **kwargs)).result()

    async def call(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run `function` on the store's thread and wait for it. Shielded: a write that started
        is waited for, so a cancelled run knows whether it committed."""
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()
        future = self._executor.submit(self.attempt, partial(function, *args, **kwargs))
        future.add_done_callback(lambda _: token.run_sync_soon(done.set))
        with trio.CancelScope(shield=True):
            await done.wait()
        return future.result()

    def close(self) -> None:
        """Close the store on its thread and end the thread."""
        self._executor.submit(self.store.close).result()
        self._executor.shutdown()
