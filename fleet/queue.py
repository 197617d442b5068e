"""Dramatiq on Redis, configured for matches rather than for Dramatiq's defaults
(docs/distributed.md explains each setting; facts in docs/tournament.md §3).

- One message per match: its id, nothing more. The worker reads everything else from the league
  file and the store. Each league has its own queue, named by its fingerprint
  (`fleet.preflight.queue_name`): leagues sharing one Redis never take each other's messages.
- Re-deliveries first: a dead worker's match goes to the front of the queue, not behind every
  match still waiting (Dramatiq's script appends it; ours is the same script with LPUSH there),
  and so does a match a stopping worker gives back (`send_first`).
- Timeouts on every Redis call (`SOCKET_TIMEOUT`): a host that drops packets is an error after
  seconds, not a call that waits forever.
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

import json
import math
import threading
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import dramatiq
import redis
from dramatiq.brokers.redis import RedisBroker, _scripts
from dramatiq.middleware import CurrentMessage, Middleware, Retries, TimeLimit

__all__ = [
    "ANALYSIS_ACTOR_NAME",
    "HEARTBEAT_TIMEOUT_MS",
    "MAX_RETRIES",
    "MatchBroker",
    "ShutdownFlag",
    "analysis_keys_in_redis",
    "declare_analysis_actor",
    "declare_match_actor",
    "make_broker",
    "match_ids_in_redis",
    "retries_of_current_message",
    "send_first",
]

ACTOR_NAME = "play_match"
# The second kind of work on the same queue (fleet.analyses): the analysis of one recorded game,
# the message (match id, game number, nodes, depth).
ANALYSIS_ACTOR_NAME = "analyse_game"
MAX_RETRIES = 2
RETRY_BACKOFF_MS = (1_000, 10_000)
HEARTBEAT_TIMEOUT_MS = 5_000
MAINTENANCE_ALWAYS = 1_000_000  # Dramatiq's MAINTENANCE_SCALE: maintenance on every fetch
CONNECT_TIMEOUT = 5.0
# Longer than any one Redis call of Dramatiq's (none blocks: fetches poll).
SOCKET_TIMEOUT = 15.0
HEALTH_CHECK_INTERVAL = 10

# Dramatiq's dispatch script, changed in two places: a dead worker's messages and the messages
# a stopping worker hands back go to the front of the queue (LPUSH; fetch pops from the front),
# and a new command enqueues at the front.
_HEXISTS = 'if redis.call("hexists", queue_messages, message_id) > 0 then\n'
_RPUSH = 'redis.call("rpush", queue_full_name, message_id)'
_DEAD_WORKER_REQUEUE = " " * 16 + _HEXISTS + " " * 20 + _RPUSH  # in the maintenance block
_SHUTDOWN_REQUEUE = " " * 12 + _HEXISTS + " " * 16 + _RPUSH  # the `requeue` command
_ENQUEUE = """-- Enqueues a new message on $queue_full_name.
if command == "enqueue" then"""
_ENQUEUE_FIRST = """if command == "enqueue_first" then
    redis.call("hset", queue_messages, ARGS[1], ARGS[2])
    redis.call("lpush", queue_full_name, ARGS[1])
elseif command == "enqueue" then"""


def _dispatch_script() -> bytes:
    script = _scripts["dispatch"].decode()
    for old, new in (
        (_DEAD_WORKER_REQUEUE, _DEAD_WORKER_REQUEUE.replace("rpush", "lpush")),
        (_SHUTDOWN_REQUEUE, _SHUTDOWN_REQUEUE.replace("rpush", "lpush")),
        (_ENQUEUE, _ENQUEUE_FIRST),
    ):
        if script.count(old) != 1:  # another Dramatiq version: fail loudly, not silently
            raise RuntimeError("Dramatiq's Redis dispatch script changed: review fleet/queue.py")
        script = script.replace(old, new)
    return script.encode()


class MatchBroker(RedisBroker):
    """Dramatiq's Redis broker with re-deliveries first (see the module doc)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)  # type: ignore[no-untyped-call]
        self.scripts["dispatch"] = self.client.register_script(_dispatch_script())


