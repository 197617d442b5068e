"""What the lobby sends while it handles one packet goes out in one write per connection
(server/batch.py): a move's memento and the next moveRequest reach the opponent together."""

from __future__ import annotations

import math
from dataclasses import replace

import trio
import trio.testing

from protocol import NEED_DATA, ClientConnection, ServerConnection
from protocol.events import Join, MovePacket
from protocol.messages import Memento, MoveRequest
from server.config import Settings
from server.connection import Connection
from server.lobby import Lobby


class WriteRecorder:
    """A transport whose writes always fit, each one recorded; bytes in come from a channel."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.incoming_in, self.incoming = trio.open_memory_channel[bytes](math.inf)

    async def receive(self) -> tuple[bytes, float]:
        try:
            data = await self.incoming.receive()
        except trio.EndOfChannel:
            data = b""
        return data, trio.current_time()

    def try_write(self, data: bytes | memoryview) -> int:
        self.writes.append(bytes(data))
        return len(data)

    async def send_all(self, data: bytes) -> None:
        self.writes.append(data)

    async def aclose(self) -> None:
        pass


async def test_a_move_answer_is_one_write_per_connection(nursery: trio.Nursery) -> None:
    lobby = Lobby(replace(Settings(), password="pw"))
    await nursery.start(lobby.run)
    stream_one, _ = trio.testing.memory_stream_pair()
    stream_two, _ = trio.testing.memory_stream_pair()
    one, two = WriteRecorder(), WriteRecorder()
    for stream, transport in ((stream_one, one), (stream_two, two)):
        connection = Connection(stream, lobby, Settings(), transport=transport)
        nursery.start_soon(connection.run)
    clients = {one: ClientConnection(), two: ClientConnection()}
    for transport in (one, two):  # in turn: the first to join plays ONE
        transport.incoming_in.send_nowait(clients[transport].send(Join()))
        await trio.testing.wait_all_tasks_blocked()
    # ONE got joined, welcome, the start memento and its moveRequest; find the room and state.
    reader = ClientConnection()
    for data in one.writes:
        reader.receive_data(data)
    received = []
    while (event := reader.next_event()) is not NEED_DATA:
        received.append(event)
    memento = next(m for m in received if isinstance(m, Memento))
    assert isinstance(received[-1], MoveRequest)
    before = len(two.writes), len(one.writes)
    move = memento.state.legal_moves()[0]
    one.incoming_in.send_nowait(clients[one].send(MovePacket(memento.room_id, move)))
    await trio.testing.wait_all_tasks_blocked()
    to_two = two.writes[before[0] :]
    to_one = one.writes[before[1] :]
    assert len(to_two) == 1 and len(to_one) == 1
    server = ServerConnection()
    server.send(MoveRequest("x"))  # past the <protocol> opening
    after = memento.state.apply(move)
    expected = server.send(Memento(memento.room_id, after)) + server.send(
        MoveRequest(memento.room_id)
    )
    assert to_two == [expected]  # the same bytes as two messages, in one write
    assert to_one == [server.send(Memento(memento.room_id, after))]
    for transport in (one, two):
        transport.incoming_in.close()  # both leave: the game ends while the lobby runs
    await trio.testing.wait_all_tasks_blocked()
    await lobby.wait_rooms_closed()
    assert not lobby.rooms
