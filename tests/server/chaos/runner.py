"""One chaos run: the in-process server, the clients let loose on it, and the checks
afterwards (every game one consistent result line and replay, nothing logged as an error)."""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import structlog
import trio

import server.app as app_module
from engine import Direction, GameResult, Move, Team
from protocol.events import (
    Authenticate,
    JoinPrepared,
    Prepare,
    SlotDescriptor,
)
from protocol.messages import (
    Left,
    Memento,
    Prepared,
    ResultMessage,
)
from protocol.replay import read_replay
from server.app import serve
from server.config import Settings
from server.lobby import SHUTDOWN_REASON, Lobby, Room, wall_clock_reason

# ---------------------------------------------------------------------------- the server
from tests.server.chaos.bots import BEHAVIOURS, play
from tests.server.chaos.world import (
    HARD_TIMEOUT,
    IDLE_TIMEOUT,
    MAX_PACKET,
    PASSWORD,
    RESERVATION_TTL,
    SEND_BUFFER,
    SOFT_TIMEOUT,
    Bot,
    World,
)


class RecordingLobby(Lobby):
    """The real lobby, remembering every room it ever created."""

    instances: list[RecordingLobby] = []  # noqa: RUF012

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.created: list[str] = []
        RecordingLobby.instances.append(self)

    def _create_room(self, **kwargs: Any) -> Room:
        room = super()._create_room(**kwargs)
        self.created.append(room.id)
        return room


async def healthy_game(world: World) -> str:
    """A fresh admin and two well-behaved bots play a complete prepared game (no timeouts)."""
    rng = random.Random(0)
    admin_bot = await Bot.connect(world, "health_admin")
    slots = (SlotDescriptor("fresh-one", False, True), SlotDescriptor("fresh-two", False, True))
    await admin_bot.send(Authenticate(PASSWORD), Prepare(None, False, slots))
    prepared = await admin_bot.until(lambda m: isinstance(m, Prepared))
    assert isinstance(prepared, Prepared), prepared
    one, two = await Bot.connect(world, "health"), await Bot.connect(world, "health")
    await one.send(JoinPrepared(prepared.reservations[0]))
    await two.send(JoinPrepared(prepared.reservations[1]))
    async with trio.open_nursery() as nursery:
        for bot in (one, two):
            nursery.start_soon(play, bot, rng, lambda m: isinstance(m, Left))
    for bot in (one, two):
        bot.check_rooms()
        assert bot.joined == [prepared.room_id]
        result = next(m.result for m in bot.messages if isinstance(m, ResultMessage))
        final = [m.state for m in bot.messages if isinstance(m, Memento)][-1]
        assert final.is_over and result.regular, result
        assert result.winner == final.current_winner().winner
        await bot.close_politely()
    await admin_bot.close_politely()
    return prepared.room_id


# ---------------------------------------------------------------------------- checks


