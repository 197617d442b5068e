"""The web viewer in its own process (web.process): fed by the observer feed, restarted when
it dies, never a cost to the games."""

from __future__ import annotations

import contextlib
import os
import pickle
import re
import shlex
import signal
import socket
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest
import trio

from engine import GameResult, GameState, Team
from protocol import GAME_TYPE
from protocol.events import Prepare, SlotDescriptor
from protocol.messages import Left, Memento, Paused, ResultMessage, RoomError
from server.app import serve
from server.config import Settings
from server.feed import RoomPlayer
from tests.helpers.process import TEST_BOTS
from web.hub import GameHub
from web.process import NICENESS, SHORT_SLICE_NS, PipeFeed, WebProcess, decode_event, encode_event
from web.sc import admin_request

from .httpclient import Browser
from .players import random_bot


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(port=0, replay_dir=tmp_path / "replays", password="secret-pw")


@pytest.fixture
async def web(settings: Settings, nursery: trio.Nursery) -> AsyncIterator[tuple[int, WebProcess]]:
    companion = WebProcess(settings, port=0)
    stop = trio.Event()

    async def run(task_status: trio.TaskStatus[int]) -> None:
        await serve(
            settings, task_status=task_status, stop=stop, handle_signals=False, companion=companion
        )

    port = await nursery.start(run)
    yield port, companion
    stop.set()


def test_a_state_crosses_the_pipe_whole() -> None:
    state = GameState.initial(5)
    for _ in range(3):
        state = state.apply(state.legal_moves()[0])
    event = ("observe", 1.5, Memento("r1", state))
    encoded = encode_event(event)
    assert len(pickle.dumps(encoded)) < 1000  # not the engine's tables
    kind, when, message = decode_event(encoded)
    assert (kind, when) == ("observe", 1.5) and isinstance(message, Memento)
    assert message.state == state and message.state.last_move == state.last_move


def test_every_state_of_a_game_crosses_the_pipe_as_it_was() -> None:
    """Bitboards out, rows in: every fish size of both teams, squids, empty fields."""
    state = GameState.initial(11)
    while not state.is_over:
        (_, _, message) = decode_event(encode_event(("observe", 0.0, Memento("r", state))))
        assert message.state.rows() == state.rows() and message.state == state
        state = state.apply(state.legal_moves()[state.turn % len(state.legal_moves())])


def test_a_full_feed_drops_events_and_never_blocks() -> None:
    feed = PipeFeed(buffer=3)
    feed.room_opened("r", paused=False, prepared=True)
    for turn in range(10):
        feed.observe(Paused("r", turn % 2 == 0))
    assert feed.dropped == 8
    # The journal still knows the room for a viewer that starts afresh; a closed room is gone.
    assert [event[0] for event in feed.journal.replay()][:1] == ["opened"]
    feed.observe(Left("r"))
    assert feed.journal.replay() == []


def test_the_hub_takes_the_events_as_the_pipe_gives_them() -> None:
    hub = GameHub()
    result = GameResult([], Team.ONE, True, "won")
    hub.apply(("opened", 100.0, "r", False, True))
    hub.apply(("players", 100.5, "r", (RoomPlayer("ONE", "A", True),)))
    hub.apply(decode_event(encode_event(("observe", 101.0, Memento("r", GameState.initial(1))))))
    hub.apply(("observe", 102.0, ResultMessage("r", result)))
    view = hub.games["r"]
    assert view.opened_at == 100.0 and view.clock_start == 101.0
    assert view.names() == ["A", "Team TWO"] and view.status == "over"


async def test_the_viewer_process_shows_the_games_and_ends_with_the_server(
    web: tuple[int, WebProcess],
) -> None:
    port, companion = web
    with trio.fail_after(30):
        assert companion.process is not None and companion.process.pid != os.getpid()
        slots = (SlotDescriptor("A", True, True), SlotDescriptor("B", True, True))
        reply = await admin_request(port, "secret-pw", [Prepare(GAME_TYPE, True, slots)])
        room = reply.prepared[0].room_id
        browser = Browser(companion.url)
        while True:
            _status, body = await browser.get("/api/rooms")
            if [row["id"] for row in body["rooms"]] == [room]:
                break
            await trio.sleep(0.05)
        assert body["rooms"][0]["names"] == ["A", "B"]


async def test_a_viewer_process_that_dies_comes_back_with_the_open_rooms(
    web: tuple[int, WebProcess],
) -> None:
    port, companion = web
    with trio.fail_after(40):
        async with trio.open_nursery() as nursery:
            slots = (SlotDescriptor("A", True, True), SlotDescriptor("B", True, True))
            reply = await admin_request(port, "secret-pw", [Prepare(GAME_TYPE, False, slots)])
            prepared = reply.prepared[0]
            gate_send, gate = trio.open_memory_channel[None](0)
            for seed, code in enumerate(prepared.reservations):
                nursery.start_soon(
                    partial(random_bot, port, reservation=code, seed=seed, gate=gate)
                )
            for _ in range(4):
                await gate_send.send(None)
            first = companion.process
            assert first is not None
            os.kill(first.pid, signal.SIGKILL)
            while companion.process is first or not companion.url:
                await trio.sleep(0.05)
            browser = Browser(companion.url)
            while True:
                try:
                    _status, body = await browser.get(f"/api/games/{prepared.room_id}")
                except OSError:
                    await trio.sleep(0.1)  # the new process is not listening yet
                    continue
                if isinstance(body, dict) and body.get("turn", 0) >= 3:
                    break
                await trio.sleep(0.05)
            assert companion.starts == 2 and body["names"] == ["A", "B"]
            nursery.cancel_scope.cancel()