class ShutdownFlag(Middleware):
    """Sets `event` when the worker starts shutting down (SIGTERM), before Dramatiq waits for
    the running actor: the running match sees it, gives the match back and returns."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        """Called by Dramatiq's Worker.stop."""
        self.event.set()


def make_broker(url: str, *, shutdown: ShutdownFlag | None = None) -> MatchBroker:
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
    client = redis.Redis.from_url(
        url,
        socket_connect_timeout=CONNECT_TIMEOUT,
        socket_timeout=SOCKET_TIMEOUT,
        socket_keepalive=True,
        health_check_interval=HEALTH_CHECK_INTERVAL,
    )
    return MatchBroker(
        client=client,
        middleware=middleware,
        heartbeat_timeout=HEARTBEAT_TIMEOUT_MS,
        maintenance_chance=MAINTENANCE_ALWAYS,
    )


def declare_match_actor(
    broker: dramatiq.Broker, play: Callable[[int], None], queue: str
) -> dramatiq.Actor[[int], None]:
    """The match actor on `broker`, consuming `queue` (the league's, `preflight.queue_name`):
    `play(match_id)` runs in the worker's one thread."""
    decorate = dramatiq.actor(
        actor_name=ACTOR_NAME,
        queue_name=queue,
        broker=broker,
        max_retries=MAX_RETRIES,
        time_limit=math.inf,
    )
    return decorate(play)


AnalysisArgs = tuple[int, int, int | None, int | None]


def declare_analysis_actor(
    broker: dramatiq.Broker, analyse: Callable[[int, int, int | None, int | None], None], queue: str
) -> dramatiq.Actor[[int, int, int | None, int | None], None]:
    """The analysis actor on `broker`, on the same `queue` as the matches (one worker takes
    both kinds of work, one at a time): `analyse(match_id, number, nodes, depth)`."""
    decorate = dramatiq.actor(
        actor_name=ANALYSIS_ACTOR_NAME,
        queue_name=queue,
        broker=broker,
        max_retries=MAX_RETRIES,
        time_limit=math.inf,
    )
    return decorate(analyse)


def retries_of_current_message() -> int:
    """How often the message being processed was retried before (0 on its first delivery)."""
    message: Any = CurrentMessage.get_current_message()
    if message is None:
        return 0
    return int(message.options.get("retries", 0))


def send_first(broker: MatchBroker, actor: dramatiq.Actor[..., None], *args: Any) -> None:
    """Send the match (or analysis job) to the front of its queue (work given back goes
    before new work)."""
    message = actor.message(*args)
    message = message.copy(options={"redis_message_id": str(uuid.uuid4())})
    broker.do_enqueue_first(actor.queue_name, message.options["redis_message_id"], message.encode())


def _messages_in_redis(broker: MatchBroker, queue: str) -> list[dict[str, Any]]:
    """Every message Redis holds for `queue`: waiting, delayed for a retry, or being worked on
    (a message stays in its queue's hash until acknowledged). Read in one MULTI so a message
    moving from the delay queue to the queue is seen once, not never."""
    keys: Iterable[str] = (f"{broker.namespace}:{name}.msgs" for name in (queue, f"{queue}.DQ"))
    pipeline = broker.client.pipeline(transaction=True)
    for key in keys:
        pipeline.hvals(key)
    return [json.loads(data) for values in pipeline.execute() for data in values]


def match_ids_in_redis(broker: MatchBroker, queue: str) -> set[int]:
    """The match ids of every match message Redis holds for `queue`."""
    return {
        int(message["args"][0])
        for message in _messages_in_redis(broker, queue)
        if message.get("actor_name") == ACTOR_NAME and message.get("args")
    }


def analysis_keys_in_redis(broker: MatchBroker, queue: str) -> set[AnalysisArgs]:
    """The (match id, game number, nodes, depth) of every analysis message for `queue`."""
    found = set()
    for message in _messages_in_redis(broker, queue):
        args = message.get("args")
        if message.get("actor_name") == ANALYSIS_ACTOR_NAME and args and len(args) == 4:
            found.add((int(args[0]), int(args[1]), args[2], args[3]))
    return found