def check_record(record: dict[str, Any], wall_clock: float) -> None:
    """One results line is consistent in itself (docs/protocol.md §6.3/§6.4) and with its replay."""
    players = record["players"]
    assert [p["team"] for p in players] in (["ONE"], ["ONE", "TWO"]), record
    assert record["turn"] == len(record["moves"]) == len(record["moveMs"]), record
    violators = [p for p in players if "violation" in p]
    scores = [(p["score"], p["swarm"]) for p in players]
    if record["end"] in ("shutdown", "wall_clock"):
        reason = SHUTDOWN_REASON if record["end"] == "shutdown" else wall_clock_reason(wall_clock)
        assert record["reason"] == reason and record["winner"] is None, record
        assert not record["regular"] and all(s == (0, 0) for s in scores), record
    elif violators:
        assert not record["regular"], record
        winner = next((p["team"] for p in players if "violation" not in p), None)
        assert record["winner"] == winner, record
        for p in players:
            assert ("violation" in p) == (p["score"] == 0), record
            if "violation" in p:
                assert (p["score"], p["swarm"]) == (0, 0), record
        texts = {
            "LEFT": "hat das Spiel verlassen: ",
            "RULE_VIOLATION": "Regelverletzung von ",
            "PROCESS_VIOLATION": "Missachtung des Spielablaufs von ",
            "SOFT_TIMEOUT": f"laenger als {SOFT_TIMEOUT:g} Sekunden",
            "HARD_TIMEOUT": f"innerhalb von {SOFT_TIMEOUT:g} Sekunden",
        }
        assert texts[violators[0]["violation"]] in record["reason"], record
        if record["end"] == "expired":
            assert any(p.get("violationDetail") == "NOT_CONNECTED" for p in violators), record
    else:
        assert record["regular"], record
        # Expired with every slot filled: a one-slot prepared room (regular, as cancel()).
        assert record["end"] == "over" or len(players) == 1, record
        points = [s for s, _ in scores]
        if record["winner"] is None:
            assert all(s == 1 for s in points), record
        else:
            assert sorted(points) == sorted([2] + [0] * (len(points) - 1)), record
            assert players[[p["team"] for p in players].index(record["winner"])]["score"] == 2

    # The replay is loadable and agrees: same result, and the moves lead through its states.
    replay = read_replay(Path(record["replay"]).read_bytes())
    assert replay.result is not None and result_fields(replay.result) == record_fields(record)
    if record["moves"]:
        assert replay.states, record
    if replay.states:
        state = replay.states[0]
        assert state.turn == 0
        path = [state]
        for x, y, direction in record["moves"]:
            state = state.apply(Move(x, y, Direction[direction]))
            path.append(state)
        assert state.turn == record["turn"]
        # The replay's states (a step may record one twice) lie on the path of the moves.
        distinct = [s for i, s in enumerate(replay.states) if i == 0 or s != replay.states[i - 1]]
        position = iter(path)
        assert all(any(s == p for p in position) for s in distinct), "replay states"
        for p in players:
            if "violation" not in p and record["end"] not in ("shutdown", "wall_clock"):
                assert p["swarm"] == state.greatest_swarm_weight(Team[p["team"]]), record
        if record["regular"]:
            winner = state.current_winner().winner
            assert record["winner"] == (winner.name if winner else None), record


def result_fields(result: GameResult) -> tuple[object, ...]:
    return (
        result.winner.name if result.winner else None,
        result.regular,
        result.reason,
        [(e.team.name, e.name, points, swarm) for e, (points, swarm) in result.scores],
    )


def record_fields(record: dict[str, Any]) -> tuple[object, ...]:
    players = [(p["team"], p["name"], p["score"], p["swarm"]) for p in record["players"]]
    return (record["winner"], record["regular"], record["reason"], players)


# ---------------------------------------------------------------------------- the test


async def run_chaos(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    seed: int,
    seconds: float,
    concurrency: int,
    wall_clock: float,
) -> None:
    print(f"chaos seed {seed}: rerun with CHAOS_SEED={seed}")
    try:
        await _run_chaos(tmp_path, monkeypatch, seed, seconds, concurrency, wall_clock)
    except BaseException as error:
        error.add_note(f"chaos seed {seed}: rerun with CHAOS_SEED={seed}")
        raise


