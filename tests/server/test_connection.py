"""Connections over trio memory streams: exact stream bytes, close/EOF/garbage handling, idle
timeout, slow readers, and move timing from the moment the request left the server."""

from __future__ import annotations

import contextlib
import math
import socket
import struct
import sys
import time
from collections.abc import Iterator

import pytest
import trio
import trio.testing

from engine import Direction, Move, Team
from protocol import ClientConnection
from protocol.events import Authenticate, CloseRequest, Join, MovePacket, Observe
from protocol.messages import (
    CloseConnection,
    ErrorPacket,
    Joined,
    Left,
    Memento,
    MoveRequest,
    ResultMessage,
    WelcomeMessage,
)
from server.connection import Connection
from server.lobby import DisconnectCause
from server.transport import (
    MAX_STAMP_AGE,
    SO_TIMESTAMPNS,
    SocketTransport,
    StreamTransport,
    Transport,
    arrival_time,
    kernel_stamp,
    stamp_listener,
    transport_for,
)
from tests.helpers.lobby import FakePeer, Harness, HarnessFactory
from tests.helpers.rawclient import RawClient, ServerClosed

# Where a connection's writer task runs: a nursery `run` opens (a Connection served alone), or
# the server's (app.serve passes `spawn`). Every test that connects runs with both; a memory
# stream's writes all go through the writer task.
WRITER_HOSTS = ["own nursery", "server's nursery"]
_writer_host = WRITER_HOSTS[0]


@pytest.fixture(autouse=True, params=WRITER_HOSTS)
def writer_host(request: pytest.FixtureRequest) -> Iterator[str]:
    global _writer_host
    _writer_host = request.param
    yield request.param
    _writer_host = WRITER_HOSTS[0]


async def connect(nursery: trio.Nursery, harness: Harness, *, lockstep: bool = False) -> RawClient:
    client_stream: trio.abc.Stream
    server_stream: trio.abc.Stream
    if lockstep:
        client_stream, server_stream = trio.testing.lockstep_stream_pair()
    else:
        client_stream, server_stream = trio.testing.memory_stream_pair()
    nursery.start_soon(served(harness, server_stream, nursery).run)
    return RawClient(client_stream)


def served(harness: Harness, stream: trio.abc.Stream, nursery: trio.Nursery) -> Connection:
    """The server's Connection for `stream`, its writer hosted as the `writer_host` fixture's
    parameter says (not started: some tests act before its run)."""
    spawn = nursery.start_soon if _writer_host == WRITER_HOSTS[1] else None
    return Connection(stream, harness.lobby, harness.lobby.settings, "test", spawn=spawn)


async def test_stream_starts_exactly_like_the_official_server(
    make_harness: HarnessFactory, nursery: trio.Nursery
) -> None:
    harness: Harness = await make_harness()
    client = await connect(nursery, harness)
    await client.send_raw(b"<protocol>\n  <join/>\n")
    joined = await client.expect(Joined)
    assert bytes(client.raw) == f'<protocol>\n  <joined roomId="{joined.room_id}"/>'.encode()


async def test_close_request_ends_the_stream_and_the_opponent_wins(
    make_harness: HarnessFactory, nursery: trio.Nursery
) -> None:
    harness: Harness = await make_harness()
    client = await connect(nursery, harness)
    opponent = harness.peer("opponent")
    with trio.fail_after(5):
        await client.send(Join())
        room_id = (await client.expect(Joined)).room_id
        harness.send(opponent, Join())
        await client.receive_until(MoveRequest)
        await client.send(CloseRequest())
        await client.expect_closed()
    # No <close/> answer, just the end of the document (docs/protocol.md §1.3).
    assert b"<close/>" not in client.raw
    result = opponent.of(ResultMessage)[0].result
    assert result.winner is Team.TWO
    assert result.reason == "ONE hat das Spiel verlassen: RECEIVED_DISCONNECT"
    await harness.settle()
    assert opponent.messages[-1] == Left(room_id)


