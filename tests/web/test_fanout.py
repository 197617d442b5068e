"""The live snapshots' fan-out (web.fanout): one rendering and one frame per update for every
viewer of a game, a slow viewer skipping states without delaying the others."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing
from wsproto.extensions import PerMessageDeflate
from wsproto.frame_protocol import FrameProtocol, Opcode

from engine import GameState
from protocol.messages import Memento
from web import app as web_app
from web import fanout
from web.fanout import Broadcast, Snapshot, text_frame
from web.hub import Change
from web.wsclient import WsClient

from .conftest import Running


@pytest.mark.parametrize("size", [0, 125, 126, 65535, 65536])
def test_a_frame_decodes_as_one_whole_text_message(size: int) -> None:
    text = "x" * size
    decoder = FrameProtocol(client=True, extensions=[])
    decoder.receive_bytes(text_frame(text.encode()))
    (frame,) = list(decoder.received_frames())
    assert frame.opcode is Opcode.TEXT and frame.frame_finished and frame.message_finished
    assert frame.payload == text


async def test_viewers_share_each_rendered_snapshot_deflated_or_not(
    running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw: list[bool] = []

    def spy(scope: Any) -> Any:
        found = fanout.raw_socket(scope)
        raw.append(found is not None)
        return found

    monkeypatch.setattr(web_app, "raw_socket", spy)
    running.viewer.viewer_rate = 20.0
    hub = running.viewer.hub
    hub.room_opened("r1", paused=False, prepared=False)
    state = GameState.initial(seed=3)
    hub.observe(Memento("r1", state))
    host, port = running.url.removeprefix("http://").rsplit(":", 1)
    offers: list[list[PerMessageDeflate]] = [
        [],
        [PerMessageDeflate()],  # as browsers offer it
        [PerMessageDeflate(server_max_window_bits=9)],  # the smallest window allowed
    ]
    with trio.fail_after(20):
        viewers = [
            await WsClient.connect(host, int(port), "/ws/game/r1", extensions=offer)
            for offer in offers
        ]
        for viewer in viewers:
            assert json.loads(await viewer.receive_text())["data"]["turn"] == 0
        assert raw == [True, True, True]  # HTTP/1.1: the frames go straight to the sockets
        broadcast = running.viewer._broadcasts[hub.games["r1"].change]
        renders = broadcast.renders
        for _ in range(6):
            state = state.apply(state.legal_moves()[0])
            hub.observe(Memento("r1", state))
            await trio.sleep(0.06)
        seen: list[list[str]] = [[] for _ in viewers]
        for viewer, texts in zip(viewers, seen, strict=True):
            while not texts or json.loads(texts[-1])["data"]["turn"] != 6:
                texts.append(await viewer.receive_text())
        # The same messages, clock included: rendered once for all three, however framed.
        assert seen[0] == seen[1] == seen[2]
        assert broadcast.renders - renders == len(seen[0])
        for viewer in viewers:
            await viewer.aclose()
        while running.viewer.viewers:
            await trio.sleep(0.01)
        assert not running.viewer._broadcasts


async def test_without_a_raw_connection_the_asgi_send_carries_the_snapshots(
    running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(web_app, "raw_socket", lambda scope: None)  # as on HTTP/2
    running.viewer.viewer_rate = 20.0
    hub = running.viewer.hub
    hub.room_opened("r2", paused=False, prepared=False)
    state = GameState.initial(seed=4)
    hub.observe(Memento("r2", state))
    host, port = running.url.removeprefix("http://").rsplit(":", 1)
    with trio.fail_after(20):
        viewer = await WsClient.connect(
            host, int(port), "/ws/game/r2", extensions=[PerMessageDeflate()]
        )
        assert (await viewer.receive_json())["data"]["turn"] == 0
        hub.observe(Memento("r2", state.apply(state.legal_moves()[0])))
        assert (await viewer.receive_json())["data"]["turn"] == 1
        await viewer.aclose()


async def test_a_stuck_viewer_skips_states_and_delays_no_other(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    change = Change()
    broadcast = Broadcast(change, lambda: str(change.version), 4.0, nursery.start_soon)
    fast: list[str] = []
    stuck = trio.Event()

    async def send_fast(snapshot: Snapshot) -> None:
        fast.append(snapshot.text)

    async def send_stuck(snapshot: Snapshot) -> None:
        if stuck.is_set():
            await trio.sleep_forever()  # a socket whose buffers are full
        stuck.set()

    async with trio.open_nursery() as viewers:
        viewers.start_soon(broadcast.serve, send_fast)
        viewers.start_soon(broadcast.serve, send_stuck)
        await trio.sleep(0.01)
        for _ in range(10):
            change.bump()
            await trio.sleep(0.3)  # a tick (0.25 s) in between
        assert [json.loads(text)["data"] for text in fast] == list(range(11))
        # Rendered once per tick for both; the stuck one holds the latest only.
        assert broadcast.renders == 2 + 10
        pending = [viewer.pending for viewer in broadcast.viewers if viewer.pending]
        assert len(pending) == 1 and pending[0] is not None
        assert json.loads(pending[0].text)["data"] == 10
        # Many changes between two ticks: one snapshot, the latest.
        for _ in range(5):
            change.bump()
        await trio.sleep(0.3)
        assert json.loads(fast[-1])["data"] == 15 and len(fast) == 12
        viewers.cancel_scope.cancel()
    assert not broadcast.viewers
    await trio.sleep(0.3)
    assert not broadcast._ticking  # the ticker ends with its last viewer


async def _raw_pair() -> tuple[fanout.RawSocket, trio.SocketStream, trio.Lock]:
    """A RawSocket on one end of a connected socket pair (small buffers, so that a frame can
    fill them) and the other end, as the viewer's browser."""
    ours, theirs = trio.socket.socketpair()
    for sock in (ours, theirs):
        sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_SNDBUF, 4096)
        sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_RCVBUF, 4096)
    lock = trio.Lock()
    return fanout.RawSocket(trio.SocketStream(ours), lock, 0), trio.SocketStream(theirs), lock


