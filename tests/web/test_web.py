"""The web viewer without a browser: feed, snapshots, board JSON, sessions, uploads, sockets."""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import structlog
import trio

from engine import GameState, Team
from protocol.events import Join, MovePacket, Observe
from protocol.messages import Left, Memento, Paused, ResultMessage, ServerMessage
from protocol.replay import write_replay
from server.config import Settings, parse_settings
from server.feed import RoomPlayer
from server.lobby import Lobby
from web import app as web_app
from web import replays as web_replays
from web.board import largest_swarm, legal_targets, move_target, state_json
from web.hub import GameHub
from web.wsclient import WebSocketClosed, WsClient

from .conftest import Running
from .httpclient import Browser, http
from .players import random_bot


def random_states(count: int, seed: int) -> list[GameState]:
    chooser = random.Random(seed)
    state = GameState.initial(seed)
    states = [state]
    while len(states) < count and not state.is_over:
        state = state.apply(chooser.choice(state.legal_moves()))
        states.append(state)
    return states


# ---------------------------------------------------------------------- board JSON


def test_targets_are_where_the_engine_puts_the_fish() -> None:
    for state in random_states(40, 11):
        mover = state.current_team
        targets = legal_targets(state)
        assert sum(len(options) for options in targets.values()) == len(state.legal_moves())
        for move in state.legal_moves():
            tx, ty = move_target(state, move)
            after = state.apply(move)
            assert after.field(tx, ty).team is mover
            assert after.field(move.x, move.y).team is None
            assert {"dir": move.direction.name, "to": [tx, ty]} in targets[f"{move.x},{move.y}"]


def test_largest_swarm_weighs_what_the_engine_says() -> None:
    for state in random_states(60, 12):
        for team in (Team.ONE, Team.TWO):
            cells = largest_swarm(state, team)
            weight = sum(state.field(x, y).size for x, y in cells)
            assert weight == max(0, state.greatest_swarm_weight(team))
            assert all(state.field(x, y).team is team for x, y in cells)


def test_state_json_is_the_engine_board_with_the_last_move() -> None:
    before, after = random_states(2, 13)
    data = state_json(after, before)
    assert data["board"] == [[field.name for field in row] for row in after.rows()]
    move = after.last_move
    assert move is not None
    assert data["lastMove"]["to"] == list(move_target(before, move))
    assert data["turn"] == 1 and data["current"] == "TWO"


# ---------------------------------------------------------------------- the feed


