"""The lobby's single timer task (server/timers.py) on MockClock."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable

import trio
import trio.testing

from server.timers import Timers


async def start_timers(nursery: trio.Nursery) -> Timers:
    timers = Timers()
    nursery.start_soon(timers.run)
    await trio.sleep(0)
    return timers


async def test_timers_fire_in_deadline_order_at_their_time(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    timers = await start_timers(nursery)
    fired: list[tuple[str, float]] = []
    start = trio.current_time()
    timers.call_later(5, lambda: fired.append(("late", trio.current_time() - start)))
    await trio.sleep(1)
    # Scheduled later but due earlier: the sleeping task must wake up for it.
    timers.call_later(1, lambda: fired.append(("early", trio.current_time() - start)))
    await trio.sleep(10)
    assert fired == [("early", 2), ("late", 5)]


async def test_cancelled_timer_never_fires(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    timers = await start_timers(nursery)
    fired: list[str] = []
    timer = timers.call_later(1, lambda: fired.append("x"))
    timer.cancel()
    timer.cancel()  # twice is harmless
    await trio.sleep(2)
    assert fired == []
    assert not timer.active


async def test_a_failing_callback_does_not_stop_the_others(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    timers = await start_timers(nursery)
    fired: list[str] = []

    def broken() -> None:
        raise RuntimeError("bug")

    timers.call_later(1, broken)
    timers.call_later(1, lambda: fired.append("after"))
    timers.call_later(2, lambda: fired.append("later"))
    await trio.sleep(3)
    assert fired == ["after", "later"]


async def test_cancelled_timers_are_dropped_and_release_their_callbacks(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    timers = await start_timers(nursery)

    class Room:
        pass

    def holding(obj: object) -> Callable[[], None]:
        return lambda: print(obj)

    room = Room()
    ref = weakref.ref(room)
    keep = timers.call_later(3600, lambda: None)
    timer = timers.call_later(3600, holding(room))
    del room
    gc.collect()
    assert ref() is not None  # the pending timer keeps it
    timer.cancel()
    gc.collect()
    assert ref() is None  # freed now, not in an hour
    for _ in range(3000):
        timers.call_later(3600, lambda: None).cancel()
    assert len(timers) < 1500
    assert keep.active
    fired: list[str] = []
    timers.call_later(1, lambda: fired.append("live"))
    await trio.sleep(2)
    assert fired == ["live"]
