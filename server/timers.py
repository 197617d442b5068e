"""One task runs every timer of the lobby: hard timeouts, reservation expiry, wall-clock limits.

A heap of deadlines served by one sleeping task is much cheaper than a task (or a cancel scope)
per pending move request, and cancelling is O(1): a cancelled timer is skipped when it is due.
All deadlines are on trio's clock, so tests drive them with MockClock without real waiting.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable

import structlog
import trio

log = structlog.get_logger("server.timers")


class Timer:
    """A scheduled callback; `cancel()` makes sure it never runs."""

    __slots__ = ("_callback", "deadline")

    def __init__(self, deadline: float, callback: Callable[[], None]) -> None:
        self.deadline = deadline
        self._callback: Callable[[], None] | None = callback

    def cancel(self) -> None:
        self._callback = None

    @property
    def active(self) -> bool:
        return self._callback is not None

    def _fire(self) -> None:
        callback, self._callback = self._callback, None
        if callback is not None:
            try:
                callback()
            except Exception:
                # A bug in one room's timer must not stop every other room's timers.
                log.exception("timer callback failed")


class Timers:
    """Schedule synchronous callbacks at trio-clock deadlines; `run()` must be running."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Timer]] = []
        self._order = itertools.count()  # breaks deadline ties in scheduling order
        self._sleep: trio.CancelScope | None = None

    def call_at(self, deadline: float, callback: Callable[[], None]) -> Timer:
        timer = Timer(deadline, callback)
        heapq.heappush(self._heap, (deadline, next(self._order), timer))
        if self._sleep is not None and deadline < self._sleep.deadline:
            self._sleep.deadline = deadline
        return timer

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        return self.call_at(trio.current_time() + delay, callback)

    def __len__(self) -> int:
        return len(self._heap)

    async def run(self) -> None:
        """Serve the timers forever (until cancelled)."""
        while True:
            deadline = self._heap[0][0] if self._heap else math.inf
            with trio.CancelScope(deadline=deadline) as scope:
                self._sleep = scope
                await trio.sleep_forever()
            self._sleep = None
            now = trio.current_time()
            while self._heap and self._heap[0][0] <= now:
                _, _, timer = heapq.heappop(self._heap)
                # A timer's callback may schedule further timers; the heap stays consistent.
                timer._fire()