class RecordingFeed(GameHub):
    """A hub that also keeps every observer message it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[ServerMessage] = []

    def observe(self, message: ServerMessage, now: float | None = None) -> None:
        self.messages.append(message)
        super().observe(message, now)


class Peer:
    def __init__(self, name: str) -> None:
        self.name = name
        self.messages: list[ServerMessage] = []

    def send(self, message: ServerMessage, on_sent: Callable[[float], None] | None = None) -> None:
        self.messages.append(message)
        if on_sent is not None:
            on_sent(trio.current_time())

    def close(self) -> None:
        pass


async def test_the_feed_gets_exactly_what_an_observer_gets() -> None:
    feed = RecordingFeed()
    lobby = Lobby(Settings(password="pw"), feed=feed)
    async with trio.open_nursery() as nursery:
        await nursery.start(lobby.run)
        one, two, observer = Peer("one"), Peer("two"), Peer("observer")
        for peer in (one, two, observer):
            lobby.connect(peer)
        lobby.handle(one, Join(None), 0.0)
        room_id = next(iter(lobby.rooms))
        assert feed.games[room_id].status == "waiting"
        assert [p.joined for p in feed.games[room_id].players] == [True]
        from protocol.events import Authenticate

        lobby.handle(observer, Authenticate("pw"), 0.0)
        lobby.handle(observer, Observe(room_id), 0.0)
        lobby.handle(two, Join(None), 0.0)
        state = lobby.rooms[room_id].state
        players = {Team.ONE: one, Team.TWO: two}
        while room_id in lobby.rooms and not lobby.rooms[room_id].state.is_over:
            move = state.legal_moves()[0]
            lobby.handle(players[state.current_team], MovePacket(room_id, move), 0.0)
            state = state.apply(move)
        await lobby.wait_rooms_closed()
        nursery.cancel_scope.cancel()
    # As an admin the observer also hears of joins; the room's own messages are the feed's.
    seen_by_observer = [
        m for m in observer.messages if type(m).__name__ not in ("Observed", "JoinedGameRoom")
    ]
    assert feed.messages == seen_by_observer
    assert isinstance(feed.messages[-1], Left) and isinstance(feed.messages[-2], ResultMessage)
    view = feed.games[room_id]
    assert view.status == "over" and view.closed and view.states[-1] == state
    assert len(view.move_ms) == state.turn


def test_hub_statuses_times_and_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr("web.hub.time.time", lambda: clock[0])
    hub = GameHub()
    hub.room_opened("r", paused=True, prepared=True)
    hub.players_changed("r", [RoomPlayer("ONE", "Ada", True), RoomPlayer("TWO", "", True)])
    view = hub.games["r"]
    assert view.status == "waiting" and view.names() == ["Ada", "Team TWO"]
    states = random_states(3, 14)
    hub.observe(Memento("r", states[0]))  # paused: to observers only
    assert view.status == "paused"
    clock[0] += 5.0  # the admin waits: not the bot's time
    hub.observe(Memento("r", states[0]))  # step: the same state again, the move is requested
    clock[0] += 0.25
    hub.observe(Memento("r", states[1]))
    assert view.move_ms == [250.0]
    hub.observe(Paused("r", False))
    clock[0] += 0.5
    hub.observe(Memento("r", states[2]))
    assert view.status == "running"
    assert view.time_used_ms() == {"ONE": 250.0, "TWO": 500.0}
    snapshot = json.loads(view.to_json())
    assert snapshot["turn"] == 2 and len(snapshot["moves"]) == 2
    assert snapshot["state"]["board"] == [[f.name for f in row] for row in states[2].rows()]
    lobby = json.loads(hub.lobby_json())
    assert lobby["rooms"][0]["names"] == ["Ada", "Team TWO"]
    # Messages of rooms the hub never saw are ignored.
    hub.observe(Memento("unknown", states[0]))
    assert list(hub.games) == ["r"]


def test_hub_keeps_only_the_newest_finished_games() -> None:
    hub = GameHub(keep_finished=2)
    for index in range(4):
        hub.room_opened(f"r{index}", paused=False, prepared=False)
        hub.observe(Left(f"r{index}"))
    hub.room_opened("live", paused=False, prepared=False)
    assert list(hub.games) == ["r2", "r3", "live"]


# ---------------------------------------------------------------------- settings


def test_web_port_settings(tmp_path: Path) -> None:
    settings, warnings = parse_settings(["--web-port", "13080"], tmp_path)
    assert settings.web_port == 13080 and settings.web_host == "127.0.0.1"
    assert not any("web viewer" in w for w in warnings)
    for off in ("0", "off"):
        assert parse_settings(["--web-port", off], tmp_path)[0].web_port is None
    assert Settings().web_port is None
    (tmp_path / "server.properties").write_text("webPort = 8080\nwebHost = 0.0.0.0\n")
    settings, warnings = parse_settings([], tmp_path)
    assert settings.web_port == 8080 and settings.web_host == "0.0.0.0"
    assert any("web viewer listens on 0.0.0.0" in w for w in warnings)


# ---------------------------------------------------------------------- HTTP


async def test_admin_requests_need_a_session_its_csrf_token_this_origin_and_a_login(
    running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(web_app, "LOGIN_FAILURE_DELAY", 0.0)
    with trio.fail_after(20):
        browser = Browser(running.url)
        prepare = {"names": ["A", "B"], "paused": True}
        # No session at all.
        assert (await browser.post("/api/admin/prepare", prepare))[0] == 403
        await browser.session()
        # A session, but no token / a wrong token / another site's Origin.
        status, _ = await browser.post("/api/admin/prepare", prepare, **{"X-CSRF-Token": "x"})
        assert status == 403
        status, _ = await browser.post("/api/admin/prepare", prepare, Origin="http://evil.example")
        assert status == 403
        # Right token and origin, but not logged in.
        assert (await browser.post("/api/admin/prepare", prepare))[0] == 401
        with structlog.testing.capture_logs() as logs:
            status, body = await browser.post("/api/login", {"password": "wrong-guess"})
            assert status == 403
            status, body = await browser.post("/api/login", {"password": "secret-pw"})
            assert status == 200 and body["admin"]
        assert "secret-pw" not in repr(logs) and "wrong-guess" not in repr(logs)
        status, body = await browser.post("/api/admin/prepare", prepare)
        assert status == 200 and len(body["reservations"]) == 2
        room_id = body["room"]
        assert running.viewer.hub.games[room_id].names() == ["A", "B"]
        async with trio.open_nursery() as nursery:
            for seed, code in enumerate(body["reservations"]):
                nursery.start_soon(partial(random_bot, running.port, seed=seed, reservation=code))
            view = running.viewer.hub.games[room_id]
            while view.status != "paused":
                await trio.sleep(0.01)
            assert (await browser.post("/api/admin/step", {"room": room_id}))[0] == 200
            while view.turn != 1:
                await trio.sleep(0.01)
            assert (await browser.post("/api/admin/cancel", {"room": room_id}))[0] == 200
        # Cancelled after exactly one step.
        assert view.result is not None and view.turn == 1
        # An unknown room: the game server's refusal comes back.
        status, body = await browser.post("/api/admin/pause", {"room": "nope"})
        assert status == 409 and "Couldn't find a room" in body["error"]
        # Logged out: refused again.
        assert (await browser.post("/api/logout", {}))[0] == 200
        await browser.session()
        assert (await browser.post("/api/admin/step", {"room": room_id}))[0] == 401


async def test_replay_uploads_parse_and_bad_ones_are_refused(
    running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    states = random_states(61, 15)
    data = write_replay("room", [Memento("room", state) for state in states])
    with trio.fail_after(20):
        browser = Browser(running.url)
        status, body = await browser.post("/api/replays/upload", gzip.compress(data))
        assert status == 200 and len(body["states"]) == len(states)
        assert body["states"][-1]["board"] == [[f.name for f in row] for row in states[-1].rows()]
        status, body = await browser.post("/api/replays/upload", b"<not a replay")
        assert status == 400 and "not a replay file" in body["error"]
        # Server replays: only files of the replay directory, by plain name.
        replay_dir = running.viewer.settings.replay_dir
        replay_dir.mkdir(parents=True, exist_ok=True)
        (replay_dir / "replay_a.xml").write_bytes(data)
        status, body = await browser.get("/api/replays")
        assert [entry["name"] for entry in body["replays"]] == ["replay_a.xml"]
        assert (await browser.get("/api/replays/replay_a.xml"))[0] == 200
        assert (await browser.get("/api/replays/..%2Fsecret.xml"))[0] == 404
        assert (await browser.get("/api/replays/missing.xml"))[0] == 404
        monkeypatch.setattr(web_replays, "MAX_REPLAY_BYTES", 100_000)
        bomb = gzip.compress(b" " * 1_000_000)
        status, body = await browser.post("/api/replays/upload", bomb)
        assert status == 400 and "uncompressed" in body["error"]
        monkeypatch.setattr(web_replays, "MAX_UPLOAD_BYTES", 1000)
        assert len(data) > 1000
        assert await browser.post_announcing("/api/replays/upload", len(data)) == 413


async def test_without_a_league_the_league_pages_say_so(running: Running) -> None:
    with trio.fail_after(20):
        browser = Browser(running.url)
        status, body = await browser.get("/api/league")
        assert status == 404 and "--web-league" in body["error"]
        assert (await browser.get("/api/league/records/1/1"))[0] == 404
        status, config = await browser.get("/api/config")
        assert config["league"] is False


async def test_viewers_get_coalesced_snapshots_and_leave_no_task_behind(
    running: Running,
) -> None:
    running.viewer.viewer_rate = 4.0
    host, port = running.url.removeprefix("http://").rsplit(":", 1)
    with trio.fail_after(30):
        send_go, receive_go = trio.open_memory_channel[None](0)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: random_bot(running.port, seed=1, gate=receive_go))
            nursery.start_soon(lambda: random_bot(running.port, seed=2, gate=receive_go))
            while not running.viewer.hub.games:
                await trio.sleep(0.01)
            room_id = next(iter(running.viewer.hub.games))
            view = running.viewer.hub.games[room_id]
            while view.turn != 0 or not view.states:
                await trio.sleep(0.01)
            ws = await WsClient.connect(host, int(port), f"/ws/game/{room_id}")
            first = await ws.receive_json()
            assert first["data"]["turn"] == 0
            # Twenty moves at once: the viewer gets a few snapshots, the latest one last.
            started = trio.current_time()
            for _ in range(20):
                await send_go.send(None)
            while view.turn != 20:
                await trio.sleep(0.001)
            received: list[dict[str, Any]] = []
            while not received or received[-1]["data"]["turn"] != 20:
                received.append(await ws.receive_json())
            elapsed = trio.current_time() - started
            assert len(received) <= elapsed * 4.0 + 2
            assert running.viewer.viewers == 1
            await ws.aclose()  # a tab closed without a goodbye
            while running.viewer.viewers:
                await trio.sleep(0.01)
            # A missing game is said so.
            ws = await WsClient.connect(host, int(port), "/ws/game/nope")
            assert (await ws.receive_json()) == {"missing": True}
            with pytest.raises(WebSocketClosed):
                await ws.receive_json()
            nursery.cancel_scope.cancel()


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def test_the_cli_serves_the_viewer_next_to_the_game_server(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    web_port = free_port()
    command = [sys.executable, "-m", "cli.server", "--port", "0", "--web-port", str(web_port)]
    repo = Path(__file__).resolve().parents[2]
    with trio.fail_after(30):
        process = await trio.lowlevel.open_process(
            command,
            cwd=tmp_path,
            env={"PYTHONPATH": str(repo), "PATH": "/usr/bin:/bin"},
            stderr=subprocess.PIPE,
        )
        assert process.stderr is not None
        log = b""
        while b"web viewer listening" not in log:
            chunk = await process.stderr.receive_some()
            assert chunk, log.decode()
            log += chunk
        status, body, _ = await trio.to_thread.run_sync(
            http, f"http://127.0.0.1:{web_port}/api/rooms"
        )
        assert status == 200 and body == {"rooms": []}
        process.send_signal(signal.SIGINT)
        while chunk := await process.stderr.receive_some():
            log += chunk
        assert await process.wait() == 0, log.decode()


def test_a_failing_viewer_never_raises_into_the_lobby(monkeypatch: pytest.MonkeyPatch) -> None:
    hub = GameHub()
    hub.room_opened("r", paused=False, prepared=False)

    def broken() -> float:
        raise RuntimeError("bug")

    monkeypatch.setattr("web.hub.time.time", broken)
    with structlog.testing.capture_logs() as logs:
        hub.observe(Memento("r", GameState.initial(1)))  # must not raise
        hub.room_opened("s", paused=False, prepared=False)
    assert [entry["event"] for entry in logs] == [
        "the web viewer failed to follow a room event"
    ] * 2


async def test_only_the_player_s_own_session_from_this_site_may_move(running: Running) -> None:
    host, port = running.url.removeprefix("http://").rsplit(":", 1)
    with trio.fail_after(20):
        owner = Browser(running.url)
        await owner.session()
        assert (await owner.post("/api/login", {"password": "secret-pw"}))[0] == 200
        status, body = await owner.post("/api/play", {"name": "Ada"})
        assert status == 200
        path = f"/ws/play/{body['token']}"
        for cookie, origin in ((None, None), (owner.cookie, "http://evil.example")):
            ws = await WsClient.connect(host, int(port), path, cookie=cookie, origin=origin)
            assert await ws.receive_json() == {"missing": True}
            await ws.aclose()
        ws = await WsClient.connect(host, int(port), path, cookie=owner.cookie, origin=owner.base)
        first = (await ws.receive_json())["data"]
        assert first["ended"] is False and first["myTurn"] is False
        await ws.aclose()