async def test_a_web_port_in_use_fails_the_server(settings: Settings) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        companion = WebProcess(settings, port=taken.getsockname()[1])
        with trio.fail_after(30), pytest.raises(BaseException) as caught:
            await serve(settings, handle_signals=False, companion=companion)
        errors = [caught.value]
        while isinstance(errors[-1], BaseExceptionGroup):
            errors.append(errors[-1].exceptions[0])
        assert isinstance(errors[-1], OSError) and "in use" in str(errors[-1])


async def test_the_viewer_process_asks_the_servers_login_gate(
    settings: Settings, nursery: trio.Nursery
) -> None:
    settings = replace(settings, login_failures=2, login_lockout=60.0, login_failure_delay=0.0)
    companion = WebProcess(settings, port=0)
    stop = trio.Event()

    async def run(task_status: trio.TaskStatus[int]) -> None:
        await serve(
            settings, task_status=task_status, stop=stop, handle_signals=False, companion=companion
        )

    port = await nursery.start(run)
    with trio.fail_after(30):
        browser = Browser(companion.url)
        await browser.session()
        # A wrong password waits LOGIN_FAILURE_DELAY in the viewer's process (1 s).
        for _ in range(2):
            assert (await browser.post("/api/login", {"password": "guess"}))[0] == 403
        status, _ = await browser.post("/api/login", {"password": "secret-pw"})
        assert status == 429
        reply = await admin_request(port, "secret-pw", [])
        assert any("Too many failed logins" in text for text in reply.errors)
    stop.set()


async def test_a_stopped_viewer_process_never_slows_a_game(
    settings: Settings, nursery: trio.Nursery
) -> None:
    companion = WebProcess(settings, port=0, feed_buffer=20)
    stop = trio.Event()

    async def run(task_status: trio.TaskStatus[int]) -> None:
        await serve(
            settings, task_status=task_status, stop=stop, handle_signals=False, companion=companion
        )

    port = await nursery.start(run)
    assert companion.process is not None
    os.kill(companion.process.pid, signal.SIGSTOP)  # a viewer that takes nothing any more
    try:
        with trio.fail_after(30):
            # More than the pipe holds: from now on the feed's buffer is full.
            for _ in range(3000):
                companion.feed.observe(RoomError("elsewhere", "x" * 100, None))  # type: ignore[arg-type]
                await trio.sleep(0)
            slots = (SlotDescriptor("A", True, True), SlotDescriptor("B", True, True))
            reply = await admin_request(port, "secret-pw", [Prepare(GAME_TYPE, False, slots)])
            results: list[GameResult | None] = []
            async with trio.open_nursery() as players:
                for seed, code in enumerate(reply.prepared[0].reservations):

                    async def play(code: str = code, seed: int = seed) -> None:
                        results.append(await random_bot(port, reservation=code, seed=seed))

                    players.start_soon(play)
        # The whole game was played; what the viewer could not take was dropped.
        assert len(results) == 2 and all(result is not None for result in results)
        assert companion.feed.dropped > 0
    finally:
        os.kill(companion.process.pid, signal.SIGCONT)
        stop.set()


def _priority(pid: int) -> tuple[int, int]:
    """The nice value and scheduling policy of process `pid` (its main thread), from /proc."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # from field 3 (state) on: proc(5)
    return int(fields[19 - 3]), int(fields[41 - 3])


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            found += [int(child) for child in (task / "children").read_text().split()]
    return found


def _kernel_at_least(major: int, minor: int) -> bool:
    found = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return found is not None and (int(found[1]), int(found[2])) >= (major, minor)


def _slice_ns(pid: int) -> int | None:
    for line in Path(f"/proc/{pid}/sched").read_text().splitlines():
        if line.startswith("se.slice"):
            return int(line.split(":")[1])
    return None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, per-thread priority")
async def test_a_bot_the_viewer_starts_gets_the_servers_priority_not_the_viewers(
    settings: Settings, nursery: trio.Nursery
) -> None:
    bot = [sys.executable, str(TEST_BOTS / "fast_bot.py")]
    settings = replace(settings, web_play_bots=(("quick", shlex.join(bot)),))
    companion = WebProcess(settings, port=0)
    stop = trio.Event()

    async def run(task_status: trio.TaskStatus[int]) -> None:
        await serve(
            settings, task_status=task_status, stop=stop, handle_signals=False, companion=companion
        )

    await nursery.start(run)
    assert companion.process is not None
    viewer = companion.process.pid
    # The viewer itself runs at its lower priority: nice 10 more than ours, SCHED_BATCH.
    ours = _priority(os.getpid())
    assert _priority(viewer) == (ours[0] + NICENESS, os.SCHED_BATCH)
    # ... and the shortest slice, where the kernel takes one (EEVDF custom slices, 6.12 on).
    if _kernel_at_least(6, 12) and os.uname().machine in ("x86_64", "aarch64"):
        assert _slice_ns(viewer) == SHORT_SLICE_NS
    with trio.fail_after(30):
        browser = Browser(companion.url)
        await browser.session()
        rows = [[field.name for field in row] for row in GameState.initial(3).rows()]
        body = {"board": rows, "turn": 0, "firstUnion": None, "lastMove": None, "bot": "quick"}
        status, answer = await browser.post("/api/play/from", body)
        assert status == 200, answer
        while True:
            started = [
                pid
                for pid in _children(viewer)
                if "fast_bot.py" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
            ]
            if started:
                break
            await trio.sleep(0.05)
        # The person's opponent gets what a bot of a real game gets: our priority.
        assert _priority(started[0]) == ours
    stop.set()
