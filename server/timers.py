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

import trio

from server.logs import get_logger

log = get_logger("server.timers")


class Timer:
    """A scheduled callback; `cancel()` makes sure it never runs (and drops the callback,
    so whatever it refers to is freed at once, not when the deadline comes)."""

    __slots__ = ("_callback", "_owner", "deadline")

    def __init__(self, deadline: float, callback: Callable[[], None], owner: Timers) -> None:
        self.deadline = deadline
        self._callback: Callable[[], None] | None = callback
        self._owner = owner

    def cancel(self) -> None:
        """Never run the callback (idempotent)."""
        if self._callback is not None:
            self._callback = None
            self._owner._cancelled()

    @property
    def active(self) -> bool:
        """Neither fired nor cancelled yet."""
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
        self._cancelled_count = 0
        # The time on trio's clock: trio.current_time, and once `run` runs, the run's clock
        # itself (the same reading without trio.current_time's two calls; once per move).
        self.now: Callable[[], float] = trio.current_time

    def call_at(self, deadline: float, callback: Callable[[], None]) -> Timer:
        """Run `callback` at `deadline` (trio clock) unless the returned timer is cancelled."""
        timer = Timer(deadline, callback, self)
        heapq.heappush(self._heap, (deadline, next(self._order), timer))
        if self._sleep is not None and deadline < self._sleep.deadline:
            self._sleep.deadline = deadline
        return timer

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        """Run `callback` `delay` seconds from now."""
        return self.call_at(trio.current_time() + delay, callback)

    def __len__(self) -> int:
        return len(self._heap)

    def _cancelled(self) -> None:
        # Most hard timeouts are cancelled by the move; drop them in bulk now and then so
        # the heap holds about the live timers only.
        self._cancelled_count += 1
        if self._cancelled_count > 1024 and self._cancelled_count * 2 > len(self._heap):
            self._heap = [entry for entry in self._heap if entry[2].active]
            heapq.heapify(self._heap)
            self._cancelled_count = 0

    async def run(self) -> None:
        """Serve the timers forever (until cancelled)."""
        self.now = trio.lowlevel.current_clock().current_time
        while True:
            deadline = self._heap[0][0] if self._heap else math.inf
            with trio.CancelScope(deadline=deadline) as scope:
                self._sleep = scope
                await trio.sleep_forever()
            self._sleep = None
            now = trio.current_time()
            while self._heap and self._heap[0][0] <= now:
                _, _, timer = heapq.heappop(self._heap)
                if not timer.active:
                    self._cancelled_count -= 1
                # A timer's callback may schedule further timers; the heap stays consistent.
                timer._fire()
