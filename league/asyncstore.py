"""A store used from trio (`StoreThread`; the league's is `AsyncStore`): every call runs on one
dedicated thread."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Generic, ParamSpec, Protocol, TypeVar

import trio

from league.store import LeagueStore

__all__ = ["AsyncStore", "StoreThread"]

P = ParamSpec("P")
T = TypeVar("T")


class _Closable(Protocol):
    def close(self) -> None: ...


S = TypeVar("S", bound=_Closable)


class StoreThread(Generic[S]):
    """A synchronous store (with a `close()`) used from trio: every call runs on one dedicated
    thread (an SQLite connection belongs to its thread), so a commit's fsync never stalls the
    game server that measures the bots' move times in this event loop. The league's store is
    `AsyncStore`; the ladder's (ladder.store) uses this directly."""

    def __init__(self, open_store: Callable[[], S], *, name: str = "league-store") -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self.store: S = self._executor.submit(open_store).result()

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


class AsyncStore(StoreThread[LeagueStore]):
    """The league store (`LeagueStore`) used from trio, on its own thread."""
