"""The whole server over real loopback TCP (port 0), driven by the raw protocol client:
every message sequence of docs/protocol.md §4 and the violation and disconnect cases of §5."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from engine import Direction, Move, Team
from protocol.events import (
    GAME_TYPE,
    Authenticate,
    CancelRequest,
    CloseRequest,
    Join,
    JoinPrepared,
    MovePacket,
    Observe,
    PauseRequest,
    Prepare,
    SlotDescriptor,
    StepRequest,
)
from protocol.messages import (
    ErrorPacket,
    Joined,
    JoinedGameRoom,
    Left,
    Memento,
    MoveRequest,
    Observed,
    Paused,
    Prepared,
    ResultMessage,
    RoomError,
    WelcomeMessage,
)
from server.app import serve
from server.config import Settings
from server.connection import Connection
from server.lobby import SHUTDOWN_REASON
from tests.helpers.server import LIMIT, Server, join_pair, running_server


async def test_join_game_played_to_the_end(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    with trio.fail_after(LIMIT):
        async with running_server(results_file=results) as server:
            one, two, room_id = await join_pair(server)
            assert bytes(one.raw) == f'<protocol>\n  <joined roomId="{room_id}"/>'.encode()
            assert await one.expect(WelcomeMessage) == WelcomeMessage(room_id, Team.ONE)
            assert await two.expect(WelcomeMessage) == WelcomeMessage(room_id, Team.TWO)
            clients = {Team.ONE: one, Team.TWO: two}
            while True:
                state = (await one.expect(Memento)).state
                assert (await two.expect(Memento)).state == state
                if state.is_over:
                    break
                mover = clients[state.current_team]
                assert await mover.expect(MoveRequest) == MoveRequest(room_id)
                await mover.send(MovePacket(room_id, state.legal_moves()[0]))
            final = state
            result = await one.expect(ResultMessage)
            assert await two.expect(ResultMessage) == result
            assert result.result.regular
            for client in (one, two):
                assert await client.expect(Left) == Left(room_id)
            # The server does not close after the game: the client does.
            with trio.move_on_after(0.2):
                await one.receive()
                raise AssertionError("nothing may follow <left>")
            await one.send(CloseRequest())
            await one.expect_closed()
            await two.aclose()
    record = json.loads(results.read_text().splitlines()[0])
    assert record["room"] == room_id
    assert len(record["moves"]) == final.turn
    assert all(ms >= 0 for ms in record["moveMs"])


async def test_prepared_paused_game_with_observer_step_and_unpause() -> None:
    with trio.fail_after(LIMIT):
        async with running_server() as server:
            admin = await server.client()
            slots = (SlotDescriptor("Alice", True, True), SlotDescriptor("Bob", True, True))
            await admin.send(Authenticate("pw"), Prepare(GAME_TYPE, True, slots))
            prepared = await admin.expect(Prepared)
            room_id = prepared.room_id
            await admin.send(Observe(room_id))
            await admin.expect(Observed)
            one, two = await server.client(), await server.client()
            await two.send(JoinPrepared(prepared.reservations[1]))
            await one.send(JoinPrepared(prepared.reservations[0]))
            for client, team in ((one, Team.ONE), (two, Team.TWO)):
                await client.expect(Joined)
                assert await client.expect(WelcomeMessage) == WelcomeMessage(room_id, team)
            initial = (await admin.expect(Memento)).state
            await admin.send(StepRequest(room_id, False))
            assert (await admin.expect(Memento)).state == initial
            assert (await one.expect(Memento)).state == initial
            await one.expect(MoveRequest)
            await one.send(MovePacket(room_id, initial.legal_moves()[0]))
            after = (await admin.expect(Memento)).state
            assert after.turn == 1
            await admin.send(PauseRequest(room_id, False))
            assert await admin.expect(Paused) == Paused(room_id, False)
            assert (await admin.expect(Memento)).state == after
            assert (await two.expect(Memento)).state == initial
            assert (await two.expect(Memento)).state == after
            await two.expect(MoveRequest)
            await admin.send(CancelRequest(room_id))
            result = (await admin.expect(ResultMessage)).result
            assert [entry.name for entry, _ in result.scores] == ["Alice", "Bob"]
            assert await admin.expect(Left) == Left(room_id)
            for client in (one, two):
                messages = await client.receive_until(Left)
                assert isinstance(messages[-2], ResultMessage)
                await client.aclose()


async def test_forced_step_on_an_empty_prepared_room() -> None:
    with trio.fail_after(LIMIT):
        async with running_server() as server:
            admin = await server.client()
            slots = (SlotDescriptor("a", True, True), SlotDescriptor("b", True, True))
            await admin.send(Authenticate("pw"), Prepare(None, True, slots))
            room_id = (await admin.expect(Prepared)).room_id
            await admin.send(Observe(room_id), StepRequest(room_id, True))
            await admin.expect(Observed)
            result = (await admin.expect(ResultMessage)).result
            assert result.reason == "Alle Spieler hat das Spiel verlassen: NOT_CONNECTED"
            assert await admin.expect(Left) == Left(room_id)


async def test_invalid_move_room_error_result_left() -> None:
    with trio.fail_after(LIMIT):
        async with running_server() as server:
            one, two, room_id = await join_pair(server)
            await one.receive_until(MoveRequest)
            move = Move(9, 9, Direction.UP)  # a corner: always empty at the start
            await one.send(MovePacket(room_id, move))
            error = await one.expect(RoomError)
            assert error.original_move == move
            assert "WRONG_START" in error.message
            result = (await one.expect(ResultMessage)).result
            assert result.winner is Team.TWO
            await one.expect(Left)
            messages = await two.receive_until(Left)
            assert not any(isinstance(m, RoomError) for m in messages)


async def test_not_your_turn() -> None:
    with trio.fail_after(LIMIT):
        async with running_server() as server:
            one, two, room_id = await join_pair(server)
            await two.receive_until(Memento)
            await two.send(MovePacket(room_id, Move(1, 0, Direction.UP)))
            messages = await two.receive_until(Left)
            assert isinstance(messages[0], RoomError)
            assert "It's not your turn yet" in messages[0].message
            assert messages[1].result.winner is Team.ONE  # type: ignore[union-attr]
            messages = await one.receive_until(Left)
            assert not any(isinstance(m, RoomError) for m in messages)


async def test_disconnects_before_during_and_after_a_game() -> None:
    with trio.fail_after(LIMIT):
        async with running_server() as server:
            # Before the start: the lone player's room goes away.
            lonely = await server.client()
            await lonely.send(Join())
            first_room = (await lonely.expect(Joined)).room_id
            await lonely.aclose()
            await trio.sleep(0.05)
            # Mid game: the opponent wins.
            one, two, room_id = await join_pair(server)
            assert room_id != first_room
            await one.receive_until(MoveRequest)
            await two.aclose()
            messages = await one.receive_until(Left)
            result = messages[-2].result  # type: ignore[union-attr]
            assert result.winner is Team.ONE
            assert result.reason == "TWO hat das Spiel verlassen: LOST_CONNECTION"
            # After <left>: closing changes nothing, the server answers with </protocol>.
            await one.send(CloseRequest())
            await one.expect_closed()


async def test_soft_and_hard_timeouts_over_tcp() -> None:
    with trio.fail_after(LIMIT):
        async with running_server(soft_timeout=0.05, hard_timeout=0.3) as server:
            one, _two, room_id = await join_pair(server)
            state = (await one.receive_until(MoveRequest))[-2].state  # type: ignore[union-attr]
            await trio.sleep(0.1)
            await one.send(MovePacket(room_id, state.legal_moves()[0]))
            messages = await one.receive_until(Left)
            assert "laenger als 0.05 Sekunden" in messages[-2].result.reason  # type: ignore[union-attr]
            # Before the join: the hard timeout runs from the move request, which may go out
            # before join_pair returns on a loaded machine.
            start = trio.current_time()
            _three, four, room_id = await join_pair(server)
            messages = await four.receive_until(Left)
            assert trio.current_time() - start >= 0.3
            result = messages[-2].result  # type: ignore[union-attr]
            assert result.winner is Team.TWO
            assert "keinen Zug gesendet" in result.reason


async def test_garbage_and_admin_errors() -> None:
    with trio.fail_after(LIMIT):
        async with running_server() as server:
            stranger = await server.client()
            await stranger.send(Observe("r"))
            error = await stranger.expect(ErrorPacket)
            assert error.message.endswith(
                "Request ObservationRequest(roomId=r) requires authentication"
            )
            await stranger.send(Authenticate("wrong"))
            assert "AuthenticationFailedException" in (await stranger.expect(ErrorPacket)).message
            await stranger.send(Authenticate("pw"), Join())
            joined = await stranger.expect(Joined)
            # An admin that joins also gets joinedGameRoom.
            assert await stranger.expect(JoinedGameRoom) == JoinedGameRoom(joined.room_id, 1)
            await stranger.send_raw(b"<>/I-do/>NOT<CARE")
            await stranger.expect(ErrorPacket)
            await stranger.expect_closed()


async def test_shutdown_sends_and_records_aborted_results(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    with trio.fail_after(LIMIT):
        async with running_server(results_file=results) as server:
            one, two, room_id = await join_pair(server)
            await one.receive_until(MoveRequest)
            server.stop.set()
            for client in (one, two):
                messages = await client.receive_until(Left)
                assert messages[-2].result.reason == SHUTDOWN_REASON  # type: ignore[union-attr]
                await client.expect_closed()
            await server.done.wait()
    record = json.loads(results.read_text().splitlines()[0])
    assert record["room"] == room_id
    assert record["end"] == "shutdown"


async def test_sigterm_ends_games_gracefully() -> None:
    settings = Settings(host="127.0.0.1", port=0)
    done = trio.Event()
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:

            async def run(task_status: trio.TaskStatus[int]) -> None:
                await serve(settings, task_status=task_status)
                done.set()

            port: int = await nursery.start(run)
            server = Server(port, trio.Event(), done)
            one, two, _ = await join_pair(server)
            await one.receive_until(MoveRequest)
            os.kill(os.getpid(), signal.SIGTERM)
            for client in (one, two):
                messages = await client.receive_until(Left)
                assert messages[-2].result.reason == SHUTDOWN_REASON  # type: ignore[union-attr]
                await client.expect_closed()
            await done.wait()


async def test_accepted_connections_do_not_delay_small_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # TCP_NODELAY, as the official server (and trio's SocketStream); a memento must not wait
    # for the client's ack of the last one. The 16 KiB TCP_NOTSENT_LOWAT trio sets, too.
    import socket

    from server.transport import SocketTransport

    seen: list[tuple[int, int]] = []
    make = Connection

    def connection(stream: None, *args: Any, **kwargs: Any) -> Connection:
        transport = kwargs["transport"]
        assert isinstance(transport, SocketTransport)
        sock = socket.socket(fileno=os.dup(transport.fileno))
        with sock:
            nodelay = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            lowat = sock.getsockopt(socket.IPPROTO_TCP, getattr(socket, "TCP_NOTSENT_LOWAT", 25))
        seen.append((nodelay, lowat))
        return make(stream, *args, **kwargs)

    monkeypatch.setattr("server.app.Connection", connection)
    with trio.fail_after(LIMIT):
        async with running_server() as server:
            _one, _two, _room_id = await join_pair(server)
    assert len(seen) == 2 and all(nodelay for nodelay, _ in seen)
    if sys.platform == "linux":
        assert [lowat for _, lowat in seen] == [2**14, 2**14]


@pytest.mark.skipif(sys.platform != "linux", reason="kernel receive stamps are Linux's")
async def test_accepted_connections_get_kernel_stamps_from_the_listener(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The listener asks for SO_TIMESTAMPNS once; each accepted socket has it without a
    # setsockopt of its own, and its transport reads the stamps.
    import socket

    from server.transport import SO_TIMESTAMPNS, SocketTransport

    seen: list[tuple[int, bool]] = []
    make = Connection

    def connection(stream: None, *args: Any, **kwargs: Any) -> Connection:
        transport = kwargs["transport"]
        assert isinstance(transport, SocketTransport)
        with socket.socket(fileno=os.dup(transport.fileno)) as sock:
            seen.append((sock.getsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS), transport.stamped))
        return make(stream, *args, **kwargs)

    monkeypatch.setattr("server.app.Connection", connection)
    calls: list[bool] = []

    class Recording(SocketTransport):
        """The server's transports, whether each was told its listener stamps (no
        setsockopt of its own)."""

        def __init__(self, sock: socket.socket, *, listener_stamped: bool = False) -> None:
            calls.append(listener_stamped)
            super().__init__(sock, listener_stamped=listener_stamped)

    monkeypatch.setattr("server.app.SocketTransport", Recording)
    with trio.fail_after(LIMIT):
        async with running_server() as server:
            _one, _two, _room_id = await join_pair(server)
    assert seen == [(1, True), (1, True)]
    assert calls == [True, True]