async def _read_exactly(stream: trio.SocketStream, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = await stream.receive_some(size - len(data))
        assert chunk, "the connection ended early"
        data += chunk
    return data


async def test_a_raw_socket_writes_a_frame_at_once_and_frees_the_lock() -> None:
    raw, browser, lock = await _raw_pair()
    snapshot = Snapshot("x" * 100)
    await raw.send(snapshot)
    assert not lock.locked()
    assert await _read_exactly(browser, len(snapshot.frame(0))) == snapshot.frame(0)


async def test_a_slow_viewer_gets_the_rest_of_its_frame_before_anything_else(
    nursery: trio.Nursery,
) -> None:
    raw, browser, lock = await _raw_pair()
    big = Snapshot("y" * 300_000)  # far more than the socket pair's buffers hold
    pong = b"hypercorn's own frame"
    sent = trio.Event()

    async def send_big() -> None:
        await raw.send(big)
        sent.set()

    async def hypercorn_writes() -> None:
        async with lock:  # as hypercorn does for its pongs and the close
            await raw.stream.send_all(pong)

    nursery.start_soon(send_big)
    await trio.testing.wait_all_tasks_blocked()
    assert lock.locked() and not sent.is_set()  # the rest waits for the browser, locked
    nursery.start_soon(hypercorn_writes)
    await trio.testing.wait_all_tasks_blocked()
    frame = big.frame(0)
    assert await _read_exactly(browser, len(frame)) == frame  # whole, nothing in between
    assert await _read_exactly(browser, len(pong)) == pong
    await sent.wait()


async def test_a_raw_socket_waits_while_hypercorn_holds_the_lock(nursery: trio.Nursery) -> None:
    raw, browser, lock = await _raw_pair()
    snapshot = Snapshot("z" * 50)
    await lock.acquire()
    nursery.start_soon(raw.send, snapshot)
    await trio.testing.wait_all_tasks_blocked()
    with trio.move_on_after(0.05):
        assert await browser.receive_some() == b"", "nothing is written under another's lock"
    lock.release()
    assert await _read_exactly(browser, len(snapshot.frame(0))) == snapshot.frame(0)


async def test_a_closed_raw_socket_writes_nothing() -> None:
    raw, browser, lock = await _raw_pair()
    await raw.stream.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await raw.send(Snapshot("gone"))
    assert not lock.locked()
    assert await browser.receive_some() == b""  # the end of the stream, no bytes