async def _run_chaos(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    seed: int,
    seconds: float,
    concurrency: int,
    wall_clock: float,
) -> None:
    """`wall_clock`: the game wall-clock limit; below `seconds` stalled games end by it during
    the run, too (the final healthy game must stay well within it)."""
    RecordingLobby.instances.clear()
    monkeypatch.setattr(app_module, "Lobby", RecordingLobby)
    results_file = tmp_path / "results.jsonl"
    replay_dir = tmp_path / "replays"
    settings = Settings(
        host="127.0.0.1",
        port=0,
        password=PASSWORD,
        save_replay=True,
        replay_dir=replay_dir,
        results_file=results_file,
        soft_timeout=SOFT_TIMEOUT,
        hard_timeout=HARD_TIMEOUT,
        idle_timeout=IDLE_TIMEOUT,
        reservation_ttl=RESERVATION_TTL,
        game_wall_clock_limit=wall_clock,
        max_packet_bytes=MAX_PACKET,
        send_buffer_messages=SEND_BUFFER,
        # Every chaos client comes from 127.0.0.1: a login lockout would refuse its admins.
        login_lockout=0,
        # Answered at once: a bot that closes right after a wrong password would otherwise
        # close before its delayed answer, and the check "every refused request was answered"
        # could not tell that from a lost answer. The delay is tested in test_limits.py.
        login_failure_delay=0,
    )
    master = random.Random(seed)
    stop, served = trio.Event(), trio.Event()
    crashed: list[BaseException] = []
    weights = [weight for weight, _ in BEHAVIOURS]

    with structlog.testing.capture_logs() as logs, trio.fail_after(seconds + 25):
        async with trio.open_nursery() as nursery:

            async def run_server(task_status: trio.TaskStatus[int]) -> None:
                try:
                    await serve(settings, task_status=task_status, stop=stop, handle_signals=False)
                except BaseException as error:
                    crashed.append(error)
                    raise
                finally:
                    served.set()

            port = await nursery.start(run_server)
            world = World(port)
            limiter = trio.CapacityLimiter(concurrency)

            async def client(
                behaviour: Callable[[World, random.Random], Awaitable[None]], rng: random.Random
            ) -> None:
                try:
                    await behaviour(world, rng)
                finally:
                    limiter.release_on_behalf_of(rng)

            async with trio.open_nursery() as clients:
                end = trio.current_time() + seconds
                while trio.current_time() < end:
                    (behaviour,) = master.choices([b for _, b in BEHAVIOURS], weights)
                    rng = random.Random(master.getrandbits(64))
                    await limiter.acquire_on_behalf_of(rng)  # at most `concurrency` at once
                    clients.start_soon(client, behaviour, rng)
                    await trio.sleep(master.uniform(0, 0.03))
                world.stop_spawning.set()
                # Its own World: no chaos client learns of the room (an admin could cancel it).
                health_room = await healthy_game(World(port))
                world.stopping = True
                stop.set()
            await served.wait()

    assert not crashed, crashed
    errors = [e for e in logs if e.get("log_level") in ("error", "critical", "exception")]
    assert not errors, errors[:5]
    seen = Counter(str(entry.get("event")) for entry in logs)
    assert not seen["closing idle connection"], "no connection gets near the idle timeout"
    (lobby,) = RecordingLobby.instances
    assert not lobby.rooms and not lobby._joinable and not lobby._reservations
    assert not lobby._members and not lobby._admins and not lobby._closing_rooms
    assert not any(timer.active for _, _, timer in lobby.timers._heap)

    records = [json.loads(line) for line in results_file.read_text("utf-8").splitlines()]
    by_room = Counter(record["room"] for record in records)
    assert not [room for room, n in by_room.items() if n > 1], "a room was recorded twice"
    # Every room the server created (so every started one) has exactly one result line.
    assert set(by_room) == set(lobby.created), set(lobby.created) ^ set(by_room)
    assert world.welcomed <= set(by_room) and health_room in by_room
    started = [record for record in records if record["room"] in world.welcomed]
    assert all(len(record["players"]) == 2 for record in started)
    for record in records:
        check_record(record, wall_clock)
    # What clients received is what was recorded.
    recorded = {record["room"]: record_fields(record) for record in records}
    for room_id, received in world.results.items():
        for result in received:
            assert result_fields(result) == recorded[room_id], room_id
    replays = sorted(replay_dir.iterdir())
    assert len(replays) == len(records)
    assert {Path(record["replay"]) for record in records} == set(replays)
    for path in replays:
        read_replay(path.read_bytes())

    ends = Counter(record["end"] for record in records)
    print(
        f"{len(records)} games ({dict(ends)}), {len(world.welcomed)} started; {dict(world.stats)}"
    )
    print({event: seen[event] for event in INTERESTING_LOG_EVENTS})
    assert ends["over"] and len(world.welcomed) >= 3  # the run really played games


# Server paths the chaos should reach (printed, not asserted: which ones a run reaches depends
# on the timing).
INTERESTING_LOG_EVENTS = [
    "slow reader: send queue full, disconnecting",
    "client does not read, disconnecting",
    "protocol error",
    "request refused",
    "rule violation",
    "process violation",
    "soft timeout",
    "hard timeout",
    "prepared room expired",
    "game wall-clock limit reached",
]


def chaos_seed(default: int) -> int:
    """`CHAOS_SEED` from the environment (a seed to replay), else `default`."""
    value = os.environ.get("CHAOS_SEED")
    return int(value) if value else default
