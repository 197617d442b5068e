"""client.ClientSession against a real in-process server over loopback TCP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from functools import partial
from typing import Any

import pytest
import trio
import trio.testing

from client import ClientSession, ConnectionClosed, ServerRefused, open_session
from engine import GameState, Move, Team
from protocol.events import Join, MovePacket, SlotDescriptor
from protocol.messages import (
    ErrorPacket,
    Left,
    Memento,
    MoveRequest,
    Paused,
    ResultMessage,
    WelcomeMessage,
)
from server.app import serve
from server.config import Settings

LIMIT = 10  # seconds for any one test's network exchange
SLOTS = (SlotDescriptor("Alice", True, True), SlotDescriptor("Bob", True, True))


@asynccontextmanager
async def running_server(**overrides: Any) -> AsyncIterator[int]:
    settings = replace(Settings(host="127.0.0.1", port=0, password="pw"), **overrides)
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        port: int = await nursery.start(
            lambda task_status: serve(
                settings, task_status=task_status, stop=stop, handle_signals=False
            )
        )
        yield port
        stop.set()


async def play_out(room_id: str, players: dict[Team, ClientSession]) -> ResultMessage:
    """Both players move their first legal move until the result."""
    one = players[Team.ONE]
    while True:
        state = (await one.expect(Memento)).state
        await players[Team.TWO].expect(Memento)
        if state.is_over:
            break
        mover = players[state.current_team]
        await mover.expect(MoveRequest)
        await mover.send_move(room_id, state.legal_moves()[0])
    result = await one.expect(ResultMessage)
    assert await players[Team.TWO].expect(ResultMessage) == result
    return result


async def test_prepared_game_observed_to_the_end() -> None:
    with trio.fail_after(LIMIT):
        async with (
            running_server() as port,
            open_session("127.0.0.1", port, password="pw") as admin,
        ):
            prepared = await admin.prepare(SLOTS)
            assert len(prepared.reservations) == 2
            assert (await admin.observe(prepared.room_id)).room_id == prepared.room_id
            async with (
                open_session("127.0.0.1", port) as one,
                open_session("127.0.0.1", port) as two,
            ):
                assert (await two.join_prepared(prepared.reservations[1])).room_id == (
                    prepared.room_id
                )
                await one.join_prepared(prepared.reservations[0])
                assert (await one.expect(WelcomeMessage)).team is Team.ONE
                assert (await two.expect(WelcomeMessage)).team is Team.TWO
                result = await play_out(prepared.room_id, {Team.ONE: one, Team.TWO: two})
            observed = await admin.expect(ResultMessage)
            assert observed.result == result.result
            left = await admin.receive_until(lambda m: isinstance(m, Left))
            assert left == Left(prepared.room_id)


async def test_join_and_join_room_pair_up() -> None:
    with trio.fail_after(LIMIT):
        async with (
            running_server() as port,
            open_session("127.0.0.1", port) as one,
            open_session("127.0.0.1", port) as two,
        ):
            room_id = (await one.join()).room_id
            assert (await two.join_room(room_id)).room_id == room_id
            result = await play_out(room_id, {Team.ONE: one, Team.TWO: two})
            assert result.result.regular


async def test_pause_step_and_cancel() -> None:
    with trio.fail_after(LIMIT):
        async with (
            running_server() as port,
            open_session("127.0.0.1", port, password="pw") as admin,
        ):
            prepared = await admin.prepare(SLOTS, pause=True)
            room = prepared.room_id
            await admin.observe(room)
            async with (
                open_session("127.0.0.1", port) as one,
                open_session("127.0.0.1", port) as two,
            ):
                await one.join_prepared(prepared.reservations[0])
                await two.join_prepared(prepared.reservations[1])
                first = await admin.expect(Memento)
                assert first.state.turn == 0
                # Paused: the mover gets no request until a step.
                await admin.step(room)
                request = await one.expect(MoveRequest)
                await one.send_move(room, first.state.legal_moves()[0])
                after = await admin.receive_until(
                    lambda m: isinstance(m, Memento) and m.state.turn > 0, timeout=LIMIT
                )
                assert isinstance(after, Memento)
                assert after.state == first.state.apply(first.state.legal_moves()[0])
                await admin.pause(room, False)
                assert (await admin.expect(Paused)).paused is False
                await admin.cancel(room)
                result = await admin.expect(ResultMessage)
                assert [entry.name for entry, _ in result.result.scores] == ["Alice", "Bob"]
                assert await admin.expect(Left) == Left(room)
                assert request.room_id == room


async def test_wrong_password_raises_server_refused() -> None:
    with trio.fail_after(LIMIT):
        async with (
            running_server() as port,
            open_session("127.0.0.1", port, password="wrong") as admin,
        ):
            with pytest.raises(ServerRefused) as refused:
                await admin.prepare(SLOTS)
            assert isinstance(refused.value.packet, ErrorPacket)
            assert "Failed to authenticate" in refused.value.packet.message
            with pytest.raises(ServerRefused, match="requires authentication"):
                await admin.prepare(SLOTS)
        # Closed by the context manager: every later call raises.
        assert admin.closed
        with pytest.raises(ConnectionClosed):
            await admin.send_move("r", GameState.initial(1).legal_moves()[0])


async def test_server_closing_the_stream_is_connection_closed() -> None:
    async def close_at_once(stream: trio.SocketStream) -> None:
        await stream.send_all(b'<protocol>\n  <left roomId="r"/>')
        await stream.aclose()

    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(
                partial(trio.serve_tcp, close_at_once, 0, host="127.0.0.1")
            )
            port = listeners[0].socket.getsockname()[1]
            async with open_session("127.0.0.1", port) as session:
                assert await session.receive() == Left("r")  # what came before the end
                with pytest.raises(ConnectionClosed, match="closed the connection"):
                    await session.receive()
                with pytest.raises(ConnectionClosed):
                    await session.receive()
            nursery.cancel_scope.cancel()


async def test_expect_times_out() -> None:
    with trio.fail_after(LIMIT):
        async with running_server() as port, open_session("127.0.0.1", port) as session:
            with pytest.raises(trio.TooSlowError):
                await session.expect(Memento, timeout=0.05)


async def test_unreachable_server_is_connection_closed() -> None:
    with trio.fail_after(LIMIT):
        listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
        port = listener.socket.getsockname()[1]
        await listener.aclose()
        with pytest.raises(ConnectionClosed, match="cannot connect"):
            async with open_session("127.0.0.1", port):
                pass


async def test_seeded_prepare_starts_on_that_board() -> None:
    with trio.fail_after(LIMIT):
        async with (
            running_server() as port,
            open_session("127.0.0.1", port, password="pw") as admin,
        ):
            boards = []
            for seed in (7, 7, 8):
                prepared = await admin.prepare(SLOTS, seed=seed)
                await admin.observe(prepared.room_id)
                async with (
                    open_session("127.0.0.1", port) as one,
                    open_session("127.0.0.1", port) as two,
                ):
                    await one.join_prepared(prepared.reservations[0])
                    await two.join_prepared(prepared.reservations[1])
                    first = await admin.expect(Memento)
                    assert first.room_id == prepared.room_id
                    assert first.state == GameState.initial(seed)
                    boards.append(first.state.rows())
                    await admin.cancel(prepared.room_id)
            assert boards[0] == boards[1] != boards[2]


async def test_prepare_from_a_position_starts_there_and_a_finished_one_is_refused() -> None:
    state = GameState.initial(4)
    for _ in range(13):
        state = state.apply(state.legal_moves()[0])
    with trio.fail_after(LIMIT):
        async with (
            running_server() as port,
            open_session("127.0.0.1", port, password="pw") as admin,
        ):
            prepared = await admin.prepare(SLOTS, state=state)
            await admin.observe(prepared.room_id)
            async with (
                open_session("127.0.0.1", port) as one,
                open_session("127.0.0.1", port) as two,
            ):
                await one.join_prepared(prepared.reservations[0])
                await two.join_prepared(prepared.reservations[1])
                assert (await admin.expect(Memento)).state == state
                await admin.cancel(prepared.room_id)
            over = GameState.from_rows(state.rows(), 60)
            with pytest.raises(ServerRefused, match="Invalid start state"):
                await admin.prepare(SLOTS, state=over)


async def test_closing_in_a_cancelled_scope_still_says_goodbye() -> None:
    received = trio.Event()
    data = bytearray()

    async def record(stream: trio.SocketStream) -> None:
        async for chunk in stream:
            data.extend(chunk)
        received.set()

    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(partial(trio.serve_tcp, record, 0, host="127.0.0.1"))
            port = listeners[0].socket.getsockname()[1]
            with trio.CancelScope() as scope:
                async with open_session("127.0.0.1", port) as session:
                    await session.send_move("r", GameState.initial(1).legal_moves()[0])
                    scope.cancel()
                    await trio.sleep(1)  # cancelled here; the exit runs in a cancelled scope
            assert session.closed
            await received.wait()
            assert bytes(data).endswith(b"<close/>\n</protocol>")
            nursery.cancel_scope.cancel()


async def test_several_packets_go_out_in_one_write() -> None:
    # The fast test bot's protocol-error switch relies on it: the server reads both moves
    # before the opponent can answer the first.
    client_stream, server_stream = trio.testing.memory_stream_pair()
    session = ClientSession(client_stream)
    move = GameState.initial(1).legal_moves()[0]
    with trio.fail_after(LIMIT):
        await session.send(MovePacket("r", move), MovePacket("r", move))
        data = await server_stream.receive_some(65536)
    packet = b'<room roomId="r">'
    assert data.startswith(b"<protocol>") and data.count(packet) == 2


async def test_send_raw_writes_exactly_the_bytes_given() -> None:
    client_stream, server_stream = trio.testing.memory_stream_pair()
    session = ClientSession(client_stream)
    with trio.fail_after(LIMIT):
        await session.send_raw(b"<protocol><yarr")
        assert await server_stream.receive_some(65536) == b"<protocol><yarr"
        # The session's own bookkeeping never saw them: its first packet opens a document.
        await session.send(Join())
        assert await server_stream.receive_some(65536) == b"<protocol>\n  <join/>"
        await session.aclose()
        with pytest.raises(ConnectionClosed):
            await session.send_raw(b"<join/>")


async def test_broken_xml_from_the_server_is_a_protocol_error() -> None:
    client_stream, server_stream = trio.testing.memory_stream_pair()
    session = ClientSession(client_stream)
    with trio.fail_after(LIMIT):
        await server_stream.send_all(b'<protocol>\n  <left roomId="r"></joined>')
        with pytest.raises(ConnectionClosed) as closed:
            await session.receive()
    assert closed.value.protocol_error
    assert session.closed


async def test_an_ended_stream_is_no_protocol_error() -> None:
    client_stream, server_stream = trio.testing.memory_stream_pair()
    session = ClientSession(client_stream)
    with trio.fail_after(LIMIT):
        await server_stream.send_all(b"<protocol>\n</protocol>")
        with pytest.raises(ConnectionClosed) as closed:
            await session.receive()
    assert not closed.value.protocol_error


async def first_legal(state: GameState) -> Move:
    return state.legal_moves()[0]


async def test_play_answers_every_request_and_returns_the_result() -> None:
    asked: list[int] = []

    async def counting(state: GameState) -> Move:
        asked.append(state.turn)
        return state.legal_moves()[0]

    with trio.fail_after(LIMIT):
        async with (
            running_server() as port,
            open_session("127.0.0.1", port) as one,
            open_session("127.0.0.1", port) as two,
        ):
            room_id = (await one.join()).room_id
            await two.join_room(room_id)
            results = []
            async with trio.open_nursery() as nursery:

                async def play(session: ClientSession, choose: Any) -> None:
                    results.append(await session.play(choose))

                nursery.start_soon(play, one, counting)
                nursery.start_soon(play, two, first_legal)
    assert len(results) == 2 and results[0] == results[1]
    assert results[0] is not None and results[0].regular
    assert asked == list(range(0, 2 * len(asked), 2))  # team ONE moves on even turns


async def test_a_move_request_before_any_memento_is_a_protocol_error() -> None:
    client_stream, server_stream = trio.testing.memory_stream_pair()
    session = ClientSession(client_stream)
    with trio.fail_after(LIMIT):
        await server_stream.send_all(
            b'<protocol>\n  <room roomId="r">\n    <data class="moveRequest"/>\n  </room>'
        )
        with pytest.raises(ConnectionClosed, match="before any memento") as closed:
            await session.play(first_legal)
    assert closed.value.protocol_error