async def test_eof_mid_game_is_a_lost_connection(
    make_harness: HarnessFactory, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    harness: Harness = await make_harness()
    client = await connect(nursery, harness)
    opponent = harness.peer("opponent")
    harness.send(opponent, Join())
    with trio.fail_after(5):
        await client.send(Join())
        await client.receive_until(Memento)
        await client.stream.send_eof()  # type: ignore[attr-defined]
        while not opponent.of(ResultMessage):
            await trio.sleep(0.01)
    assert opponent.of(ResultMessage)[0].result.reason == (
        "TWO hat das Spiel verlassen: LOST_CONNECTION"
    )


async def test_garbage_gets_an_errorpacket_then_the_connection_closes(
    make_harness: HarnessFactory, nursery: trio.Nursery
) -> None:
    harness: Harness = await make_harness()
    client = await connect(nursery, harness)
    opponent = harness.peer("opponent")
    harness.send(opponent, Join())
    with trio.fail_after(5):
        await client.send(Join())
        await client.receive_until(Memento)
        await client.send_raw(b"<yarr/>")
        error = await client.expect(ErrorPacket)
        assert error.original_request is None
        assert error.message  # says what was wrong
        await client.expect_closed()
    result = opponent.of(ResultMessage)[0].result
    assert result.winner is Team.ONE
    assert result.reason == "TWO hat das Spiel verlassen: PROTOCOL_ERROR"


async def test_broken_xml_from_a_stranger_closes_only_that_connection(
    make_harness: HarnessFactory, nursery: trio.Nursery
) -> None:
    harness: Harness = await make_harness()
    bad, good = await connect(nursery, harness), await connect(nursery, harness)
    with trio.fail_after(5):
        await bad.send_raw(b"<>/I-do/>NOT<CARE")
        await bad.expect(ErrorPacket)
        await bad.expect_closed()
        await good.send(Join())
        await good.expect(Joined)


async def test_oversized_packet_is_a_protocol_error(
    make_harness: HarnessFactory, nursery: trio.Nursery
) -> None:
    harness: Harness = await make_harness(max_packet_bytes=1024)
    client = await connect(nursery, harness)
    with trio.fail_after(5):
        await client.send_raw(b"<protocol><join gameType='" + b"x" * 5000)
        await client.expect(ErrorPacket)
        await client.expect_closed()


async def test_idle_connection_in_no_room_is_closed(
    make_harness: HarnessFactory, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    harness: Harness = await make_harness(idle_timeout=30)
    idle = await connect(nursery, harness)
    await idle.send_raw(b"<protocol>")  # said in time: only the idle timeout applies
    waiting = await connect(nursery, harness)
    await waiting.send(Join())
    await waiting.expect(Joined)
    start = trio.current_time()
    await idle.expect(CloseConnection, timeout=60)
    await idle.expect_closed()
    assert 30 <= trio.current_time() - start <= 31
    # A player waiting in a room is never idle.
    await trio.sleep(300)
    await waiting.send(CloseRequest())
    with trio.fail_after(5):
        await waiting.expect_closed()
    assert b"<close/>" not in waiting.raw


async def test_a_player_gets_the_full_idle_timeout_after_its_game_ended(
    make_harness: HarnessFactory, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    # Found by the chaos test: the idle period was counted from the last check while the
    # player was busy, so a bot whose long game had just ended could be closed at once,
    # before its next <join> arrived.
    harness: Harness = await make_harness(idle_timeout=30)
    client = await connect(nursery, harness)
    opponent = harness.peer("opponent")
    await client.send(Join())
    room_id = (await client.expect(Joined)).room_id
    await trio.sleep(59)  # idle deadlines at 30 and 60 pass while it waits in its room
    harness.send(opponent, Join())
    harness.lobby.disconnect(opponent, DisconnectCause.LOST_CONNECTION)
    with trio.fail_after(5):
        await client.receive_until(Left)
    ended = trio.current_time()
    await trio.sleep(29)
    await client.send(Join())
    assert (await client.expect(Joined)).room_id != room_id
    await client.send(CloseRequest())
    with trio.fail_after(5):
        await client.expect_closed()
    assert b"<close/>" not in client.raw, "closed as idle"
    assert trio.current_time() - ended >= 29


async def test_after_left_the_server_waits_for_the_client(
    make_harness: HarnessFactory, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    harness: Harness = await make_harness(idle_timeout=0)
    client = await connect(nursery, harness)
    opponent = harness.peer("opponent")
    await client.send(Join())
    await client.expect(Joined)
    harness.send(opponent, Join())
    harness.lobby.disconnect(opponent, DisconnectCause.LOST_CONNECTION)
    with trio.fail_after(5):
        await client.receive_until(Left)
    await trio.sleep(3600)
    assert not client.eof
    await client.send(CloseRequest())
    with trio.fail_after(5):
        await client.expect_closed()


async def test_slow_reader_is_disconnected_without_hurting_the_game(
    make_harness: HarnessFactory, nursery: trio.Nursery
) -> None:
    harness: Harness = await make_harness(send_buffer_messages=4, password="pw")
    observer = await connect(nursery, harness, lockstep=True)
    one, two = harness.peer("one"), harness.peer("two")
    harness.send(one, Join())
    room_id = one.of(Joined)[0].room_id
    # The observer sends its requests but never reads anything.
    with trio.fail_after(5):
        await observer.send(Authenticate("pw"), Observe(room_id))
        await trio.testing.wait_all_tasks_blocked()
    assert harness.lobby.is_busy(next(p for p in harness.lobby._members if p not in (one, two)))
    harness.send(two, Join())
    peers = {Team.ONE: one, Team.TWO: two}
    for _ in range(10):
        state = one.last_state()
        harness.move(peers[state.current_team], room_id, state.legal_moves()[0])
        await trio.testing.wait_all_tasks_blocked()
        if state.is_over:
            break
    # The observer is gone from the lobby; the players went on undisturbed.
    assert all(isinstance(peer, FakePeer) for peer in harness.lobby._members)
    assert one.last_state().turn >= 8 or one.of(ResultMessage)
    assert not any("LOST" in m.result.reason for m in one.of(ResultMessage))


async def test_request_waiting_in_the_server_does_not_count_against_the_bot(
    make_harness: HarnessFactory, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    harness: Harness = await make_harness()
    client = await connect(nursery, harness, lockstep=True)
    opponent = harness.peer("opponent")
    await client.send(Join())
    await trio.testing.wait_all_tasks_blocked()
    harness.send(opponent, Join())
    # The server's moveRequest cannot leave while the client does not read (lockstep).
    await trio.sleep(5)
    with trio.fail_after(5):
        messages = await client.receive_until(MoveRequest)
    assert [type(m) for m in messages] == [Joined, WelcomeMessage, Memento, MoveRequest]
    state = messages[2].state  # type: ignore[union-attr]
    room_id = messages[0].room_id  # type: ignore[union-attr]
    await client.send(MovePacket(room_id, state.legal_moves()[0]))
    await trio.testing.wait_all_tasks_blocked()
    assert opponent.messages[-1] == MoveRequest(room_id)
    assert not opponent.of(ResultMessage)


async def test_an_unknown_client_packet_is_not_fatal(
    make_harness: HarnessFactory, nursery: trio.Nursery
) -> None:
    harness: Harness = await make_harness()
    client = await connect(nursery, harness)
    with trio.fail_after(5):
        await client.send_raw(b'<protocol><joined roomId="x"/>')
        error = await client.expect(ErrorPacket)
        assert "Unhandled Packet of type" in error.message
        await client.send_raw(b"<join/>")
        await client.expect(Joined)


async def test_server_close_flushes_and_ends_the_stream(
    make_harness: HarnessFactory, nursery: trio.Nursery
) -> None:
    harness: Harness = await make_harness()
    client = await connect(nursery, harness)
    with trio.fail_after(5):
        await client.send(Join())
        await client.expect(Joined)
        connection = next(iter(harness.lobby._members))
        connection.close()
        await client.expect_closed()
    try:
        await client.receive(timeout=1)
    except ServerClosed:
        pass
    else:
        raise AssertionError("the stream should be over")


async def test_a_connection_cancelled_from_outside_leaves_the_lobby(
    make_harness: HarnessFactory,
) -> None:
    harness: Harness = await make_harness()
    opponent = harness.peer("opponent")
    client_stream, server_stream = trio.testing.memory_stream_pair()
    client = RawClient(client_stream)
    async with trio.open_nursery() as nursery:
        connection = served(harness, server_stream, nursery)
        nursery.start_soon(connection.run)
        with trio.fail_after(5):
            await client.send(Join())
            await client.expect(Joined)
        harness.send(opponent, Join())
        nursery.cancel_scope.cancel()
    assert connection not in harness.lobby._members
    result = opponent.of(ResultMessage)[0].result
    assert result.reason == "ONE hat das Spiel verlassen: INITIATED_DISCONNECT"


async def test_a_connection_closed_before_its_run_ends_at_once(
    make_harness: HarnessFactory,
) -> None:
    # The server may close a connection it admitted before its task ran (a shutdown right
    # after the accept): the read loop starts stopped, the stream ends, the lobby forgets it.
    harness: Harness = await make_harness()
    client_stream, server_stream = trio.testing.memory_stream_pair()
    client = RawClient(client_stream)
    async with trio.open_nursery() as nursery:
        connection = served(harness, server_stream, nursery)
        connection.close()
        ended: list[Exception | None] = []
        nursery.start_soon(connection.run, ended.append)
        await client.send(Join())  # never read
        await client.expect_closed()
    assert ended == [None]
    assert connection not in harness.lobby._members


# ---------------------------------------------------------------- transports


def test_arrival_time_is_clamped() -> None:
    assert arrival_time(100.0, 5000.0, 4999.75) == 99.75
    assert arrival_time(100.0, 5000.0, 5001.0) == 100.0  # a stamp "from the future": now
    assert arrival_time(100.0, 5000.0, 1000.0) == 100.0 - MAX_STAMP_AGE
    assert arrival_time(100.0, 5000.0, math.nan) == 100.0


def test_kernel_stamp_is_read_from_the_control_message() -> None:
    payload = struct.pack("@ll", 1_700_000_000, 250_000_000)
    assert kernel_stamp([(socket.SOL_SOCKET, SO_TIMESTAMPNS, payload)]) == 1_700_000_000.25
    assert kernel_stamp([(socket.SOL_SOCKET, SO_TIMESTAMPNS + 1, payload)]) is None
    assert kernel_stamp([(socket.SOL_SOCKET, SO_TIMESTAMPNS, payload[:4])]) is None
    assert kernel_stamp([]) is None


@pytest.mark.parametrize("by_listener", [False, True])
async def test_socket_transport_stamps_bytes_with_their_arrival(by_listener: bool) -> None:
    # Stamping asked per socket (transport_for), or inherited from the listener (the server).
    if by_listener and sys.platform != "linux":
        pytest.skip("the server stamps by its listeners on Linux only")
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    if by_listener:
        assert stamp_listener(listeners[0])
    client = await trio.open_tcp_stream("127.0.0.1", port)
    stream = await listeners[0].accept()
    if by_listener:
        # The setting came with the accepted socket: nothing asked for it on this one.
        assert stream.socket.getsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS) == 1
        transport: Transport = SocketTransport(stream, listener_stamped=True)
    else:
        transport = transport_for(stream)
    assert isinstance(transport, SocketTransport)
    with trio.fail_after(5):
        await trio.sleep(0.05)  # the kernel switches stamping on a moment after it is asked
        await client.send_all(b"warm-up")
        assert (await transport.receive())[0] == b"warm-up"
        await client.send_all(b"<move/>")
        time.sleep(0.3)  # the event loop is late to read
        data, arrived = await transport.receive()
        late = trio.current_time() - arrived
        assert data == b"<move/>"
        assert transport.stamped == (sys.platform == "linux")
        if transport.stamped:
            assert 0.25 <= late <= 1.0, late
        # Writes go straight out while the socket has room.
        assert transport.try_write(b"<joined/>") == len(b"<joined/>")
        await transport.send_all(b"<left/>")
        assert await client.receive_some(100) == b"<joined/><left/>"
        # A client that does not read: the socket fills up, then try_write takes nothing.
        while transport.try_write(b"x" * 65536):
            pass
        assert transport.try_write(b"x") == 0
        await transport.aclose()
        await _drain(client)  # the connection really ended (else fail_after)
    await client.aclose()
    await listeners[0].aclose()


async def test_socket_transport_of_an_accepted_stdlib_socket() -> None:
    # The server's own accept (server/app.py) gives the transport a non-blocking stdlib
    # socket, which the transport owns: it reads, writes and closes it.
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        client = await trio.open_tcp_stream("127.0.0.1", listening.getsockname()[1])
        accepted, _ = listening.accept()
    accepted.setblocking(False)
    transport = SocketTransport(accepted)
    with trio.fail_after(5):
        await client.send_all(b"<protocol>")
        assert (await transport.receive())[0] == b"<protocol>"
        assert transport.try_write(b"<joined/>") == len(b"<joined/>")
        await transport.send_all(b"</protocol>")
        assert await client.receive_some(100) == b"<joined/></protocol>"
        with trio.CancelScope() as scope:
            scope.cancel()
            await transport.aclose()  # closes even when cancelled, and does not raise
        assert not scope.cancelled_caught
        assert accepted.fileno() == -1
        await _drain(client)
    await client.aclose()


async def test_socket_transport_closes_at_once_even_when_cancelled() -> None:
    # A server stop cancels the connections: their close must still happen, and not raise
    # (a connection's clean-up runs it in a `finally`).
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    client = await trio.open_tcp_stream("127.0.0.1", port)
    stream = await listeners[0].accept()
    transport = transport_for(stream)
    with trio.fail_after(5):
        await client.send_all(b"<protocol>")
        assert (await transport.receive())[0] == b"<protocol>"  # the recvmsg view is made
        with trio.CancelScope() as scope:
            scope.cancel()
            await transport.aclose()
        assert not scope.cancelled_caught
        assert stream.socket.fileno() == -1
        await _drain(client)
    await client.aclose()
    await listeners[0].aclose()


async def _drain(stream: trio.abc.ReceiveStream) -> None:
    """Read until the stream ends (or is reset)."""
    with contextlib.suppress(trio.BrokenResourceError):
        while await stream.receive_some(1 << 20):
            pass


async def test_stream_transport_stamps_bytes_when_read(
    autojump_clock: trio.testing.MockClock,
) -> None:
    client, server = trio.testing.memory_stream_pair()
    transport = transport_for(server)
    assert isinstance(transport, StreamTransport)
    await client.send_all(b"<join/>")
    await trio.sleep(2)
    data, arrived = await transport.receive()
    assert (data, arrived) == (b"<join/>", trio.current_time())
    assert transport.try_write(b"<joined/>") == 0  # no direct writes: the writer task sends
    await transport.send_all(b"<joined/>")
    assert await client.receive_some(100) == b"<joined/>"
    await transport.aclose()
    assert await client.receive_some(100) == b""
    await client.aclose()
    with pytest.raises(trio.BrokenResourceError):
        await transport.receive()


async def test_close_right_after_a_wrong_password_still_gets_the_delayed_answers(
    make_harness: HarnessFactory, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    """A client that sends a wrong password, a request and <close/> in one write (as an admin
    tool does) gets both answers, in order, after the failed-login delay; then the close. A
    <close/> is neither a way around the delay nor a way to lose the answers."""
    harness: Harness = await make_harness(password="secret", login_failure_delay=2)
    client = await connect(nursery, harness)
    start = trio.current_time()
    await client.send(Authenticate("wrong"), Observe("r"), CloseRequest())
    refused = await client.expect(ErrorPacket, timeout=10)
    assert "AuthenticationFailedException" in refused.message
    assert trio.current_time() - start >= 2
    assert "requires authentication" in (await client.expect(ErrorPacket)).message
    await client.expect_closed()


class _FailingTransport:
    """A transport whose reading fails with a bug (not a broken connection)."""

    closed = False

    async def receive(self) -> tuple[bytes, float]:
        await trio.lowlevel.checkpoint()
        raise RuntimeError("boom")

    def try_write(self, data: bytes | memoryview) -> int:
        return len(data)

    async def send_all(self, data: bytes) -> None:
        await trio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        self.closed = True
        await trio.lowlevel.checkpoint()


@pytest.mark.parametrize("how", ["bug", "end", "cancelled"])
async def test_run_calls_ended_last_on_every_path(make_harness: HarnessFactory, how: str) -> None:
    # The server's bookkeeping (admission, the connection set) runs once, after the close,
    # however the connection ended; a bug is handed to it inside its handler, not raised.
    harness: Harness = await make_harness()
    client_stream, server_stream = trio.testing.memory_stream_pair()
    transport: Transport = _FailingTransport() if how == "bug" else StreamTransport(server_stream)
    connection = Connection(
        server_stream, harness.lobby, harness.lobby.settings, transport=transport
    )
    calls: list[tuple[Exception | None, object, bool]] = []

    def ended(error: Exception | None) -> None:
        closed = transport.closed if isinstance(transport, _FailingTransport) else True
        calls.append((error, sys.exc_info()[1], closed))

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(connection.run, ended)
            await trio.testing.wait_all_tasks_blocked()
            if how == "end":
                await client_stream.aclose()
            elif how == "cancelled":
                nursery.cancel_scope.cancel()
    assert len(calls) == 1
    error, handled, closed = calls[0]
    assert closed
    if how == "bug":
        assert error is not None and error is handled
        assert "boom" in repr(error)
    else:
        assert error is None
    assert connection not in harness.lobby._members


async def test_run_without_ended_raises_a_bug(make_harness: HarnessFactory) -> None:
    harness: Harness = await make_harness()
    _client, server_stream = trio.testing.memory_stream_pair()
    transport = _FailingTransport()
    connection = Connection(
        server_stream, harness.lobby, harness.lobby.settings, transport=transport
    )
    with (
        trio.fail_after(5),
        pytest.RaisesGroup(pytest.RaisesExc(RuntimeError), flatten_subgroups=True),
    ):
        await connection.run()
    assert transport.closed


async def test_a_cancelled_run_ends_its_writer_in_the_servers_nursery_before_closing(
    make_harness: HarnessFactory,
) -> None:
    # The writer task runs in another nursery than `run`: a run cancelled alone (or failing)
    # still ends its writer before the stream is closed, and the writers' nursery is left
    # with nothing of it.
    harness: Harness = await make_harness()
    client_stream, server_stream = trio.testing.lockstep_stream_pair()  # writes wait for reads
    client = RawClient(client_stream)
    closed_while_writing: list[bool] = []
    with trio.fail_after(5):
        async with trio.open_nursery() as writers:
            connection = Connection(
                server_stream, harness.lobby, harness.lobby.settings, spawn=writers.start_soon
            )
            transport = connection._transport
            real_aclose = transport.aclose

            async def aclose() -> None:
                done = connection._writer_done
                closed_while_writing.append(done is None or not done.is_set())
                await real_aclose()

            transport.aclose = aclose  # type: ignore[method-assign]
            async with trio.open_nursery() as readers:
                readers.start_soon(connection.run)
                await client.send_raw(b"<protocol>\n  <join/>\n")
                await trio.testing.wait_all_tasks_blocked()
                assert connection._writer_started  # blocked: the client reads nothing
                readers.cancel_scope.cancel()
            # writers' nursery closes on its own: the writer ended with the run
    assert closed_while_writing == [False]
    assert connection not in harness.lobby._members


@pytest.mark.parametrize("split", [False, True])
async def test_a_failing_move_handler_costs_only_that_connection(
    make_harness: HarnessFactory,
    nursery: trio.Nursery,
    monkeypatch: pytest.MonkeyPatch,
    split: bool,
) -> None:
    """A bug while handling a move: "Internal server error" echoing the move, then the
    connection ends (UNKNOWN); the same whether the move came whole (the read loop's fast
    path, `Lobby.handle_move`) or in two chunks (the queue, `Lobby.handle`)."""
    harness: Harness = await make_harness()
    client = await connect(nursery, harness)
    opponent = harness.peer("opponent")
    with trio.fail_after(5):
        await client.send(Join())
        room_id = (await client.expect(Joined)).room_id
        harness.send(opponent, Join())
        messages = await client.receive_until(MoveRequest)
        state = next(m for m in reversed(messages) if isinstance(m, Memento)).state
        room = harness.lobby.rooms[room_id]

        def broken(*args: object) -> None:
            raise RuntimeError("a bug")

        monkeypatch.setattr(room, "move", broken)
        fast: list[object] = []
        handle_move = harness.lobby.handle_move

        def counted(*args: object) -> None:
            fast.append(args)
            handle_move(*args)  # type: ignore[arg-type]

        monkeypatch.setattr(harness.lobby, "handle_move", counted)
        packet = MovePacket(room_id, state.legal_moves()[0])
        if split:
            data = b"\n" + packet.to_xml().encode()
            await client.send_raw(data[:20])
            await trio.sleep(0.01)
            await client.send_raw(data[20:])
        else:
            await client.send(packet)
        error = await client.expect(ErrorPacket)
        assert error == ErrorPacket("Internal server error while handling the request", packet)
        await client.expect_closed()
    assert opponent.of(ResultMessage)[0].result.reason == "ONE hat das Spiel verlassen: UNKNOWN"
    assert len(fast) == (0 if split else 1)  # each way was taken


@pytest.mark.parametrize(
    ("costly", "busy", "rationed"),
    [(True, False, True), (False, False, False), (True, True, False)],
)
async def test_the_whole_move_path_rations_a_costly_packet_in_no_room(
    make_harness: HarnessFactory,
    nursery: trio.Nursery,
    monkeypatch: pytest.MonkeyPatch,
    costly: bool,
    busy: bool,
    rationed: bool,
) -> None:
    """A move that came whole (the read loop's fast path, `Lobby.handle_move`) and took longer
    than ANONYMOUS_FREE_SECONDS to handle rations a connection that is in no room after it (a
    player whose last move ended a long game, say), as the packet queue does; a cheap one, or
    one by a connection still busy, does not."""
    # The switch's own threshold (2 ms) is shorter than a preemption on a loaded machine: a
    # cheap packet took "too long" there and the connection was rationed (a flaky failure).
    free_seconds = 0.25
    monkeypatch.setattr("server.connection.ANONYMOUS_FREE_SECONDS", free_seconds)
    harness: Harness = await make_harness()
    client_stream, server_stream = trio.testing.memory_stream_pair()
    connection = served(harness, server_stream, nursery)
    nursery.start_soon(connection.run)
    client = RawClient(client_stream)
    handled: list[str] = []

    def handle_move(peer: object, room_id: str, move: Move, received_at: float) -> None:
        if costly:
            time.sleep(2 * free_seconds)
        handled.append(room_id)

    queued: list[object] = []
    monkeypatch.setattr(harness.lobby, "handle_move", handle_move)
    monkeypatch.setattr(harness.lobby, "handle", lambda peer, packet, at: queued.append(packet))
    monkeypatch.setattr(harness.lobby, "is_busy", lambda peer: busy)
    with trio.fail_after(5):
        # As a bot's client writes it: a first packet (the queue's, a no-op here; the
        # whole-move path starts after it), then the move alone in one chunk.
        writer = ClientConnection()
        await client.send_raw(writer.send(Join()))
        while not queued:
            await trio.sleep(0.001)
        await client.send_raw(writer.send(MovePacket("r", Move(0, 1, Direction.UP))))
        while not handled:
            await trio.sleep(0.001)
    assert queued == [Join()] and handled == ["r"]
    assert connection._rationed is rationed
