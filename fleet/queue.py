"""Dramatiq on Redis, configured for matches rather than for Dramatiq's defaults
(docs/distributed.md explains each setting; facts in docs/tournament.md §3).

- One message per match: its id, nothing more. The worker reads everything else from the league
  file and the store.
- No actor time limit: Dramatiq's `TimeLimit` raises inside the running thread, which in trio
  code lands in the scheduler and skips `finally` blocks (bots would be left running). Games are
  timed by trio cancel scopes instead.
- A dead worker is found by its missing heartbeat in Redis: `heartbeat_timeout=5000` ms and
  maintenance on every fetch (`maintenance_chance=1_000_000`, Dramatiq's scale) re-deliver a
  killed worker's match within seconds (the default took 851 s here).
- Prefetch 1 and one worker thread: a busy worker holds no second match.
- Few retries: a game a bot loses by crashing is a result; a retry is for a match that could not
  be played at all (a bot that does not start, a lost server). After the last retry the message
  goes to Dramatiq's dead-letter set and the match is marked failed.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import CurrentMessage, Middleware, Retries, TimeLimit

__all__ = [
    "HEARTBEAT_TIMEOUT_MS",
    "MATCH_QUEUE",
    "MAX_RETRIES",
    "ShutdownFlag",
    "declare_match_actor",
    "make_broker",
    "retries_of_current_message",
]

MATCH_QUEUE = "piranhas-matches"
ACTOR_NAME = "play_match"
MAX_RETRIES = 2
RETRY_BACKOFF_MS = (1_000, 10_000)
HEARTBEAT_TIMEOUT_MS = 5_000
MAINTENANCE_ALWAYS = 1_000_000  # Dramatiq's MAINTENANCE_SCALE: maintenance on every fetch


class ShutdownFlag(Middleware):
    """Sets `event` when the worker starts shutting down (SIGTERM), before Dramatiq waits for
    the running actor: the running match sees it, gives the match back and returns."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        """Called by Dramatiq's Worker.stop."""
        self.event.set()


def make_broker(url: str, *, shutdown: ShutdownFlag | None = None) -> RedisBroker:
    """The broker for the league's queue, with only the middleware a match needs."""
    middleware: list[Middleware] = [
        # Kept for the `time_limit` option, which the actor sets to infinity.
        TimeLimit(),
        Retries(
            max_retries=MAX_RETRIES,
            min_backoff=RETRY_BACKOFF_MS[0],
            max_backoff=RETRY_BACKOFF_MS[1],
        ),
        CurrentMessage(),
    ]
    if shutdown is not None:
        middleware.append(shutdown)
    return RedisBroker(  # type: ignore[no-untyped-call]
        url=url,
        middleware=middleware,
        heartbeat_timeout=HEARTBEAT_TIMEOUT_MS,
        maintenance_chance=MAINTENANCE_ALWAYS,
    )


def declare_match_actor(
    broker: dramatiq.Broker, play: Callable[[int], None]
) -> dramatiq.Actor[[int], None]:
    """The match actor on `broker`: `play(match_id)` runs in the worker's one thread."""
    decorate = dramatiq.actor(
        actor_name=ACTOR_NAME,
        queue_name=MATCH_QUEUE,
        broker=broker,
        max_retries=MAX_RETRIES,
        time_limit=math.inf,
    )
    return decorate(play)


def retries_of_current_message() -> int:
    """How often the message being processed was retried before (0 on its first delivery)."""
    message: Any = CurrentMessage.get_current_message()
    if message is None:
        return 0
    return int(message.options.get("retries", 0))
